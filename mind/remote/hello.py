"""A Hand's hello, checked: its name under the credential's grants, its instance id, the tasks
it says it holds, and its tool set (also what a `tools_changed` frame declares). Each refusal
names the field at fault; the HandLink servicer ends the stream with its status."""

from __future__ import annotations

import json

from mind.credentials import Identity
from mind.errors import InvalidInput, NotAllowed
from mind.remote.hub import HAND_NAME, TOOL_NAME, granted_names
from mind.remote.model import HeldState, HeldTask, ToolDecl
from mind.tools.base import Effect
from tobe.runtime.decision_template import TemplateError, check_template
from tobe.v1 import common_pb2, hand_pb2

MAX_INSTANCE_ID = 64

_EFFECTS = {
    common_pb2.EFFECT_CLASS_READ_ONLY: Effect.READ_ONLY,
    common_pb2.EFFECT_CLASS_WORKSPACE_WRITE: Effect.WORKSPACE_WRITE,
    common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT: Effect.EXTERNAL_SIDE_EFFECT,
}


class HelloError(InvalidInput):
    """The hello frame is missing or malformed; the message names the field."""


class InvalidTools(InvalidInput):
    """A tool set (the hello's or a `tools_changed`) is invalid; the message names the field."""


class NameNotGranted(NotAllowed):
    """The credential may not attach under the Hand name it asked for."""


def parse_tools(specs: list[hand_pb2.ToolSpec], field: str = "hello.tools") -> dict[str, ToolDecl]:
    """A Hand's tool set by name; `field` is where the specs sit in the frame (the hello or a
    `tools_changed`), for the error naming the bad one. Raises InvalidTools."""
    tools: dict[str, ToolDecl] = {}
    for index, spec in enumerate(specs):
        where = f"{field}[{index}]"
        if not TOOL_NAME.match(spec.name):
            raise InvalidTools(f"{where}.name {spec.name!r} must match {TOOL_NAME.pattern}")
        if spec.name in tools:
            raise InvalidTools(f"{where}.name {spec.name!r} is declared twice")
        try:
            schema = json.loads(spec.parameters_json_schema or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidTools(f"{where}.parameters_json_schema is not JSON: {exc}") from None
        if not isinstance(schema, dict):
            raise InvalidTools(f"{where}.parameters_json_schema must be a JSON object")
        properties = schema.get("properties")
        try:
            check_template(
                spec.decision_template, set(properties) if isinstance(properties, dict) else set()
            )
        except TemplateError as exc:
            raise InvalidTools(f"{where}.decision_template: {exc}") from None
        tools[spec.name] = ToolDecl(
            name=spec.name,
            description=spec.description,
            parameters=schema,
            effect=_EFFECTS.get(spec.effect, Effect.UNKNOWN),
            # A sensitive call's result must reach its own turn, which seals it: a background
            # result would arrive after the turn ended, as a note of its own.
            background=spec.background and not spec.sensitive,
            decision_template=spec.decision_template,
            sensitive=spec.sensitive,
            dataset=spec.dataset,
        )
    return tools


def hand_name(hello: hand_pb2.HandHello, identity: Identity) -> str:
    name = hello.name or identity.principal
    if not HAND_NAME.match(name):
        field = "hello.name" if hello.name else "hello.name (defaulted to the principal)"
        raise HelloError(f"{field} {name!r} must match {HAND_NAME.pattern}")
    if name not in granted_names(identity.principal, identity.scopes):
        raise NameNotGranted(
            f"hello.name {name!r} is not granted to this credential: a Hand attaches under its "
            f"credential's principal ({identity.principal!r}) or a name given by a "
            f"'hand:<name>' scope (e.g. 'hand:{name}')"
        )
    return name


def instance_id(hello: hand_pb2.HandHello) -> str:
    if len(hello.instance_id) > MAX_INSTANCE_ID:
        raise HelloError(f"hello.instance_id must be at most {MAX_INSTANCE_ID} characters")
    return hello.instance_id


def held_tasks(hello: hand_pb2.HandHello) -> list[HeldTask]:
    return [
        HeldTask(
            task_id=item.task_id,
            attempt=item.attempt,
            state=HeldState.FINISHED
            if item.state == hand_pb2.HELD_TASK_STATE_FINISHED
            else HeldState.RUNNING,
        )
        for item in hello.held_tasks
    ]
