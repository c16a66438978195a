"""TLS end to end with real processes: a Mind serving TLS (and mTLS) on its TCP listener, SDK
Hands and clients that trust its CA or not, Face between `tobe chat`'s client and the Mind,
and a Mind that refuses to start with a broken TLS configuration."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from helpers.face_process import running_face
from helpers.mind_process import MindProcess, issue_token, mind_env, run_mind_command, running_mind
from remote_processes import Chat, HandProcess, run_ended

from face.chat.session import ChatSession
from hand import client_tls
from management.certificates import (
    Issued,
    certificate_file,
    create_ca,
    issue,
    key_file,
    write_files,
)
from tobe.runtime.health import check
from tobe.runtime.tls import ClientTls
from tobe.v1 import common_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

SCRIPT = """
runs:
  - match: "^shout"
    steps:
      - text: "Asking the laptop."
        tool_calls:
          - name: laptop__shout
            arguments: {text: "over tls"}
      - expect: {last_role: tool, last_contains: "OVER TLS"}
        text: "The laptop shouted."
"""

# An SDK Hand with one read-only tool; {tls} is the `hand.client_tls(...)` call it dials with.
SDK_HAND = """
import asyncio, logging, os, sys

from hand import Hand, client_tls

logging.basicConfig(level=logging.INFO)
hand = Hand("laptop")


@hand.tool
async def shout(text: str) -> str:
    \"\"\"Upper-case `text`.\"\"\"
    return text.upper()


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"], tls={tls}))
"""


@dataclass(frozen=True)
class Pki:
    """A CA with a server certificate for loopback and a client certificate, and another CA."""

    directory: Path

    def path(self, name: str) -> Path:
        return self.directory / name


def _files(prefix: str, issued: Issued) -> dict[str, tuple[bytes, int]]:
    return {
        f"{prefix}.pem": certificate_file(issued.certificate_pem()),
        f"{prefix}.key": key_file(issued.key_pem()),
    }


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    ca, other = create_ca(), create_ca("another CA")
    files = {
        **_files("ca", ca),
        **_files("server", issue(ca, "localhost", hosts=["localhost", "127.0.0.1"])),
        **_files("laptop", issue(ca, "laptop")),
        **_files("other-ca", other),
        **_files("stranger", issue(other, "stranger")),
    }
    write_files(tmp_path / "tls", files, force=False)
    return Pki(tmp_path / "tls")


def server_env(pki: Pki, *, require_client_cert: bool = False) -> dict[str, str]:
    env = {
        "TOBE_MIND__TLS__CERT_FILE": str(pki.path("server.pem")),
        "TOBE_MIND__TLS__KEY_FILE": str(pki.path("server.key")),
    }
    if require_client_cert:
        env["TOBE_MIND__TLS__CLIENT_CA_FILE"] = str(pki.path("ca.pem"))
        env["TOBE_MIND__TLS__REQUIRE_CLIENT_CERT"] = "true"
    return env


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def hands() -> Iterator[list[HandProcess]]:
    started: list[HandProcess] = []
    try:
        yield started
    finally:
        for hand in started:
            hand.kill()


def start_sdk_hand(
    mind: MindProcess, workspace: Path, hands: list[HandProcess], tls: str
) -> HandProcess:
    program = workspace.parent / f"sdk_hand_{len(hands)}.py"
    program.write_text(SDK_HAND.format(tls=tls))
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    hand = HandProcess(mind.address, token, workspace, program=program)
    hand.start()
    hands.append(hand)
    return hand


def probe(address: str, tls: ClientTls | None) -> str:
    """The Mind's health as a client with `tls` sees it: SERVING, or the failed call's code."""
    try:
        return asyncio.run(check(address, "tobe.v1.Mind", timeout=10, tls=tls))
    except grpc.aio.AioRpcError as exc:
        return exc.code().name


@dataclass
class TlsChat(Chat):
    """The test chat client of the Mind, over TLS."""

    credentials: grpc.ChannelCredentials | None = None

    def __post_init__(self) -> None:
        assert self.credentials is not None
        self.channel = grpc.secure_channel(self.address, self.credentials)
        self.stub = mind_pb2_grpc.MindStub(self.channel)


def shout_over(mind: MindProcess, tls: ClientTls) -> str:
    """Run the shouting turn through the Mind; returns the model's last text."""
    chat = TlsChat(mind.address, mind.gateway_metadata, tls.credentials())
    try:
        chat.create("p_tls")
        sent = chat.send("p_tls", "shout please", "k1")
        events = chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    runs = [e.run_changed for e in events if e.WhichOneof("payload") == "run_changed"]
    assert runs[-1].state == common_pb2.RUN_STATE_COMPLETED, runs[-1]
    texts = [
        e.message_appended.text for e in events if e.WhichOneof("payload") == "message_appended"
    ]
    return texts[-1]


def test_an_sdk_hand_trusting_the_ca_attaches_and_runs_a_tool_over_tls(
    tmp_path: Path, pki: Pki, script: Path, workspace: Path, hands: list[HandProcess]
) -> None:
    with running_mind(tmp_path, script=script, clients=(), **server_env(pki)) as mind:
        hand = start_sdk_hand(mind, workspace, hands, f"client_tls({str(pki.path('ca.pem'))!r})")
        hand.wait_attached()
        assert shout_over(mind, client_tls(pki.path("ca.pem"))) == "The laptop shouted."


def test_with_client_certificates_required_only_a_hand_presenting_one_attaches(
    tmp_path: Path, pki: Pki, script: Path, workspace: Path, hands: list[HandProcess]
) -> None:
    ca = str(pki.path("ca.pem"))
    env = server_env(pki, require_client_cert=True)
    with running_mind(tmp_path, script=script, clients=(), **env) as mind:
        certified = (
            f"client_tls({ca!r}, cert_file={str(pki.path('laptop.pem'))!r}, "
            f"key_file={str(pki.path('laptop.key'))!r})"
        )
        start_sdk_hand(mind, workspace, hands, certified).wait_attached()
        laptop = client_tls(ca, cert_file=pki.path("laptop.pem"), key_file=pki.path("laptop.key"))
        assert shout_over(mind, laptop) == "The laptop shouted."

        uncertified = start_sdk_hand(mind, workspace, hands, f"client_tls({ca!r})")
        uncertified.wait_output("stream to the Mind failed (UNAVAILABLE")
        assert uncertified.attached == 0
        assert probe(mind.address, client_tls(ca)) == "UNAVAILABLE"
        stranger = client_tls(
            ca, cert_file=pki.path("stranger.pem"), key_file=pki.path("stranger.key")
        )
        assert probe(mind.address, stranger) == "UNAVAILABLE"


def test_a_tls_mind_refuses_plaintext_clients_and_clients_trusting_another_ca(
    tmp_path: Path, pki: Pki, script: Path
) -> None:
    with running_mind(tmp_path, script=script, clients=(), **server_env(pki)) as mind:
        assert probe(mind.address, client_tls(pki.path("ca.pem"))) == "SERVING"
        assert probe(mind.address, None) == "UNAVAILABLE"
        assert probe(mind.address, client_tls(pki.path("other-ca.pem"))) == "UNAVAILABLE"


def test_the_chat_client_reaches_a_tls_face_that_dials_a_tls_mind(
    tmp_path: Path, pki: Pki, script: Path
) -> None:
    ca = str(pki.path("ca.pem"))
    face_settings = {
        "tls__cert_file": str(pki.path("server.pem")),
        "tls__key_file": str(pki.path("server.key")),
        "mind_tls__ca_file": ca,
    }
    with (
        running_mind(tmp_path, script=script, clients=("alice",), **server_env(pki)) as mind,
        running_face(mind, **face_settings) as face,
    ):

        async def welcome() -> str:
            session = ChatSession(
                face.address,
                mind.client_tokens["alice"],
                on_event=lambda _event: None,
                on_status=lambda _status: None,
                tls=client_tls(ca),
            )
            try:
                await asyncio.wait_for(session.start(), 30)
                return session.principal
            finally:
                await session.close()

        # The welcome names the principal the Face learnt from the Mind over TLS.
        assert asyncio.run(welcome()) == "alice"
        assert probe(face.address, None) == "UNAVAILABLE"


@pytest.mark.parametrize(
    ("setting", "file"),
    [
        ("TOBE_MIND__TLS__CERT_FILE", "missing.pem"),
        ("TOBE_MIND__TLS__KEY_FILE", "laptop.key"),
        ("TOBE_MIND__TLS__CLIENT_CA_FILE", "server.key"),
    ],
    ids=["missing certificate", "key of another certificate", "client CA not a certificate"],
)
def test_a_bad_tls_configuration_stops_the_mind_naming_the_setting_and_file(
    tmp_path: Path, pki: Pki, setting: str, file: str
) -> None:
    env = mind_env(tmp_path, None, **{**server_env(pki), setting: str(pki.path(file))})
    result = run_mind_command(env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    name = setting.removeprefix("TOBE_").lower().replace("__", ".")
    assert "cannot start the Mind" in output and name in output and str(pki.path(file)) in output
    assert "Traceback" not in output and "PRIVATE KEY" not in output
