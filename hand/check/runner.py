"""`tobe hand check`: serve the scripted HandLink, hand out a one-time credential, wait for the
Hand under test to dial in, run the scenarios and report."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path

from hand.check.link import ScriptedLink
from hand.check.report import Outcome
from hand.check.scenarios import CONFORMANCE_EFFECTS, SCENARIOS, Scenario
from hand.check.session import Failure, Session
from tobe.runtime.server import ServiceSpec, start_server
from tobe.v1 import hand_pb2, hand_pb2_grpc

# No scenario takes this long against a working Hand; it only keeps a stuck one from hanging.
SCENARIO_LIMIT = 45.0


class CheckAborted(Exception):
    """The check could not run (no Hand came, or it lacks the conformance tools)."""


def write_token(path: Path, token: str) -> None:
    """Write the credential readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")


async def run_check(
    listen: str,
    token_file: Path | None,
    timeout: float,
    only: Sequence[str],
    say: Callable[[str], None],
) -> list[Outcome]:
    """Run the scenarios named in `only` (all when empty) against the Hand that dials in."""
    token = secrets.token_urlsafe(32)
    link = ScriptedLink(token)
    full_name = hand_pb2.DESCRIPTOR.services_by_name["HandLink"].full_name
    server = await start_server(
        [ServiceSpec(full_name, lambda s: hand_pb2_grpc.add_HandLinkServicer_to_server(link, s))],
        [listen],
    )
    try:
        if token_file is not None:
            write_token(token_file, token)
        say(f"HandLink for the check: {server.address(listen)}")
        if token_file is not None:
            say(f"one-time Hand credential written to {token_file}")
        else:
            say(f"one-time Hand credential: {token}")
        say(f"waiting up to {timeout:g} s for the Hand (it needs the conformance tools)")
        try:
            stream = await asyncio.wait_for(link.streams.get(), timeout)
        except TimeoutError:
            refused = "; refused: " + ", ".join(link.refused) if link.refused else ""
            raise CheckAborted(f"no Hand attached within {timeout:g} s{refused}") from None
        declared = {tool.name for tool in stream.hello.tools}
        missing = sorted(set(CONFORMANCE_EFFECTS) - declared)
        if missing:
            raise CheckAborted(
                f"the Hand {stream.hello.name!r} lacks the conformance tools {', '.join(missing)} "
                '(hand.proto, "Conformance (tobe hand check)"); declare them '
                "(Python SDK: hand.add_conformance_tools(hand); the reference Hand: "
                "tobe hand serve --conformance) and run the check again"
            )
        say(f"the Hand {stream.hello.name!r} attached; running the scenarios")
        session = Session(link, stream)
        chosen = [scenario for scenario in SCENARIOS if not only or scenario.name in only]
        return [await _run(session, scenario) for scenario in chosen]
    finally:
        await server.stop(0)


async def _run(session: Session, scenario: Scenario) -> Outcome:
    try:
        await session.live()
        await asyncio.wait_for(scenario.run(session), SCENARIO_LIMIT)
    except Failure as failure:
        return Outcome(scenario.name, False, scenario.quote, str(failure))
    except TimeoutError:
        detail = f"the scenario did not finish within {SCENARIO_LIMIT:g} s"
        return Outcome(scenario.name, False, scenario.quote, detail)
    return Outcome(scenario.name, True, scenario.quote)
