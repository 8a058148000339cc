"""The comments of sql/ name only what exists: a file or folder of the project by its path, a
module by its dotted name, or a name a module defines (registry.api.origin_csv, matching_combos
as registry.database.repository.matching_combos)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.repo_paths import PATH, ROOT, path_exists

DOTTED = re.compile(r"(?<![/\w.])((?:registry|schemas|devtools)(?:\.[A-Za-z_]\w*)+)")


def named(pattern: re.Pattern[str]) -> list[str]:
    """Every match of pattern in the .sql files, once each."""
    found = {
        word for file in (ROOT / "sql").rglob("*.sql") for word in pattern.findall(file.read_text())
    }
    return sorted(found)


def test_the_comments_name_paths_and_modules() -> None:
    """The checks below have something to check."""
    assert len(named(PATH)) > 3 and named(DOTTED)


@pytest.mark.parametrize("word", named(PATH))
def test_every_named_path_exists(word: str) -> None:
    """registry/database/repository.py is a file of the project."""
    assert path_exists(word), f"a comment in sql/ names {word}, which does not exist"


def defines(module: Path, name: str) -> bool:
    """Whether the module defines name at its top level (a function, class or assignment)."""
    pattern = rf"^(?:(?:async\s+)?def\s+|class\s+){re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
    return re.search(pattern, module.read_text(), re.M) is not None


@pytest.mark.parametrize("word", named(DOTTED))
def test_every_dotted_name_resolves(word: str) -> None:
    """A module or package, or one name defined in a module."""
    parts = word.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        module = (
            base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
        )
        if module.exists():
            rest = parts[cut:]
            assert len(rest) <= 1 and (not rest or defines(module, rest[0])), (
                f"a comment in sql/ names {word}: {'.'.join(parts[:cut])} has no {'.'.join(rest)}"
            )
            return
    raise AssertionError(f"a comment in sql/ names {word}, which is no module")
