"""ARCHITECTURE.md names only what exists: every path, module and test it quotes.

The page names files so that a search finds them; a rename that forgets the page fails here.
Backquoted text that looks like a path (a `/` or a file suffix) must exist, `path::test_name`
must be a test defined in that file, and a dotted name of the project's packages must be a
module or package.
"""

from __future__ import annotations

import re

import pytest

from tests.unit.repo_paths import ROOT, path_exists

PAGE = ROOT / "ARCHITECTURE.md"
QUOTED = re.compile(r"`([^`\s]+)`")
SUFFIXES = (".py", ".md", ".sql", ".cfg", ".conf", ".toml", ".yml", ".ini")
PACKAGES = ("registry.", "schemas.", "devtools.")


def quoted() -> list[str]:
    """Every backquoted word of the page, once each, in order."""
    return list(dict.fromkeys(QUOTED.findall(PAGE.read_text())))


def paths() -> list[str]:
    """The quoted words that name a file or a folder (wildcards and placeholders aside)."""
    return [
        word
        for word in quoted()
        if ("/" in word or word.endswith(SUFFIXES))
        and "*" not in word
        and "<" not in word
        and not word.startswith(("/", "."))  # a URL path of the API, a bare suffix
        and not word.startswith("text/")
        and not word.startswith("application/")
    ]


def modules() -> list[str]:
    """The quoted dotted names of the project's own modules and packages."""
    return [word for word in quoted() if word.startswith(PACKAGES) and "/" not in word]


def test_the_page_names_paths_and_modules() -> None:
    """The checks below have something to check."""
    assert len(paths()) > 40
    assert any("::" in word for word in paths())
    assert modules()


@pytest.mark.parametrize("word", paths())
def test_every_named_path_exists(word: str) -> None:
    """A file, a folder, or a test function in its file."""
    path, _, test_name = word.partition("::")
    target = ROOT / path
    assert path_exists(path), f"ARCHITECTURE.md names {path}, which does not exist"
    if test_name:
        defined = re.search(rf"^\s*def {re.escape(test_name)}\(", target.read_text(), re.M)
        assert defined, f"ARCHITECTURE.md names {word}, but {path} defines no {test_name}"


@pytest.mark.parametrize("word", modules())
def test_every_named_module_exists(word: str) -> None:
    """registry.loader.beside is registry/loader/beside.py or a package of that name."""
    base = ROOT.joinpath(*word.split("."))
    assert base.with_suffix(".py").exists() or (base / "__init__.py").exists(), word
