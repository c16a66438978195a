"""`tobe usage`: token usage of the Mind's model requests, and what it cost.

Answered by the running Mind over its owner-only socket (which first writes the usage rows it
still buffers) or, with the Mind stopped, from the store under the state lock, like
`tobe admin`.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from management.cli_support import AdminOptions, call, printer
from tobe.runtime.timestamps import to_timestamp
from tobe.v1 import common_pb2
from tobe.v1 import management_pb2 as pb

GROUPINGS = {
    "purpose": pb.USAGE_GROUPING_PURPOSE,
    "day": pb.USAGE_GROUPING_DAY,
    "conversation": pb.USAGE_GROUPING_CONVERSATION,
    "model": pb.USAGE_GROUPING_MODEL,
}
UNPRICED_NOTE = (
    "* some requests used a model with no known price: their tokens are counted, not priced "
    "(give it input_price and output_price in [[provider.models]])"
)


def parse_since(text: str) -> datetime:
    """A UTC day (2026-12-01) or an ISO 8601 time (2026-12-01T09:30, UTC unless it says)."""
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.ClickException(
            f"--since {text!r} is neither a date (2026-12-01) nor an ISO time "
            "(2026-12-01T09:30, 2026-12-01T09:30+02:00)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def totals(message: common_pb2.UsageTotals) -> dict[str, Any]:
    return {
        "group": message.group,
        "requests": message.requests,
        "input_tokens": message.input_tokens,
        "output_tokens": message.output_tokens,
        "cached_tokens": message.cached_tokens,
        "reasoning_tokens": message.reasoning_tokens,
        "cost": round(message.cost, 8),
        "unpriced_requests": message.unpriced_requests,
    }


def cost_text(item: dict[str, Any], currency: str) -> str:
    if item["requests"] and item["unpriced_requests"] == item["requests"]:
        return "-*"
    mark = "*" if item["unpriced_requests"] else ""
    return f"{item['cost']:.4f} {currency}{mark}"


def _table(by: str, report: dict[str, Any]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in (by.upper(), "REQUESTS", "INPUT", "CACHED", "OUTPUT", "REASONING", "COST"):
        table.add_column(column, justify="left" if column == by.upper() else "right")
    currency = report["currency"]
    for item in [*report["groups"], {**report["total"], "group": "total"}]:
        cells = [
            item["group"] or "(none)",
            *(
                f"{item[name]:,}"
                for name in (
                    "requests",
                    "input_tokens",
                    "cached_tokens",
                    "output_tokens",
                    "reasoning_tokens",
                )
            ),
            cost_text(item, currency),
        ]
        table.add_row(*(Text(cell) for cell in cells))
    return table


@click.command()
@click.option(
    "--by",
    default="purpose",
    show_default=True,
    help="Group by day (UTC), conversation, model or purpose (turn, compaction, the decision "
    "layer's extract/evaluate/plan, review).",
)
@click.option("--since", help="Only requests from this UTC day (2026-12-01) or ISO time on.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The data directory (default: TOBE_DATA_DIR or the XDG data directory).",
)
@click.option(
    "--wait",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    help="Seconds to wait for a Mind that is starting before giving up.",
)
@click.pass_context
def usage(
    ctx: click.Context,
    by: str,
    since: str | None,
    as_json: bool,
    data_dir: Path | None,
    wait: float,
) -> None:
    """Token usage of every model request, with the estimated cost from the catalog's prices.

    Input counts whole prompts (cached parts included), output everything generated
    (reasoning included). A row marked * includes requests of a model with no known price.
    """
    if by not in GROUPINGS:
        raise click.ClickException(f"--by {by!r}: choose one of {', '.join(GROUPINGS)}")
    moment = parse_since(since) if since else None
    options = ctx.ensure_object(AdminOptions)
    options.as_json, options.data_dir, options.wait = as_json, data_dir, wait
    response = call(
        "GetUsage",
        pb.GetUsageRequest(by=GROUPINGS[by], since=to_timestamp(moment) if moment else None),
    )
    report = {
        "by": by,
        "since": moment.isoformat() if moment else None,
        "currency": response.currency,
        "groups": [totals(group) for group in response.groups],
        "total": totals(response.total),
    }
    out = printer()
    if as_json:
        out.json(report)
        return
    if not report["groups"]:
        out.console.print("No model requests recorded" + (f" since {since}." if since else "."))
        return
    out.console.print(_table(by, report))
    if report["total"]["unpriced_requests"]:
        out.console.print(Text(UNPRICED_NOTE))
