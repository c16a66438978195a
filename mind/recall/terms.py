"""Words, as both backends' full-text indexes see them.

A word is a run of letters and digits (any script), lower-cased; everything else separates
words. The index stores a text's words joined by single spaces (`terms_of`), so SQLite's
`unicode61` tokenizer and PostgreSQL's `simple` configuration split it into the same tokens:
no stemming, no stop words, diacritics kept ("café" is not "cafe").
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def terms_of(text: str) -> str:
    return " ".join(words(text))
