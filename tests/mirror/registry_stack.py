"""The registry that `registry mirror` copies in these tests, and what the tests know of it
without the mirror: a database loaded through the real loader with the retention settings a
test chooses, gunicorn over it (and the shipped nginx with its /v1 prefix when asked), and
each generation's NDJSON export, fetched afresh and reduced to what a copy must hold.

A generation's digest is computed here from its export, independently of `registry.digest`
(docs/api.md, "Digests"): each record written in its RFC 8785 form by the standard library's
json (keys sorted, no whitespace, UTF-8, only `"`, `\\` and U+0000 to U+001F escaped, in the
same short forms and lowercase `\\u00xx`), hashed with SHA-256, summed modulo 2^256.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from devtools.production_stack import ClientLimits, Gunicorn, Nginx, start_gunicorn, start_nginx
from registry.database.conninfo import with_database
from registry.loader.demo import write_demo_document
from registry.loader.demo_twin import write_twin_document
from registry.loader.loading import LoadOptions, load_document
from registry.mirror.client import retry_after_seconds
from tests.conftest import TEST_SECRET, document, make_token
from tests.e2e.raw_http import Answer, request

TOKEN = make_token()
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
NDJSON = {**ADMIN, "Accept": "application/x-ndjson"}
MODULUS = 1 << 256
# How many 503s one request waits out after recreate_database (each its Retry-After).
SETTLING_TRIES = 30


def jcs(record: Any) -> bytes:
    """A record's RFC 8785 canonical form, by the standard library (not the project's code)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_of(records: Any) -> str:
    """The digest of a set of records: the sum of their SHA-256s, modulo 2^256, in hex."""
    total = sum(int.from_bytes(hashlib.sha256(jcs(record)).digest(), "big") for record in records)
    return f"{total % MODULUS:064x}"


def identity(record: Any) -> bytes:
    """A short stand-in for a parsed record: equal exactly when the parsed JSON is equal."""
    return hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).digest()


@dataclass
class Export:
    """A generation's NDJSON export as the service streamed it, checked whole."""

    generation: int
    digest: str | None  # its Registry-Digest header
    computed: str  # the digest computed here from its records
    lines: dict[str, bytes]  # origin id -> its line
    identities: dict[str, bytes] = field(default_factory=dict)  # origin id -> identity()

    @property
    def total(self) -> int:
        """How many origins it holds."""
        return len(self.lines)


@cache
def demo(origins: int, seed: int) -> bytes:
    """`registry demo --origins N --seed S`."""
    with tempfile.TemporaryFile() as file:
        write_demo_document(file, origins, seed)
        file.seek(0)
        return file.read()


@cache
def twin(origins: int, seed: int, fraction: float) -> bytes:
    """`registry demo --origins N --seed S --changes F`: the demo with F of it changed."""
    with tempfile.TemporaryFile() as file:
        write_twin_document(file, origins, seed, fraction)
        file.seek(0)
        return file.read()


def graph(*origins: list[dict[str, Any]]) -> bytes:
    """A document of these hand-made origins."""
    return document([record for records in origins for record in records])


@dataclass
class Registry:
    """A registry database, gunicorn over it, and nginx in front when asked."""

    conninfo: str
    folder: Path
    keep_generations: int
    keep_changes: int
    gunicorn: Gunicorn
    nginx: Nginx | None = None
    exports: dict[int, Export] = field(default_factory=dict)
    settling: bool = False

    def url(self, through: str = "direct") -> str:
        """What precedes /registry: gunicorn's root, or nginx's /v1."""
        if through == "direct":
            return self.gunicorn.base
        assert self.nginx is not None, "this registry has no nginx"
        return self.nginx.base

    def load(self, payload: bytes) -> int:
        """Load a document as `registry load` does, with this registry's retention; the
        generation it committed."""
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            result = load_document(
                conn,
                io.BytesIO(payload),
                keep_generations=self.keep_generations,
                keep_changes=self.keep_changes,
                options=LoadOptions(allow_empty=True, force=True),
            )
        assert result.generation is not None
        return result.generation

    def get(self, target: str, headers: dict[str, str] | None = None) -> Answer:
        """A GET on gunicorn, as an admin unless headers say otherwise."""
        return self._send(target, ADMIN if headers is None else headers)

    def _send(self, target: str, headers: dict[str, str]) -> Answer:
        """One request; after recreate_database, a 503 with Retry-After is waited out and
        asked again, as a client would (docs/operations.md: a worker whose connection broke
        answers 503 until a new one lands), at most SETTLING_TRIES times."""
        answer = request(self.gunicorn.port, target, headers=headers)
        for _ in range(SETTLING_TRIES if self.settling else 0):
            wait = retry_after_seconds(answer.header("Retry-After"))
            if answer.status != 503 or wait is None:
                break
            time.sleep(wait)
            answer = request(self.gunicorn.port, target, headers=headers)
        return answer

    def current(self) -> int:
        """The newest generation."""
        answer = self.get("/registry/generations")
        assert answer.status == 200, answer.body
        return int(answer.json()["current"])

    def generations(self) -> dict[int, dict[str, Any]]:
        """/registry/generations' entries by generation."""
        answer = self.get("/registry/generations")
        assert answer.status == 200, answer.body
        return {entry["generation"]: entry for entry in answer.json()["generations"]}

    def export(self, generation: int) -> Export:
        """Generation n's NDJSON export (pinned), whole and checked: every line an origin,
        as many as Registry-Total, ids unique, and the service's digest of it in its header
        and in /registry/generations."""
        if generation in self.exports:
            return self.exports[generation]
        answer = self._send(f"/registry/origins?generation={generation}", NDJSON)
        assert answer.status == 200, (generation, answer.status, answer.body[:300])
        assert answer.header("Registry-Generation") == str(generation)
        raw = answer.body.split(b"\n")
        assert raw[-1] == b"", "an NDJSON export ends with a newline"
        lines, identities = {}, {}
        for line in raw[:-1]:
            record = orjson.loads(line)
            lines[record["origin"]["id"]] = line
            identities[record["origin"]["id"]] = identity(record)
        assert len(lines) == len(raw) - 1 == int(answer.header("Registry-Total") or -1)
        computed = digest_of(orjson.loads(line) for line in lines.values())
        exported = Export(generation, answer.header("Registry-Digest"), computed, lines)
        exported.identities = identities
        listed = self.generations().get(generation)
        if listed is not None:
            assert listed.get("digest") == exported.digest, (generation, listed)
        self.exports[generation] = exported
        return exported

    def log_size(self) -> int:
        """Where gunicorn's log ends now: requests logged after it are read by requests()."""
        return self.gunicorn.log_path.stat().st_size

    def requests(self, after: int = 0) -> list[dict[str, Any]]:
        """The request log lines gunicorn wrote after byte `after` of its log, in order."""
        with open(self.gunicorn.log_path, "rb") as log:
            log.seek(after)
            text = log.read()
        found = []
        for line in text.splitlines():
            if line.startswith(b"{") and b'"path"' in line:
                entry = orjson.loads(line)
                if "status" in entry:
                    found.append(entry)
        return found

    def recreate_database(self) -> None:
        """Drop the database the service reads and make it again, empty (its sessions are
        ended; the service's pool connects again to the new one)."""
        name = str(conninfo_to_dict(self.conninfo)["dbname"])
        server = with_database(self.conninfo, "postgres")
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self.exports.clear()
        self.settling = True

    def stop(self) -> None:
        """Stop nginx and gunicorn."""
        if self.nginx is not None:
            self.nginx.stop()
        self.gunicorn.stop()


def start_registry(
    conninfo: str,
    folder: Path,
    keep_generations: int = 2,
    keep_changes: int = 30,
    nginx: bool = False,
    nginx_access_log: bool = False,
    limits: ClientLimits | None = None,
    workers: int = 2,
    settings: dict[str, str] | None = None,
) -> Registry:
    """gunicorn over conninfo (and nginx as shipped, limits included unless given, when
    asked, its access log kept when asked); the loads keep keep_generations graphs and
    keep_changes change sets."""
    server = start_gunicorn(
        {"DATABASE_URL": conninfo, "REGISTRY_JWT_SECRET": TEST_SECRET, **(settings or {})},
        folder / "gunicorn.log",
        workers=workers,
    )
    registry = Registry(conninfo, folder, keep_generations, keep_changes, server)
    if nginx:
        try:
            registry.nginx = start_nginx(
                folder / "nginx", server.port, access_log=nginx_access_log, limits=limits
            )
        except BaseException:
            server.stop()
            raise
    return registry
