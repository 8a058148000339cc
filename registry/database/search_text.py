"""Case folding for `search`, shared by the loader (names) and the API (the search term)."""

from __future__ import annotations

import unicodedata


def fold_for_search(text: str) -> str:
    """Unicode caseless form: the same in every script and whatever the database's locale.

    NFD before casefold and NFC after it is Unicode's canonical caseless match, so that
    `tÉlÉ`, `TÉLÉ` and `télé` (composed or not) all become the same string.
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())
