"""Which Mind calls a client reaches through the gateway, worked out from the contracts.

A `mind` frame (`face.proto` MindCall) holds the Mind's own request message in the field named
after the call; this table, built once from the descriptors of the Mind service, MindCall and
MindReply, says which Mind method that is and where its response goes. No command is listed by
hand: a call added to the Mind's contract (and to MindCall and MindReply) is forwarded as it is.

The older command frames (`create_conversation` … `change_schedule`) become the same calls:
`tobe.scopes.FACE_COMMANDS` names each one's Mind method, and their fields carry the names of
the request's fields, so they are copied across by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from tobe.scopes import FACE_COMMANDS
from tobe.v1 import face_pb2, mind_pb2

ON_BEHALF_OF = "on_behalf_of"
DETAIL_MODE = "detail_mode"
MIND_SERVICE = mind_pb2.DESCRIPTOR.services_by_name["Mind"]


@dataclass(frozen=True)
class ForwardedCall:
    """One Mind method a client may call: its name, request type and reply field."""

    method: str
    request_type: type[Message]
    # The field of MindReply.call that carries its response.
    reply_field: str


def is_client_call(method: MethodDescriptor) -> bool:
    """A unary call made for a client: its request names the principal it acts for."""
    fields = method.input_type.fields_by_name
    return (
        not method.client_streaming
        and not method.server_streaming
        and ON_BEHALF_OF in fields
        and fields[ON_BEHALF_OF].message_type is mind_pb2.OnBehalfOf.DESCRIPTOR
    )


def _oneof_fields(message: Descriptor) -> dict[Descriptor | None, FieldDescriptor]:
    """The fields of `message`'s `call` oneof, by the message type each holds."""
    return {field.message_type: field for field in message.oneofs_by_name["call"].fields}


def _forwarded() -> dict[str, ForwardedCall]:
    calls = _oneof_fields(face_pb2.MindCall.DESCRIPTOR)
    replies = _oneof_fields(face_pb2.MindReply.DESCRIPTOR)
    table: dict[str, ForwardedCall] = {}
    for method in MIND_SERVICE.methods:
        if not is_client_call(method):
            continue
        request_field = calls.get(method.input_type)
        reply_field = replies.get(method.output_type)
        if request_field is None or reply_field is None:
            raise LookupError(
                f"face.proto MindCall and MindReply must both carry Mind.{method.name}"
            )
        table[request_field.name] = ForwardedCall(
            method.name, GetMessageClass(method.input_type), reply_field.name
        )
    return table


# Every Mind call a client may make, by its field in MindCall.call.
FORWARDED: dict[str, ForwardedCall] = _forwarded()
_BY_METHOD = {call.method: call for call in FORWARDED.values()}


def mind_request(call: face_pb2.MindCall) -> tuple[ForwardedCall, Message] | None:
    """The Mind call a `mind` frame makes, and a copy of its request; None when it holds none
    this gateway knows."""
    field = call.WhichOneof("call")
    if field is None or field not in FORWARDED:
        return None
    request = FORWARDED[field].request_type()
    request.CopyFrom(getattr(call, field))
    return FORWARDED[field], request


def command_request(frame: str, command: Message) -> tuple[ForwardedCall, Message]:
    """The Mind call an older command frame makes, its fields copied across by name."""
    call = _BY_METHOD[FACE_COMMANDS[frame]]
    request = call.request_type()
    for field, value in command.ListFields():
        if field.is_repeated:
            getattr(request, field.name).extend(value)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            getattr(request, field.name).CopyFrom(value)
        else:
            setattr(request, field.name, value)
    return call, request


def vouch(request: Message, on_behalf_of: mind_pb2.OnBehalfOf, mode: int) -> None:
    """Put in `request` what the gateway vouches for, whatever the client wrote there: the
    connection's principal and, where the call takes one, its detail mode."""
    getattr(request, ON_BEHALF_OF).CopyFrom(on_behalf_of)
    if DETAIL_MODE in request.DESCRIPTOR.fields_by_name:
        setattr(request, DETAIL_MODE, mode)
