"""The result table of `tobe hand check`: one line per scenario, then for each failure what
the contract says and what the Hand did."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    name: str
    passed: bool
    quote: tuple[str, ...]
    # What the Hand did, for a failure.
    detail: str = ""


def render(outcomes: list[Outcome]) -> str:
    width = max(len(outcome.name) for outcome in outcomes)
    lines = [f"{'scenario'.ljust(width)}  result", f"{'-' * width}  ------"]
    lines += [
        f"{outcome.name.ljust(width)}  {'pass' if outcome.passed else 'FAIL'}"
        for outcome in outcomes
    ]
    for outcome in outcomes:
        if not outcome.passed:
            lines += [
                "",
                f"FAIL {outcome.name}",
                f"  hand.proto says: {' … '.join(outcome.quote)}",
                f"  the Hand: {outcome.detail}",
            ]
    failed = sum(not outcome.passed for outcome in outcomes)
    lines += ["", f"{len(outcomes) - failed} passed, {failed} failed"]
    return "\n".join(lines)
