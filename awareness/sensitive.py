"""Finding and hiding the values a JSON Schema (draft 2020-12) marks `"x-sensitive": true`.

Adapters mark secrets in their config schema and in the optional schemas of their action
results and emitted content. A mark may sit anywhere a schema can: behind a `$ref`, in a
`oneOf` branch, under a `patternProperties` regex. Which subschemas apply depends on the value,
so the value is walked against the schema, references resolved by the `referencing` library as
the validator resolves them. The walk is conservative: every branch of `allOf`/`anyOf`/`oneOf`,
`if`, `then` and `else` counts whether or not the value satisfies it, and `unevaluated*`
applies to whatever this schema's own keywords leave (hiding too much costs little, showing a
secret cannot be undone). A marked value is hidden whole, whatever it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jsonschema
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, Schema

from awareness.errors import AdapterLoadError

if TYPE_CHECKING:
    # The library exports its resolver type only from its core module.
    from referencing._core import Resolved, Resolver

MARK = "x-sensitive"
MASK = "[REDACTED]"
# A place in a JSON value: object keys and array indexes from the root.
ValuePath = tuple[str | int, ...]

_REFERENCES = ("$ref", "$dynamicRef")
_IN_PLACE = ("if", "then", "else")
_BRANCHES = ("allOf", "anyOf", "oneOf")
_MEMBER_KEYWORDS = {
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
}
_ITEM_KEYWORDS = {"prefixItems", "items", "unevaluatedItems", "contains"}
# Values are JSON as Python holds it: these are its containers (what `json.dumps` writes).
_OBJECT = dict
_ARRAY = (list, tuple)


def check_schema(schema: Schema | None, what: str) -> None:
    """Refuse a schema the validator or the walk could not follow (None marks nothing)."""
    if schema is None:
        return
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise AdapterLoadError(
            f"{what} is not a valid JSON Schema: {exc.message} (at {exc.json_path})"
        ) from None
    resource = DRAFT202012.create_resource(schema)
    ref = next(_unresolvable(resource, _root_resolver(resource)), None)
    if ref is not None:
        raise AdapterLoadError(
            f"{what}: the reference {ref!r} cannot be resolved "
            "(only references into the schema itself are followed)"
        )


def sensitive_paths(value: Any, schema: Schema | None) -> set[ValuePath]:
    """The outermost places in `value` that `schema` marks sensitive."""
    if schema is None:
        return set()
    walk = _Walk()
    walk.schema(schema, _root_resolver(DRAFT202012.create_resource(schema)), value, (), set())
    found = walk.found
    return {path for path in found if not any(path[:i] in found for i in range(len(path)))}


def sensitive_texts(value: Any, schema: Schema | None) -> list[str]:
    """The text of every scalar inside a marked value, for scrubbing free text."""
    texts: list[str] = []
    for path in sensitive_paths(value, schema):
        texts.extend(_scalar_texts(_at(value, path)))
    return texts


def _unchanged(text: str) -> str:
    return text


def masked(value: Any, schema: Schema | None, scrub: Callable[[str], str] = _unchanged) -> Any:
    """A copy of `value` with each marked value replaced by MASK and every string (key or
    leaf) passed through `scrub`. A marked root object keeps its keys: callers promise one."""
    marked = sensitive_paths(value, schema)
    if () in marked:
        return (
            {_scrubbed(key, scrub): MASK for key in value} if isinstance(value, _OBJECT) else MASK
        )
    return _copy(value, _tree(marked), scrub)


def _root_resolver(resource: Resource[Schema]) -> Resolver[Schema]:
    uri = resource.id() or ""
    registry: Registry[Schema] = Registry().with_resource(uri, resource).crawl()
    return registry.resolver(base_uri=uri)


def _enter(resolver: Resolver[Schema], schema: Any) -> Resolver[Schema]:
    """The resolver inside a subschema, which may set its own base URI with `$id`."""
    if not (isinstance(schema, Mapping) and "$id" in schema):
        return resolver
    return resolver.in_subresource(DRAFT202012.create_resource(schema))


def _unresolvable(resource: Resource[Schema], resolver: Resolver[Schema]) -> Iterator[str]:
    contents = resource.contents
    if isinstance(contents, Mapping):
        for keyword in _REFERENCES:
            ref = contents.get(keyword)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    yield ref
    for sub in resource.subresources():
        yield from _unresolvable(sub, resolver.in_subresource(sub))


class _Walk:
    """One walk of a value against a schema: the marked places found, and the references
    already resolved (the resolver a lookup starts from is part of its answer)."""

    def __init__(self) -> None:
        self.found: set[ValuePath] = set()
        self._resolved: dict[tuple[int, str], tuple[Resolver[Schema], Resolved[Schema]]] = {}

    def schema(
        self, schema: Any, resolver: Resolver[Schema], value: Any, path: ValuePath, seen: set[int]
    ) -> None:
        """Add the places under `path` that `schema` marks.

        `seen` holds the schemas already walked at this place: a reference cycle that consumes
        no value (`{"$ref": "#"}`) ends there, and each child place starts a set of its own.
        """
        if not isinstance(schema, Mapping) or id(schema) in seen:
            return
        seen.add(id(schema))
        if schema.get(MARK):
            self.found.add(path)
            return
        for keyword in _REFERENCES:
            ref = schema.get(keyword)
            if isinstance(ref, str):
                resolved = self._lookup(resolver, ref)
                self.schema(resolved.contents, resolved.resolver, value, path, seen)
        in_place = [schema[k] for k in _IN_PLACE if k in schema]
        in_place += [branch for k in _BRANCHES for branch in schema.get(k, ())]
        if isinstance(value, _OBJECT):
            dependent = schema.get("dependentSchemas", {})
            in_place += [dependent[key] for key in dependent if key in value]
        for sub in in_place:
            self.schema(sub, _enter(resolver, sub), value, path, seen)
        for key, child, subs in _children(schema, value):
            child_seen: set[int] = set()
            for sub in subs:
                self.schema(sub, _enter(resolver, sub), child, (*path, key), child_seen)

    def _lookup(self, resolver: Resolver[Schema], ref: str) -> Resolved[Schema]:
        # Every item of an array resolves the same references from the same resolver.
        key = (id(resolver), ref)
        if key not in self._resolved:
            # Kept beside its answer, so its id is never reused by another during the walk.
            self._resolved[key] = (resolver, resolver.lookup(ref))
        return self._resolved[key][1]


def _children(schema: Mapping[str, Any], value: Any) -> Iterator[tuple[str | int, Any, list[Any]]]:
    """Each member or item of `value` with the subschemas of `schema` that apply to it."""
    if isinstance(value, _OBJECT) and not _MEMBER_KEYWORDS.isdisjoint(schema):
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        rest = schema.get("additionalProperties", schema.get("unevaluatedProperties"))
        for key, child in value.items():
            name = str(key)
            subs = [properties[name]] if name in properties else []
            subs += [sub for pattern, sub in patterns.items() if re.search(pattern, name)]
            if not subs and rest is not None:
                subs = [rest]
            yield key, child, subs
    elif isinstance(value, _ARRAY) and not _ITEM_KEYWORDS.isdisjoint(schema):
        prefix = schema.get("prefixItems", [])
        rest = schema.get("items", schema.get("unevaluatedItems"))
        contains = [schema["contains"]] if "contains" in schema else []
        for index, child in enumerate(value):
            if index < len(prefix):
                yield index, child, [prefix[index], *contains]
            else:
                yield index, child, ([rest] if rest is not None else []) + contains


def _at(value: Any, path: ValuePath) -> Any:
    for part in path:
        value = value[part]
    return value


def _scalar_texts(value: Any) -> Iterator[str]:
    if isinstance(value, _OBJECT):
        for child in value.values():
            yield from _scalar_texts(child)
    elif isinstance(value, _ARRAY):
        for child in value:
            yield from _scalar_texts(child)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _scrubbed(text: Any, scrub: Callable[[str], str]) -> Any:
    return scrub(text) if isinstance(text, str) else text


def _tree(paths: set[ValuePath]) -> dict[Any, Any]:
    """The paths as nested dicts: a key leads to its child's marks, True marks the child."""
    tree: dict[Any, Any] = {}
    for path in paths:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = True
    return tree


def _copy(value: Any, marks: dict[Any, Any] | bool | None, scrub: Callable[[str], str]) -> Any:
    """A copy of `value` with the values `marks` names masked and every string scrubbed."""
    if marks is True:
        return MASK
    children = marks if isinstance(marks, dict) else {}
    if isinstance(value, _OBJECT):
        return {
            _scrubbed(key, scrub): _copy(child, children.get(key), scrub)
            for key, child in value.items()
        }
    if isinstance(value, _ARRAY):
        return [_copy(child, children.get(index), scrub) for index, child in enumerate(value)]
    return _scrubbed(value, scrub)
