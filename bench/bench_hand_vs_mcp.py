"""A Hand tool round trip next to the official MCP Python SDK's stdio client and server.

Both sides call an `echo` tool with the same arguments (`{"text": <PAYLOAD bytes>}`) and get
the same text back, with 1 and with 32 calls in flight:

* **MCP**: the SDK's `stdio_client` and `ClientSession.call_tool` against an SDK server
  (`mcp_echo_server.py`, `MCPServer`) in a process of its own;
* **ToBe**: the call made by the Mind through the remote tool the model would call, executed by
  an SDK Hand in a process of its own over the real HandLink contract, each report committed
  to a SQLite file (WAL, the store's default synchronous) before it is acknowledged
  (`hand_round_trip.py`). The Hand's result answers the offer and frames ready together go as
  one message (`result_accepts` and `batches`, see hand.proto); `--classic` runs a Hand that
  asks for neither, as older Hands: offer, accepted, ack, result, ack, one message each.

The two alternate, each measured `--rounds` times; the best of each is printed with the ratio
ToBe/MCP and the Mind process's CPU per round trip.

Reproduce:

    python bench/bench_hand_vs_mcp.py              # 3 rounds of 3 s per measurement
    python bench/bench_hand_vs_mcp.py --seconds 1 --rounds 2
    python bench/bench_hand_vs_mcp.py --classic    # a Hand that asks for neither
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from hand_round_trip import RoundTrip, hand_round_trip, measure, measure_with_cpu
from mcp import ClientSession, StdioServerParameters, stdio_client

IN_FLIGHT = (1, 32)
PAYLOAD = 64
ARGUMENTS = {"text": "x" * PAYLOAD}
SERVER = str(Path(__file__).with_name("mcp_echo_server.py"))


@asynccontextmanager
async def mcp_round_trip() -> AsyncIterator[RoundTrip]:
    """The SDK's stdio client on an SDK server: yields one echo call."""
    parameters = StdioServerParameters(command=sys.executable, args=[SERVER])
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def round_trip() -> None:
            result = await session.call_tool("echo", ARGUMENTS)
            assert not result.is_error, result

        await measure(round_trip, 1, 0.5)
        yield round_trip


async def main(seconds: float, rounds: int, classic: bool) -> None:
    logging.basicConfig(level=logging.ERROR)
    mcp: dict[int, float] = dict.fromkeys(IN_FLIGHT, 0.0)
    tobe: dict[int, float] = dict.fromkeys(IN_FLIGHT, 0.0)
    cpu: dict[int, float] = dict.fromkeys(IN_FLIGHT, float("inf"))
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'bench.db'}"
        async with (
            mcp_round_trip() as mcp_call,
            hand_round_trip(url, ARGUMENTS, classic=classic) as tobe_call,
        ):
            for _ in range(rounds):
                for n in IN_FLIGHT:
                    mcp[n] = max(mcp[n], await measure(mcp_call, n, seconds))
                    rate, spent = await measure_with_cpu(tobe_call, n, seconds)
                    if rate > tobe[n]:
                        tobe[n], cpu[n] = rate, spent
    print(
        f"{'in flight':>9}  {'MCP calls/s':>11}  {'ToBe calls/s':>12}  {'ToBe/MCP':>8}  "
        f"{'Mind CPU ms/call':>16}"
    )
    for n in IN_FLIGHT:
        print(
            f"{n:>9}  {mcp[n]:>11.0f}  {tobe[n]:>12.0f}  {tobe[n] / mcp[n]:>8.2f}  {cpu[n]:>16.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each side")
    parser.add_argument("--classic", action="store_true", help="a Hand that asks for neither")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.seconds, arguments.rounds, arguments.classic))
