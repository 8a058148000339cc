"""What the repository's own text may name: its tracked files, the paths written in them, and the
sections of its pages. One mechanism for the tests that keep names true (test_citations.py,
test_architecture_paths.py, test_sql_comments.py)."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = r"(?:registry|schemas|devtools|sql|docs|tests|deploy)"
# A path of the project, not an API path such as /registry/changes nor part of a URL; `*` is a
# wildcard (sql/origins/export_*.sql names every file it matches).
PATH = re.compile(rf"(?<![/\w.*-]){TOP}/[\w/.*-]*[\w*]")
# The kinds of tracked file that carry prose: comments, docstrings, pages, configuration.
SUFFIXES = (".py", ".md", ".sql", ".cfg", ".toml", ".yml", ".yaml", ".conf", ".service", ".ini")
SUFFIXES += (".example", ".txt", ".sh", ".json")
NAMES = ("Makefile", ".ci/run")


@cache
def tracked_text_files() -> tuple[str, ...]:
    """Every tracked file of those kinds, by its path from the root (git ls-files)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    return tuple(
        name for name in listed if name and (name.endswith(SUFFIXES) or name.endswith(NAMES))
    )


def path_exists(word: str) -> bool:
    """A file or folder of the checkout, or a wildcard that matches at least one."""
    word = word.rstrip(".")
    if "*" in word:
        return any(ROOT.glob(word))
    return (ROOT / word).exists()


def named_paths(text: str) -> set[str]:
    """Every project path written in text, plain or backquoted."""
    return set(PATH.findall(text))


@cache
def headings(page: str) -> tuple[str, ...]:
    """The section headings of a Markdown page of the repository, without their #s."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found = (re.match(r"#{1,6} +(.*?)\s*#*$", line) for line in lines)
    return tuple(match.group(1).replace("`", "") for match in found if match)
