"""Every .sql file of the `sql` package, read once at start-up."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable


class Queries:
    """SQL texts by name, `folder/verb_noun`; an unknown name fails loudly."""

    def __init__(self, texts: dict[str, str]):
        self._texts = texts

    def __getitem__(self, name: str) -> str:
        try:
            return self._texts[name]
        except KeyError:
            raise KeyError(f"no SQL file sql/{name}.sql") from None

    def folder(self, folder: str) -> list[tuple[str, str]]:
        """(name, text) of every file in one folder, in file-name order."""
        prefix = folder.rstrip("/") + "/"
        return sorted(
            (name[len(prefix) :], text)
            for name, text in self._texts.items()
            if name.startswith(prefix) and "/" not in name[len(prefix) :]
        )


def _walk(node: Traversable, prefix: str, into: dict[str, str]) -> None:
    """Collect the .sql files below node."""
    for child in node.iterdir():
        if child.is_dir():
            _walk(child, f"{prefix}{child.name}/", into)
        elif child.name.endswith(".sql"):
            into[prefix + child.name[: -len(".sql")]] = child.read_text(encoding="utf-8")


def load_queries() -> Queries:
    """Read the whole `sql` package."""
    texts: dict[str, str] = {}
    _walk(resources.files("sql"), "", texts)
    return Queries(texts)


QUERIES = load_queries()
