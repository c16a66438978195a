"""`x-sensitive` marks are found wherever a JSON Schema puts them, and the marked values hidden."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awareness.errors import AdapterLoadError
from awareness.sensitive import MASK, check_schema, masked, sensitive_paths, sensitive_texts

SECRET = {"type": "string", "x-sensitive": True}


def test_a_mark_behind_a_ref_into_defs_hides_the_value():
    schema = {
        "$defs": {
            "credentials": {"properties": {"password": {"$ref": "#/$defs/secret"}}},
            "secret": SECRET,
        },
        "properties": {"login": {"$ref": "#/$defs/credentials"}},
    }
    value = {"login": {"user": "ann", "password": "pw-ref-1234"}}
    assert masked(value, schema) == {"login": {"user": "ann", "password": MASK}}
    assert sensitive_texts(value, schema) == ["pw-ref-1234"]


def test_a_mark_in_any_oneof_branch_hides_the_value_whichever_branch_it_matches():
    schema = {"properties": {"token": {"oneOf": [{"type": "integer"}, SECRET]}}}
    assert masked({"token": "tok-oneof-1"}, schema) == {"token": MASK}
    # The marked branch is a string; an integer matches the other branch: hidden all the same.
    assert masked({"token": 42}, schema) == {"token": MASK}


def test_a_mark_in_an_anyof_branch_hides_the_value():
    schema = {
        "properties": {
            "proxy": {
                "anyOf": [
                    {"type": "null"},
                    {"type": "object", "properties": {"password": SECRET}},
                ]
            }
        }
    }
    value = {"proxy": {"url": "http://proxy.test", "password": "pw-anyof-1"}}
    assert masked(value, schema) == {"proxy": {"url": "http://proxy.test", "password": MASK}}


def test_a_mark_in_an_allof_part_hides_the_value():
    schema = {
        "properties": {
            "login": {
                "allOf": [
                    {"properties": {"user": {"type": "string"}}},
                    {"properties": {"pin": SECRET}},
                ]
            }
        }
    }
    value = {"login": {"user": "ann", "pin": "pin-allof-1"}}
    assert masked(value, schema) == {"login": {"user": "ann", "pin": MASK}}


def test_pattern_properties_hide_every_key_their_regex_finds_anywhere_in_it():
    schema = {
        "properties": {"accept": {"type": "string"}},
        "patternProperties": {"-(key|token)": SECRET},
        "additionalProperties": {"type": "string"},
    }
    value = {
        "accept": "json",
        "x-api-key": "k-1234",
        "x-token-2": "t-1234",
        "x-trace": "trace-1",
    }
    assert masked(value, schema) == {
        "accept": "json",
        "x-api-key": MASK,
        "x-token-2": MASK,
        "x-trace": "trace-1",
    }


def test_marks_inside_nested_arrays_hide_each_marked_item():
    schema = {
        "type": "array",
        "items": {
            "type": "array",
            "prefixItems": [{"type": "string"}],
            "items": {"properties": {"secret": SECRET}},
        },
    }
    value = [["a", {"secret": "s-1111", "name": "one"}], ["b", {"secret": "s-2222"}, {}]]
    assert masked(value, schema) == [
        ["a", {"secret": MASK, "name": "one"}],
        ["b", {"secret": MASK}, {}],
    ]
    assert sorted(sensitive_texts(value, schema)) == ["s-1111", "s-2222"]


def test_a_recursive_schema_hides_marks_at_every_depth():
    schema = {
        "type": "object",
        "properties": {"token": SECRET, "children": {"type": "array", "items": {"$ref": "#"}}},
    }
    value = {"token": "t0", "children": [{"token": "t1", "children": [{"token": "t2"}]}]}
    assert masked(value, schema) == {
        "token": MASK,
        "children": [{"token": MASK, "children": [{"token": MASK}]}],
    }


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"allOf": [{"$ref": "#"}], "anyOf": [{"$ref": "#/allOf/0"}]},
    ],
    ids=["self", "two-defs", "through-branches"],
)
def test_a_reference_cycle_that_consumes_no_value_ends_and_hides_nothing(schema: dict[str, Any]):
    assert masked({"a": ["b", {"c": "d"}]}, schema) == {"a": ["b", {"c": "d"}]}


@pytest.mark.parametrize(
    "schema, value, hidden",
    [
        (
            {"if": {"required": ["pin"]}, "then": {"properties": {"pin": SECRET}}},
            {"pin": "p-1"},
            {"pin": MASK},
        ),
        # `else` counts even when `if` holds: the branch a value takes never decides.
        (
            {"if": {"required": ["pin"]}, "else": {"properties": {"pin": SECRET}}},
            {"pin": "p-1"},
            {"pin": MASK},
        ),
        (
            {"dependentSchemas": {"card": {"properties": {"cvv": SECRET}}}},
            {"card": "4111", "cvv": "123"},
            {"card": "4111", "cvv": MASK},
        ),
        (
            {"dependentSchemas": {"card": {"properties": {"cvv": SECRET}}}},
            {"cvv": "123"},
            {"cvv": "123"},
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, SECRET]},
            ["user", "pw", "extra"],
            ["user", MASK, "extra"],
        ),
        (
            {"type": "array", "contains": {"properties": {"pw": SECRET}}},
            [{"pw": "a"}, {"pw": "b"}],
            [{"pw": MASK}, {"pw": MASK}],
        ),
        (
            {"properties": {"user": {}}, "unevaluatedProperties": SECRET},
            {"user": "ann", "pw": "x"},
            {"user": "ann", "pw": MASK},
        ),
        (
            {"prefixItems": [{}], "unevaluatedItems": SECRET},
            ["user", "pw"],
            ["user", MASK],
        ),
        (
            {
                "$id": "https://example.test/root",
                "$defs": {"pw": {"$anchor": "pw", "x-sensitive": True}},
                "properties": {"pw": {"$ref": "#pw"}},
            },
            {"pw": "x"},
            {"pw": MASK},
        ),
        (
            {
                "$defs": {
                    "creds": {
                        "$id": "creds.json",
                        "properties": {"pw": {"$ref": "#/$defs/pw"}},
                        "$defs": {"pw": SECRET},
                    }
                },
                "properties": {"creds": {"$ref": "creds.json"}},
            },
            {"creds": {"pw": "x"}},
            {"creds": {"pw": MASK}},
        ),
    ],
    ids=[
        "then",
        "else",
        "dependentSchemas",
        "dependentSchemas-absent",
        "prefixItems",
        "contains",
        "unevaluatedProperties",
        "unevaluatedItems",
        "anchor",
        "embedded-id",
    ],
)
def test_every_other_applicator_is_followed(schema: dict[str, Any], value: Any, hidden: Any):
    check_schema(schema, "schema")
    assert masked(value, schema) == hidden


def test_a_dynamic_ref_follows_the_dynamic_scope_to_the_extending_schema():
    # The tree's items refer to `#node` dynamically: under the extending schema they are it, and
    # only it marks `token`.
    schema = {
        "$id": "https://example.test/secret-tree",
        "$dynamicAnchor": "node",
        "$ref": "tree",
        "properties": {"token": SECRET},
        "$defs": {
            "tree": {
                "$id": "tree",
                "$dynamicAnchor": "node",
                "properties": {"children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
            }
        },
    }
    value = {"token": "t0", "children": [{"token": "t1", "children": [{"token": "t2"}]}]}
    assert sorted(sensitive_texts(value, schema)) == ["t0", "t1", "t2"]


def test_a_marked_object_is_hidden_whole_and_every_scalar_in_it_is_a_sensitive_text():
    schema = {"properties": {"auth": {"x-sensitive": True}}}
    value = {"auth": {"user": "u-name", "keys": ["k-1", {"pin": 1234, "on": True, "x": None}]}}
    assert masked(value, schema) == {"auth": MASK}
    assert sorted(sensitive_texts(value, schema)) == ["1234", "k-1", "u-name"]


def test_a_mark_under_a_marked_value_is_covered_by_the_outer_one():
    schema = {
        "anyOf": [
            {"properties": {"a": SECRET}},
            {"properties": {"a": {"properties": {"b": SECRET}}}},
        ]
    }
    assert sensitive_paths({"a": {"b": "x"}}, schema) == {("a",)}


def test_a_marked_root_object_keeps_its_keys_and_hides_every_value():
    assert masked({"user": "u", "pw": {"x": 1}}, {"x-sensitive": True}) == {
        "user": MASK,
        "pw": MASK,
    }


def test_scrub_is_applied_to_every_string_key_and_leaf_of_the_copy():
    def scrub(text: str) -> str:
        return text.replace("cfg-secret", MASK)

    value = {"note": "signed in with cfg-secret", "cfg-secret": ["ok", 7, "cfg-secret"]}
    assert masked(value, None, scrub) == {
        "note": f"signed in with {MASK}",
        MASK: ["ok", 7, MASK],
    }
    assert value["note"] == "signed in with cfg-secret"


@pytest.mark.parametrize(
    "schema, problem",
    [
        ({"properties": {"a": {"type": "strin"}}}, "not a valid JSON Schema: 'strin'"),
        ({"patternProperties": {"(": SECRET}}, "not a valid JSON Schema: '(' is not a 'regex'"),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "the reference '#/$defs/missing'"),
        ({"$ref": "https://example.test/elsewhere.json"}, "'https://example.test/elsewhere.json'"),
    ],
    ids=["bad-type", "bad-regex", "missing-def", "remote"],
)
def test_a_schema_the_walk_cannot_follow_is_refused_with_what_is_wrong(
    schema: dict[str, Any], problem: str
):
    with pytest.raises(AdapterLoadError) as caught:
        check_schema(schema, "result_schema of action 'x'")
    assert str(caught.value).startswith("result_schema of action 'x'")
    assert problem in str(caught.value)


# -- property: masking leaves no marked text and keeps every unmarked one ----------------------


@dataclass
class _Node:
    """A generated value, a schema for it, and the texts of its leaves, marked or not."""

    value: Any
    schema: Any
    hidden: list[str]
    shown: list[str]


_KEYS = st.text(alphabet="abcxyz-_", min_size=1, max_size=6)


@st.composite
def _node(draw: st.DrawFn, defs: dict[str, Any], path: str, depth: int) -> _Node:
    """A value at `path` described through randomly chosen constructs, perhaps marked."""
    kind = draw(st.sampled_from(["leaf", "object", "array"] if depth < 3 else ["leaf"]))
    if kind == "leaf":
        # `<path>` occurs in no other leaf's text.
        node = _Node(f"<{path}>", {}, [], [f"<{path}>"])
    elif kind == "object":
        keys = draw(st.lists(_KEYS, min_size=1, max_size=3, unique=True))
        children = {key: draw(_node(defs, f"{path}/{key}", depth + 1)) for key in keys}
        by_pattern = {key for key in keys if draw(st.booleans())}
        schema = {
            "properties": {k: c.schema for k, c in children.items() if k not in by_pattern},
            "patternProperties": {f"^{re.escape(k)}$": children[k].schema for k in by_pattern},
        }
        node = _Node({k: c.value for k, c in children.items()}, schema, *_texts(children.values()))
    else:
        items = [
            draw(_node(defs, f"{path}/{i}", depth + 1)) for i in range(draw(st.integers(1, 3)))
        ]
        schema = {"prefixItems": [item.schema for item in items]}
        node = _Node([item.value for item in items], schema, *_texts(items))
    if depth > 0 and draw(st.booleans()):
        node = _Node(node.value, {"x-sensitive": True}, node.hidden + node.shown, [])
    node.schema = _wrapped(draw, defs, node.schema)
    return node


def _texts(children: Iterable[_Node]) -> tuple[list[str], list[str]]:
    nodes = list(children)
    return [t for n in nodes for t in n.hidden], [t for n in nodes for t in n.shown]


def _wrapped(draw: st.DrawFn, defs: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    how = draw(st.sampled_from(["plain", "ref", "allOf", "anyOf", "oneOf"]))
    if how == "plain":
        return schema
    if how == "ref":
        name = f"d{len(defs)}"
        defs[name] = schema
        return {"$ref": f"#/$defs/{name}"}
    return {how: [{"type": "number"}, schema]}


@st.composite
def _documents(draw: st.DrawFn) -> tuple[dict[str, Any], _Node]:
    defs: dict[str, Any] = {}
    node = draw(_node(defs, "", 0))
    return {"allOf": [node.schema], "$defs": defs}, node


@settings(max_examples=100, deadline=None)
@given(_documents())
def test_masking_hides_exactly_the_marked_leaves(document: tuple[dict[str, Any], _Node]):
    schema, node = document
    check_schema(schema, "schema")
    shown = json.dumps(masked(node.value, schema))
    assert [text for text in node.hidden if text in shown] == []
    assert [text for text in node.shown if text not in shown] == []
    assert sorted(sensitive_texts(node.value, schema)) == sorted(node.hidden)
