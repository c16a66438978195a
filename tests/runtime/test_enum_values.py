"""`undefined_enum` finds an undefined enum value wherever a message can hold one.

The shapes ToBe's own requests do not have yet (enum maps, self-containing messages) come from
a small proto3 file built here with the protobuf runtime itself.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from tobe.runtime.enum_values import has_enum_field, undefined_enum
from tobe.v1 import face_pb2, hand_pb2, mind_pb2

Field = descriptor_pb2.FieldDescriptorProto
COLOR = "enumtest.Color"
COLOR_TYPE = f".{COLOR}"
EXPECTED = "expected one of COLOR_RED, COLOR_BLUE"


def _field(name: str, number: int, kind: int, type_name: str = "", **extra: Any) -> Field:
    if type_name:
        extra["type_name"] = type_name
    return Field(name=name, number=number, type=kind, **extra)


def _map_entry(name: str, key: int, value: int, value_type: str) -> descriptor_pb2.DescriptorProto:
    return descriptor_pb2.DescriptorProto(
        name=name,
        field=[
            _field("key", 1, key, label=Field.LABEL_OPTIONAL),
            _field("value", 2, value, value_type, label=Field.LABEL_OPTIONAL),
        ],
        options=descriptor_pb2.MessageOptions(map_entry=True),
    )


def _classes() -> dict[str, type[Message]]:
    one, many = Field.LABEL_OPTIONAL, Field.LABEL_REPEATED
    enum, message, string = Field.TYPE_ENUM, Field.TYPE_MESSAGE, Field.TYPE_STRING
    tree = descriptor_pb2.DescriptorProto(
        name="Tree",
        field=[
            _field("color", 1, enum, COLOR_TYPE, label=one),
            _field("colors", 2, enum, COLOR_TYPE, label=many),
            _field("by_name", 3, message, ".enumtest.Tree.ByNameEntry", label=many),
            _field("leaves", 4, message, ".enumtest.Tree.LeavesEntry", label=many),
            _field("leaf", 5, message, ".enumtest.Leaf", label=one),
            _field("leaf_list", 6, message, ".enumtest.Leaf", label=many),
            _field("picked", 7, message, ".enumtest.Leaf", label=one, oneof_index=0),
            _field("word", 8, string, label=one, oneof_index=0),
            _field("child", 9, message, ".enumtest.Tree", label=one),
        ],
        nested_type=[
            _map_entry("ByNameEntry", string, enum, COLOR_TYPE),
            _map_entry("LeavesEntry", Field.TYPE_INT32, message, ".enumtest.Leaf"),
        ],
        oneof_decl=[descriptor_pb2.OneofDescriptorProto(name="pick")],
    )
    file = descriptor_pb2.FileDescriptorProto(
        name="enumtest/tree.proto",
        package="enumtest",
        syntax="proto3",
        enum_type=[
            descriptor_pb2.EnumDescriptorProto(
                name="Color",
                value=[
                    descriptor_pb2.EnumValueDescriptorProto(name="COLOR_UNSPECIFIED", number=0),
                    descriptor_pb2.EnumValueDescriptorProto(name="COLOR_RED", number=1),
                    descriptor_pb2.EnumValueDescriptorProto(name="COLOR_BLUE", number=2),
                ],
            )
        ],
        message_type=[
            descriptor_pb2.DescriptorProto(
                name="Leaf", field=[_field("color", 1, enum, COLOR_TYPE, label=one)]
            ),
            tree,
            descriptor_pb2.DescriptorProto(
                name="Plain",
                field=[
                    _field("text", 1, string, label=one),
                    _field("next", 2, message, ".enumtest.Plain", label=one),
                ],
            ),
        ],
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"enumtest.{name}"))
        for name in ("Leaf", "Tree", "Plain")
    }


CLASSES = _classes()
Leaf, Tree, Plain = CLASSES["Leaf"], CLASSES["Tree"], CLASSES["Plain"]


def _tree(**fields: Any) -> Message:
    return Tree(**fields)


@pytest.mark.parametrize(
    ("message", "path", "value"),
    [
        (_tree(color=7), "color", 7),
        (_tree(colors=[1, 2, -1]), "colors[2]", -1),
        (_tree(by_name={"ok": 1, "bad": 9}), "by_name['bad']", 9),
        (_tree(leaves={4: Leaf(color=3)}), "leaves[4].color", 3),
        (_tree(leaf=Leaf(color=99)), "leaf.color", 99),
        (_tree(leaf_list=[Leaf(color=1), Leaf(color=5)]), "leaf_list[1].color", 5),
        (_tree(picked=Leaf(color=5)), "picked.color", 5),
        (_tree(child=Tree(child=Tree(leaf=Leaf(color=42)))), "child.child.leaf.color", 42),
    ],
    ids=["enum", "repeated", "map-value", "map-message", "nested", "list", "oneof", "recursive"],
)
def test_an_undefined_value_is_named_by_its_field_path(message: Message, path: str, value: int):
    assert undefined_enum(message) == (f"{path}: {value} is not a valid {COLOR}; {EXPECTED}")


def test_defined_values_and_zero_pass_anywhere() -> None:
    message = _tree(
        colors=[0, 1, 2],
        by_name={"a": 0, "b": 2},
        leaves={1: Leaf(color=1)},
        leaf=Leaf(),
        leaf_list=[Leaf(color=2)],
        picked=Leaf(color=0),
        child=Tree(child=Tree(color=1)),
    )
    assert undefined_enum(message) is None
    assert undefined_enum(Tree()) is None


def test_reading_a_message_does_not_set_its_unset_fields() -> None:
    message = _tree(word="kept")
    assert undefined_enum(message) is None
    assert [field.name for field, _ in message.ListFields()] == ["word"]


def test_only_types_with_an_enum_somewhere_below_are_walked() -> None:
    assert has_enum_field(Tree.DESCRIPTOR) and has_enum_field(Leaf.DESCRIPTOR)
    assert not has_enum_field(Plain.DESCRIPTOR)
    assert undefined_enum(Plain(text="x", next=Plain(text="y"))) is None


def test_tobe_requests_are_checked_down_to_their_nested_frames() -> None:
    hello = hand_pb2.HandHello(tools=[hand_pb2.ToolSpec(effect=1), hand_pb2.ToolSpec(effect=9)])
    assert (undefined_enum(hand_pb2.AttachRequest(hello=hello)) or "").startswith(
        "hello.tools[1].effect: 9 is not a valid tobe.v1.EffectClass; expected one of "
        "EFFECT_CLASS_READ_ONLY, "
    )
    command = face_pb2.DecideApprovalCommand(decision=99)
    assert undefined_enum(face_pb2.ConnectRequest(decide_approval=command)) == (
        "decide_approval.decision: 99 is not a valid tobe.v1.ApprovalDecision; expected one of "
        "APPROVAL_DECISION_APPROVE_ONCE, APPROVAL_DECISION_APPROVE_CONVERSATION, "
        "APPROVAL_DECISION_DENY, APPROVAL_DECISION_EXPIRED"
    )
    assert undefined_enum(mind_pb2.DecideActionRequest(decision=3)) is None
