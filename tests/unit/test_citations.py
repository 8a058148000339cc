"""The repository stands alone: what its code, docs and tests cite is in the repository.

Every tracked text file (repo_paths.tracked_text_files) is read whole. None may cite a document
that lives outside the checkout (the interface's outside specification or product decisions, or
anything in a sibling shared folder), nor a numbered section of one ("contract" or a section sign
with a number): the interface's reference is docs/api.md, and a citation names one of its
sections or another page's. Every project path written in those files exists, and every section
a citation names ("docs/api.md, Errors", or quoted) is a heading of that page.

The patterns are assembled from pieces so that this file does not match them itself.
"""

from __future__ import annotations

import re

from tests.unit.repo_paths import (
    ROOT,
    headings,
    named_paths,
    path_exists,
    tracked_text_files,
)

_WORD = "contr" + "act"
_SIGN = "\u00a7"
# Files outside the repository, by name, and numbered sections of outside documents.
OUTSIDE = (
    re.compile(re.escape(_WORD.upper() + ".md"), re.IGNORECASE),
    re.compile(re.escape("read-api" + ".md"), re.IGNORECASE),
    re.compile(re.escape(".." + "/shared")),
    # "<word> 12", "<word>s 10 and 12", "<word> <sign>7", "<word> section 8", across a line break
    # and the comment marker that may follow it
    re.compile(
        rf"\b{_WORD}s?\b[,:]?\s*(?:(?:#|--)\s*)?(?:{_SIGN}|section\s+)?\s*\d", re.IGNORECASE
    ),
    # a section sign and a number, other than an RFC's
    re.compile(rf"(?<!RFC \d{{4}} ){_SIGN}\s?\d"),
)
PAGE = r"(?P<page>docs/[\w.-]+\.md|README\.md|ARCHITECTURE\.md)"
# `PAGE`, "Heading" / PAGE, Heading (up to the end of the clause) / "Heading" in PAGE
SECTION_AFTER = re.compile(rf'`?{PAGE}`?,\s+(?:"(?P<quoted>[^"\n]+)"|(?P<plain>[A-Z][^;:()"\n]*))')
SECTION_BEFORE = re.compile(rf'"(?P<quoted>[A-Z][^"\n]*)" in `?{PAGE}`?')


def texts() -> list[tuple[str, str]]:
    """Each tracked text file's path and text."""
    return [(name, (ROOT / name).read_text(encoding="utf-8")) for name in tracked_text_files()]


def line_of(text: str, offset: int) -> int:
    """The 1-based line number of an offset."""
    return text.count("\n", 0, offset) + 1


def outside_citations() -> list[str]:
    """Every citation of an outside document, as file:line: text."""
    found = []
    for name, text in texts():
        for pattern in OUTSIDE:
            for match in pattern.finditer(text):
                line = line_of(text, match.start())
                found.append(f"{name}:{line}: {text.splitlines()[line - 1].strip()}")
    return found


def missing_paths() -> list[str]:
    """Every project path a tracked file names that does not exist."""
    return sorted(
        f"{name}: {path}"
        for name, text in texts()
        for path in named_paths(text)
        if not path_exists(path)
    )


def names_a_section(page: str, cited: str, quoted: bool) -> bool:
    """Whether cited names a heading of page: a heading, or its start up to a word's end
    ("Capacity" for "Capacity: slow clients, ..."); unquoted, the clause after the page may go on
    past the heading ("docs/api.md, Errors and Lookups")."""
    cited = cited.strip().rstrip(".,")
    for heading in headings(page):
        if re.match(rf"{re.escape(cited)}(?!\w)", heading):
            return True
        title = heading.split(":")[0]
        if not quoted and re.match(rf"(?:{re.escape(heading)}|{re.escape(title)})(?!\w)", cited):
            return True
    return False


def unknown_sections() -> list[str]:
    """Every section a citation names that is no heading of its page."""
    found = []
    for name, text in texts():
        for pattern in (SECTION_AFTER, SECTION_BEFORE):
            for match in pattern.finditer(text):
                page = match.group("page")
                quoted = match.group("quoted") is not None
                cited = match.group("quoted") if quoted else match.group("plain")
                if path_exists(page) and not names_a_section(page, cited, quoted):
                    line = line_of(text, match.start())
                    found.append(f"{name}:{line}: {page}, {cited.strip()!r}")
    return found


def test_the_checks_have_files_to_read():
    """git lists the repository's text files, this one and docs/api.md among them."""
    names = tracked_text_files()
    assert len(names) > 200
    assert {"tests/unit/test_citations.py", "docs/api.md", "Makefile", ".ci/run"} <= set(names)


def test_nothing_cites_a_document_outside_the_repository():
    """No file names an outside document or cites a numbered section of one."""
    found = outside_citations()
    assert not found, "cite docs/api.md or another page of docs/ instead:\n" + "\n".join(found)


def test_every_path_named_exists():
    """Every project path in a comment, docstring, page or setting is a file or folder here."""
    found = missing_paths()
    assert not found, "named but not in the repository:\n" + "\n".join(found)


def test_every_section_cited_is_a_heading():
    """ "docs/api.md, Errors" and `"Health" in docs/operations.md` name headings of those pages."""
    found = unknown_sections()
    assert not found, "no such heading:\n" + "\n".join(found)
