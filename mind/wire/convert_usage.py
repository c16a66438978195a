"""Usage reports (`mind.usage.reports`) as contract messages, for both servicers."""

from __future__ import annotations

from mind.errors import InvalidInput
from mind.usage.reports import Grouping, UsageTotals
from tobe.v1 import common_pb2, management_pb2

GROUPINGS = {
    management_pb2.USAGE_GROUPING_UNSPECIFIED: Grouping.PURPOSE,
    management_pb2.USAGE_GROUPING_PURPOSE: Grouping.PURPOSE,
    management_pb2.USAGE_GROUPING_DAY: Grouping.DAY,
    management_pb2.USAGE_GROUPING_CONVERSATION: Grouping.CONVERSATION,
    management_pb2.USAGE_GROUPING_MODEL: Grouping.MODEL,
}


def grouping_from_proto(value: management_pb2.UsageGrouping.ValueType) -> Grouping:
    try:
        return GROUPINGS[value]
    except KeyError:
        raise InvalidInput(f"unknown usage grouping {value}") from None


def usage_totals_to_proto(totals: UsageTotals) -> common_pb2.UsageTotals:
    return common_pb2.UsageTotals(
        group=totals.group,
        requests=totals.requests,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        cached_tokens=totals.cached_tokens,
        reasoning_tokens=totals.reasoning_tokens,
        cost=totals.cost,
        unpriced_requests=totals.unpriced_requests,
    )
