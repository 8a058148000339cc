"""GET /docs in a real headless browser (Debian's chromium through its chromedriver), served by
gunicorn directly and through deploy/nginx.conf at /v1/docs: the page loads with no console
error and no request leaving loopback, lists the endpoints, authorizes with a token minted by
`registry token`, runs a listing through "Try it out" (200 with two origins), and without the
token shows the 401 body. The token never reaches a URL, a log line or the browser's storage.
A screenshot of the page after the call is left in the test's temporary folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from devtools.production_stack import Gunicorn, Nginx, nginx_binary, start_gunicorn, start_nginx
from tests.conftest import TEST_SECRET
from tests.tools import require_tool

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# The endpoints an operator comes for; the page lists the probes and the document too.
ENDPOINTS = [
    "/summary",
    "/registry/summary",
    "/registry/origins",
    "/registry/origins/{originId}",
    "/registry/addresses/{address}",
    "/registry/origins/{originId}/history",
]
WAIT_S = 30
LOCAL_SCHEMES = frozenset(("data", "blob", "about", "chrome"))
# The bearerAuth form of the Authorize dialog (the cookie scheme has one of its own).
BEARER_FORM = "//div[contains(@class, 'auth-container')][.//h4[contains(., 'bearerAuth')]]"


def require_browser() -> None:
    """Fail in CI when the browser is missing (.ci/run installs it); skip, loudly, elsewhere."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if not missing:
        return
    require_tool(None, ", ".join(missing), "chromium chromium-driver")


@dataclass
class Deployment:
    """Where the page is, and the servers whose logs must not hold the token."""

    base: str
    gunicorn: Gunicorn
    nginx: Nginx | None

    def logs(self) -> str:
        """Everything gunicorn and nginx wrote."""
        text = self.gunicorn.output()
        if self.nginx is not None:
            text += (self.nginx.prefix / "access.log").read_text(errors="replace")
            text += self.nginx.error_output()
        return text


@pytest.fixture(scope="module")
def servers(example_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """gunicorn over the worked example, with nginx (deploy/nginx.conf) in front when present."""
    folder = tmp_path_factory.mktemp("docs-servers")
    server = start_gunicorn(
        {"DATABASE_URL": example_db, "REGISTRY_JWT_SECRET": TEST_SECRET},
        folder / "gunicorn.log",
        workers=2,
    )
    proxy = None
    try:
        if nginx_binary() is not None:
            proxy = start_nginx(folder / "nginx", server.port, access_log=True)
        yield Deployment(server.base, server, proxy)
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()


@pytest.fixture(params=["direct", "nginx"])
def deployment(request: pytest.FixtureRequest, servers: Deployment) -> Deployment:
    """The page from gunicorn itself, and from nginx under /v1."""
    if request.param == "direct":
        return servers
    if servers.nginx is None:
        require_tool(None, "nginx", "nginx")
    return Deployment(servers.nginx.base, servers.gunicorn, servers.nginx)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless chromium driven by Debian's chromedriver; Selenium Manager is never asked."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1600",
        # No traffic of the browser's own (updates, sync, safe browsing) besides the page's.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def mint_token() -> str:
    """An admin token from `registry token`, as an operator makes one."""
    command = shutil.which("registry", path=os.path.dirname(sys.executable))
    assert command, "the registry command is installed with the package"
    env = {**os.environ, "REGISTRY_JWT_SECRET": TEST_SECRET}
    result = subprocess.run(
        [command, "token", "--roles", "domain_admin", "--ttl", "10m"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def network_requests(driver: Any) -> list[dict[str, Any]]:
    """Every request the page sent since the last call (DevTools Network events)."""
    sent = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            sent.append(message["params"]["request"])
    return sent


def stays_on_loopback(url: str, loopback: str) -> bool:
    """True for the service's own address, and for URLs that fetch nothing from a network
    (data:, and the browser's own chrome: resources, such as its new-tab page's icons)."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme == "http" and parts.netloc == loopback


def console_errors(driver: Any) -> list[str]:
    """The console's errors since the last call (CSP violations among them)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


class DocsPage:
    """The Swagger UI page, by the elements a person clicks."""

    def __init__(self, driver: Any):
        """Wrap a driver showing the page."""
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.wait = WebDriverWait(driver, WAIT_S)

    def find(self, css: str) -> Any:
        """The first element matching css, once it is there."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as ec

        return self.wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))

    def click(self, css: str = "", xpath: str = "") -> None:
        """Click the element matching css (or xpath), once it is clickable."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as ec

        locator = (By.XPATH, xpath) if xpath else (By.CSS_SELECTOR, css)
        element = self.wait.until(ec.element_to_be_clickable(locator))
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()

    def fill(self, css: str, text: str) -> None:
        """Replace the text of an input as a person does: select all, then type."""
        from selenium.webdriver.common.keys import Keys

        field = self.find(css)
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.BACKSPACE)
        if text:
            field.send_keys(text)

    def paths(self) -> list[str]:
        """The paths of the operations listed."""
        from selenium.webdriver.common.by import By

        self.find(".opblock")
        return [
            element.get_attribute("data-path")
            for element in self.driver.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
        ]

    def authorize(self, token: str) -> None:
        """Authorize: the bearer token into the bearerAuth form, then close the dialog."""
        self.click("button.authorize")
        self.find(".auth-container input[aria-label='auth-bearer-value']").send_keys(token)
        self.click(xpath=f"{BEARER_FORM}//button[normalize-space()='Authorize']")
        self.click("button.btn-done")

    def log_out(self) -> None:
        """Authorize again, and log the bearer token out."""
        self.click("button.authorize")
        self.click(xpath=f"{BEARER_FORM}//button[normalize-space()='Logout']")
        self.click("button.btn-done")

    def try_listing(self, limit: str) -> tuple[str, str, str]:
        """Try it out on the listing with a limit: (request URL, status, response body)."""
        from selenium.webdriver.common.by import By

        operation = "#operations-registry-listOrigins"
        if not self.driver.find_elements(By.CSS_SELECTOR, f"{operation} .try-out"):
            self.click(f"{operation} .opblock-summary-control")
        if self.driver.find_elements(By.CSS_SELECTOR, f"{operation} .try-out__btn.cancel"):
            self.click(f"{operation} .try-out__btn.cancel")
        self.click(f"{operation} .try-out__btn")
        # Only the limit: the page field starts with its default, which a person would erase.
        self.fill(f"{operation} tr[data-param-name='page'] input", "")
        self.fill(f"{operation} tr[data-param-name='limit'] input", limit)
        self.click(f"{operation} button.execute")
        status = self.find(f"{operation} .live-responses-table .response .response-col_status")
        url = self.find(f"{operation} .request-url pre").text
        body = self.find(f"{operation} .live-responses-table .response-col_description pre")
        return url, status.text.strip(), body.text


def test_docs_page_tries_the_listing_with_and_without_a_token(
    deployment: Deployment, browser: Any, tmp_path: Path
):
    """Load, list, authorize, 200 with two origins, screenshot; then the 401 without a token."""
    token = mint_token()
    loopback = urlsplit(deployment.base).netloc
    network_requests(browser)  # the browser's own start (its new-tab page), not the page's
    console_errors(browser)
    browser.get(deployment.base + "/docs")
    page = DocsPage(browser)

    paths = page.paths()
    assert set(ENDPOINTS) <= set(paths), paths
    assert browser.title.startswith("Broadcast Registry Read API")

    page.authorize(token)
    url, status, body = page.try_listing("2")
    assert url == f"{deployment.base}/registry/origins?limit=2"
    assert status == "200", body
    listing = json.loads(body)
    assert listing["success"] is True
    assert len(listing["origins"]) == 2
    assert listing["page"]["limit"] == 2

    screenshot = tmp_path / "docs-after-try-it-out.png"
    # The request URL, the status and the body in view.
    browser.execute_script(
        "document.querySelector('#operations-registry-listOrigins .request-url')"
        ".scrollIntoView({block: 'start'})"
    )
    assert browser.save_screenshot(str(screenshot))
    print(f"screenshot: {screenshot}")

    # The token stays in the page's memory: not in its storage, nor in a cookie.
    stored = browser.execute_script(
        "return JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage),"
        " document.cookie])"
    )
    assert token not in stored
    assert "eyJ" not in stored

    assert console_errors(browser) == []
    sent = network_requests(browser)
    assert sent, "the DevTools log saw the page's requests"
    for request in sent:
        assert stays_on_loopback(request["url"], loopback), request["url"]
        assert token not in request["url"]
    listings = [r for r in sent if "/registry/origins?limit=2" in r["url"]]
    assert [r["headers"].get("Authorization") for r in listings] == [f"Bearer {token}"]

    page.log_out()
    url, status, body = page.try_listing("2")
    assert url == f"{deployment.base}/registry/origins?limit=2"
    assert status == "401", body
    assert json.loads(body) == {"error": "Unauthorized"}
    # The browser reports the 401 it was shown; nothing else went wrong.
    assert all("401" in message for message in console_errors(browser))
    for request in network_requests(browser):
        assert stays_on_loopback(request["url"], loopback), request["url"]
        assert "Authorization" not in request["headers"]

    assert token not in deployment.logs()
    assert token.split(".")[1] not in deployment.logs()
