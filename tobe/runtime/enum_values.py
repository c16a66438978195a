"""Enum values a message's enum does not define, found before any servicer reads them.

proto3 enums are open: a request parses whatever number its sender put in an enum field, and
code that names the value (`Enum.Name`, a dict of the defined values) then fails on it.
`undefined_enum` walks a message — enum fields, repeated enum fields, map values, nested and
oneof messages — and describes the first value its enum does not define, by field path:

    decision: 99 is not a valid tobe.v1.ApprovalDecision; expected one of
    APPROVAL_DECISION_APPROVE_ONCE, ...

Zero is always defined in proto3 (`*_UNSPECIFIED`), so it passes here; what it means is for
the code that reads the field to decide. Which fields need walking is worked out once per
message type, so a message with no enum anywhere below it costs one lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message


@dataclass(frozen=True)
class _Check:
    """One field of a message type that can hold an undefined enum value, here or below."""

    name: str
    repeated: bool
    is_map: bool
    # The enum the field's values (a map's: its values) take, and its numbers; None for messages.
    enum: EnumDescriptor | None
    defined: frozenset[int]
    # The message type of the field's values otherwise (its plan is looked up when walked, as
    # a type may contain itself).
    below: Descriptor | None
    # Whether a singular message field is set (unset, it holds nothing).
    has_presence: bool


# Where an undefined value was found: the path's segments from the value up (".effect", "[1]",
# ".tools", …), built only on the way back from a finding, and what the value is not.
_Finding = tuple[list[str], str]

_PLANS: dict[Descriptor, tuple[_Check, ...]] = {}
_REACHES_ENUM: dict[Descriptor, bool] = {}


def undefined_enum(message: Message) -> str | None:
    """The first enum value in `message` its enum does not define, described with its field
    path; None when every enum value is defined."""
    finding = _message_finding(message, _descriptor(message))
    if finding is None:
        return None
    segments, problem = finding
    return f"{''.join(reversed(segments)).removeprefix('.')}: {problem}"


def has_enum_field(descriptor: Descriptor) -> bool:
    """Whether a message of this type has an enum field, directly or in any message below."""
    reaches = _REACHES_ENUM.get(descriptor)
    if reaches is None:
        reaches = _REACHES_ENUM[descriptor] = _search_enum(descriptor)
    return reaches


def _search_enum(descriptor: Descriptor) -> bool:
    # Iterative and with a seen set: message types may contain themselves.
    seen = {descriptor}
    stack = [descriptor]
    while stack:
        for field in stack.pop().fields:
            if field.enum_type is not None:
                return True
            below = field.message_type
            if below is not None and below not in seen:
                seen.add(below)
                stack.append(below)
    return False


def _plan(descriptor: Descriptor) -> tuple[_Check, ...]:
    plan = _PLANS.get(descriptor)
    if plan is None:
        plan = _PLANS[descriptor] = tuple(
            check for field in descriptor.fields if (check := _check(field)) is not None
        )
    return plan


def _check(field: FieldDescriptor) -> _Check | None:
    entry = field.message_type
    is_map = entry is not None and entry.GetOptions().map_entry
    # A map's entries are messages of their own; the check is on their values.
    values = entry.fields_by_name["value"] if entry is not None and is_map else field
    below = values.message_type
    if values.enum_type is None and (below is None or not has_enum_field(below)):
        return None
    return _Check(
        name=field.name,
        repeated=field.is_repeated,
        is_map=is_map,
        enum=values.enum_type,
        defined=frozenset(values.enum_type.values_by_number) if values.enum_type else frozenset(),
        below=below,
        has_presence=field.has_presence and not field.is_repeated,
    )


def _message_finding(message: Message, descriptor: Descriptor) -> _Finding | None:
    finding: _Finding | None
    for check in _plan(descriptor):
        value = getattr(message, check.name)
        if check.repeated:
            finding = _items_finding(check, value)
        elif check.enum is not None:
            if value in check.defined:
                continue
            finding = [], _undefined(check.enum, value)
        elif check.has_presence and not message.HasField(check.name):
            continue
        else:
            assert check.below is not None
            finding = _message_finding(value, check.below)
        if finding is not None:
            finding[0].append(f".{check.name}")
            return finding
    return None


def _items_finding(check: _Check, container: Any) -> _Finding | None:
    """A repeated field's items (a map's values), each named by its index (key)."""
    finding: _Finding | None
    items = container.items() if check.is_map else enumerate(container)
    for key, value in items:
        if check.enum is not None:
            if value in check.defined:
                continue
            finding = [], _undefined(check.enum, value)
        else:
            assert check.below is not None
            finding = _message_finding(value, check.below)
        if finding is not None:
            finding[0].append(f"[{key!r}]")
            return finding
    return None


def _descriptor(message: Message) -> Descriptor:
    # The stubs type a message's DESCRIPTOR as the pure-Python or the upb class; both are one.
    return cast(Descriptor, message.DESCRIPTOR)


def _undefined(enum: EnumDescriptor, value: int) -> str:
    choices = ", ".join(
        v.name for v in enum.values if not (v.number == 0 and v.name.endswith("_UNSPECIFIED"))
    )
    return f"{value} is not a valid {enum.full_name}; expected one of {choices}"
