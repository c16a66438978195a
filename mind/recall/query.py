"""The query language of recall, and its safe translation to each backend's full-text syntax.

What a person or the model types:

* words are ANDed: `heron trail` finds texts with both words, in any order;
* `"a quoted phrase"` finds those words next to each other, in that order;
* `word*` finds words starting with `word` (a phrase's last word may end in `*` too);
* `OR` (in capitals) between two parts finds texts with either side (AND binds tighter);
  `AND` (in capitals) says what is meant anyway and is left out.

Anything else is no syntax: stray quotes, colons, parentheses, `-`, `^` separate words like
any punctuation, and `NEAR` or `NOT` are words. The text is parsed here into words of letters
and digits only (`mind.recall.terms`), and the backend query is built from them, so no
character the person typed reaches FTS5's `MATCH` or PostgreSQL's `to_tsquery` as an operator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mind.errors import InvalidInput
from mind.recall.terms import words

MAX_QUERY = 200
_PART = re.compile(r'"([^"]*)("?)(\*?)|(\S+)')
_OR, _AND = "OR", "AND"


@dataclass(frozen=True)
class Phrase:
    """Words next to each other, the last one a prefix when `prefix`."""

    words: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True)
class Query:
    """Alternatives (ORed), each a conjunction of phrases (ANDed)."""

    alternatives: tuple[tuple[Phrase, ...], ...]

    @property
    def words(self) -> list[str]:
        return [word for group in self.alternatives for phrase in group for word in phrase.words]


def checked_text(text: str) -> str:
    """The query trimmed; InvalidInput when that is empty or longer than `MAX_QUERY`."""
    trimmed = text.strip()
    if not trimmed:
        raise InvalidInput("query is empty: give the words to search for")
    if len(trimmed) > MAX_QUERY:
        raise InvalidInput(f"query is {len(trimmed)} characters; the maximum is {MAX_QUERY}")
    return trimmed


def parse(text: str) -> Query:
    """The query `text` means; InvalidInput when it has no word to search for."""
    alternatives: list[tuple[Phrase, ...]] = []
    group: list[Phrase] = []
    for match in _PART.finditer(checked_text(text)):
        quoted, _closed, star, bare = match.groups()
        if bare == _OR:
            if group:
                alternatives.append(tuple(group))
            group = []
            continue
        if bare == _AND:
            continue
        if bare is not None:
            # An unquoted chunk such as `e-mail` or `a:b` is its words, each on its own.
            found = words(bare)
            group.extend(Phrase((word,)) for word in found[:-1])
            if found:
                group.append(Phrase((found[-1],), prefix=bare.endswith("*")))
        elif found := words(quoted):
            group.append(Phrase(tuple(found), prefix=bool(star)))
    if group:
        alternatives.append(tuple(group))
    if not alternatives:
        raise InvalidInput("query has no word to search for: give letters or digits")
    return Query(tuple(alternatives))


def fts5(query: Query) -> str:
    """The FTS5 MATCH expression: each word double-quoted (a string, never an operator)."""

    def phrase(p: Phrase) -> str:
        return f'"{" ".join(p.words)}"' + ("*" if p.prefix else "")

    return " OR ".join(
        "(" + " AND ".join(phrase(p) for p in group) + ")" for group in query.alternatives
    )


def tsquery(query: Query) -> str:
    """The `to_tsquery('simple', …)` text: each word single-quoted, phrases joined by `<->`."""

    def phrase(p: Phrase) -> str:
        quoted = [f"'{word}'" for word in p.words]
        if p.prefix:
            quoted[-1] += ":*"
        return "(" + " <-> ".join(quoted) + ")"

    return " | ".join(
        "(" + " & ".join(phrase(p) for p in group) + ")" for group in query.alternatives
    )
