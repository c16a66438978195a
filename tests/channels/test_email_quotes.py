"""The new text of a mail: quotes, their attributions and signatures left out."""

from __future__ import annotations

import pytest

from face.channels.email.quotes import new_text

CASES = {
    "plain text stays": ("Noon works.\nSee you.", "Noon works.\nSee you."),
    "a top-posted reply loses the quote and its attribution": (
        "Noon works.\n\nOn Tue, 2 Dec 2025 at 10:00, Agent <agent@example.org> wrote:\n"
        "> Shall we meet?\n> At noon?\n",
        "Noon works.",
    ),
    "an attribution wrapped over two lines goes too": (
        "Yes.\n\nOn Tue, 2 Dec 2025 at 10:00, Agent <\nagent@example.org> wrote:\n\n> Noon?\n",
        "Yes.",
    ),
    "a German attribution goes too": (
        "Ja.\n\nAm 02.12.2025 um 10:00 schrieb Agent <agent@example.org>:\n> Mittag?\n",
        "Ja.",
    ),
    "answers between quoted lines stay": (
        "On Tue, Agent wrote:\n> First question?\nFirst answer.\n\n> Second question?\n"
        "Second answer.\n",
        "First answer.\n\nSecond answer.",
    ),
    "the signature goes": ("Noon works.\n\n-- \nBob\n+1 555 0100\n", "Noon works."),
    "a signature whose space was trimmed goes": ("Noon works.\n--\nBob\n", "Noon works."),
    "the signature and the quote after it go": (
        "Noon.\n-- \nBob\n\nOn Tue, Agent wrote:\n> Noon?\n",
        "Noon.",
    ),
    "a quoted signature is only quoted text": ("Fine.\n\n> Noon?\n> -- \n> Agent\n", "Fine."),
    "an Outlook original message goes": (
        "Noon works.\n\n-----Original Message-----\nFrom: Agent\nSubject: Lunch\n\nNoon?\n",
        "Noon works.",
    ),
    "a sentence ending in wrote: without a quote after it stays": (
        "On Monday she wrote:\nthe plan is fine.",
        "On Monday she wrote:\nthe plan is fine.",
    ),
    "CRLF line ends are read as lines": ("Yes.\r\n\r\n> Noon?\r\n", "Yes."),
    "runs of blank lines become one": ("One.\n\n\n\n> q\n\n\nTwo.", "One.\n\nTwo."),
    "only a quote leaves nothing": ("> Noon?\n", ""),
    "indented quote markers count as quotes": ("Yes.\n  > Noon?\n", "Yes."),
}


@pytest.mark.parametrize(("body", "expected"), list(CASES.values()), ids=list(CASES))
def test_new_text_keeps_only_what_the_person_wrote(body: str, expected: str) -> None:
    assert new_text(body) == expected
