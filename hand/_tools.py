"""Hand tools: typed Python functions (JSON Schema from the signature, pydantic validation, one
JSON text result), and tools declared by a JSON Schema of their own (`SchemaTool`: validated
with jsonschema, run by a coroutine given the raw arguments), e.g. tools a Hand relays. Either
may answer with images besides its text (`ToolOutput`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, get_type_hints

import pydantic
import pydantic_core

from tobe.runtime.decision_template import TemplateError, check_template

TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,46}$")


class Effect(StrEnum):
    """What a tool may do to the world; the Mind's approval policy depends on it."""

    READ_ONLY = "read_only"
    WORKSPACE_WRITE = "workspace_write"
    EXTERNAL_SIDE_EFFECT = "external_side_effect"


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns when it has images to give with its text (a screenshot, a chart):
    `images` are `(media_type, bytes)` pairs, PNG, JPEG, WebP or GIF. The Mind checks them by
    their bytes against its limits (`mind.max_images`, `mind.max_image_bytes`); a result it
    refuses for its images is sent again without them, its text saying why."""

    text: str
    images: Sequence[tuple[str, bytes]] = ()


class ToolError(Exception):
    """Raise from a tool to fail the call with this message as the error the model sees."""


class InvalidArguments(ToolError):
    """The arguments do not match the tool's signature."""


def _description(function: Callable[..., Any]) -> str:
    doc = inspect.getdoc(function) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def _arguments_model(function: Callable[..., Any], name: str) -> type[pydantic.BaseModel]:
    hints = get_type_hints(function, include_extras=True)  # keeps Field(...) markers
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs cannot be described as JSON Schema")
        if parameter.name not in hints:
            raise TypeError(f"tool {name}: parameter {parameter.name!r} needs a type hint")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hints[parameter.name], default)
    config = pydantic.ConfigDict(extra="forbid")
    return pydantic.create_model(f"{name}_arguments", __config__=config, **fields)


@dataclass(frozen=True)
class ToolFunction:
    """A function a Hand offers, with what the Mind needs to know about it."""

    name: str
    description: str
    effect: Effect
    background: bool
    function: Callable[..., Any]
    arguments: type[pydantic.BaseModel]
    # What a person approves, e.g. "{argv}" (rule: `ToolSpec.decision_template`); "" = default.
    decision: str = ""
    # The declared JSON Schema, when it is written out rather than derived from `arguments`.
    schema: dict[str, Any] | None = None
    # Reads someone's personal data (`ToolSpec.sensitive`), from `dataset` ("" = the name).
    sensitive: bool = False
    dataset: str = ""

    @classmethod
    def wrap(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        effect: Effect | str = Effect.READ_ONLY,
        background: bool = False,
        decision: str = "",
        sensitive: bool = False,
        dataset: str = "",
    ) -> ToolFunction:
        tool_name = name or function.__name__
        if not TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must match {TOOL_NAME.pattern}")
        arguments = _arguments_model(function, tool_name)
        try:
            check_template(decision, set(arguments.model_fields))
        except TemplateError as exc:
            raise ValueError(f"tool {tool_name}: decision template {decision!r}: {exc}") from None
        return cls(
            name=tool_name,
            description=description if description is not None else _description(function),
            effect=Effect(effect),
            background=background,
            function=function,
            arguments=arguments,
            decision=decision,
            sensitive=sensitive,
            dataset=dataset,
        )

    @property
    def json_schema(self) -> dict[str, Any]:
        if self.schema is not None:
            return self.schema
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = self.arguments.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise InvalidArguments(f"invalid arguments for {self.name}: {problems}") from None
        return {key: getattr(parsed, key) for key in type(parsed).model_fields}

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        """Run the function; the return value becomes text (strings as is, a `ToolOutput` with
        its images, the rest as JSON).

        Coroutine functions run on the loop and are cancelled with the task. Plain functions
        run in a worker thread; a cancel stops waiting for them but cannot stop the thread.
        """
        values = self.validate(arguments)
        if inspect.iscoroutinefunction(self.function):
            value = await self.function(**values)
        else:
            value = await asyncio.to_thread(self.function, **values)
        if isinstance(value, ToolOutput):
            return value
        if isinstance(value, str):
            return ToolOutput(value)
        return ToolOutput(json.dumps(pydantic_core.to_jsonable_python(value), ensure_ascii=False))


@dataclass(frozen=True)
class SchemaTool:
    """A tool declared by its JSON Schema rather than a Python signature.

    The Hand validates an offer's arguments against `schema` (jsonschema, the schema's own
    draft) before accepting it, then awaits `run` with the arguments as given; `run` returns
    the text the model sees (or a `ToolOutput`, text with images) or raises ToolError.
    """

    name: str
    description: str
    effect: Effect
    schema: dict[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[str | ToolOutput]]
    background: bool = False
    decision: str = ""
    sensitive: bool = False
    dataset: str = ""

    def __post_init__(self) -> None:
        import jsonschema  # loaded by the first schema tool, not with every Hand

        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {TOOL_NAME.pattern}")
        try:
            jsonschema.validators.validator_for(self.schema).check_schema(self.schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"tool {self.name}: invalid JSON Schema: {exc.message}") from None

    @property
    def json_schema(self) -> dict[str, Any]:
        return self.schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        import jsonschema

        validator = jsonschema.validators.validator_for(self.schema)(self.schema)
        problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if problems:
            listed = "; ".join(
                f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
                for e in problems
            )
            raise InvalidArguments(f"invalid arguments for {self.name}: {listed}")
        return arguments

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        value = await self.run(self.validate(arguments))
        return value if isinstance(value, ToolOutput) else ToolOutput(value)


# What a Hand offers: a typed function or a schema-declared tool (the same interface).
Tool = ToolFunction | SchemaTool
