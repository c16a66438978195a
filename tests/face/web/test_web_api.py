"""The pairing API against a stand-in Mind: what each answer of the Mind becomes over HTTP, the
session cookie's attributes, the limit on failed attempts, the origin check, and that neither
a code nor a token reaches the log."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from starlette.testclient import TestClient

from face.connection import Identity
from face.errors import MindCallError
from face.feed import EventFeed
from face.projection import AdmissionModes
from face.session import Session
from face.web.app import web_app
from face.web.attempts import MinuteLimit
from face.web.headers import CONTENT_SECURITY_POLICY, WIDGET_FRAME_POLICY
from tobe.config import FaceSettings, WebSettings
from tobe.v1 import mind_pb2

CODE = "ABCDE-12345"
TOKEN = "tobe_client_fresh-secret"


class PairingMind:
    """Stands in for the MindClient's pairing calls; `failure` makes redemption fail."""

    def __init__(self, failure: MindCallError | None = None) -> None:
        self.failure = failure
        self.redeemed: list[tuple[str, str]] = []
        self.signed_out: list[str] = []
        self.sign_out_failure: MindCallError | None = None

    async def redeem_pairing_code(self, code: str, device: str, device_id: str = "") -> Any:
        self.redeemed.append((code, device))
        if self.failure is not None:
            raise self.failure
        return mind_pb2.RedeemPairingCodeResponse(
            token=TOKEN, credential_id="cred-w", principal="alice"
        )

    async def sign_out(self, token: str) -> Any:
        self.signed_out.append(token)
        if self.sign_out_failure is not None:
            raise self.sign_out_failure
        return mind_pb2.SignOutResponse(credential_id="cred-w")

    async def authenticate(self, token: str) -> Identity:
        if token != TOKEN:
            raise MindCallError("UNAUTHENTICATED", "unknown credential")
        return Identity("alice", ("chat", "approve"), "cred-w")


def client(mind: PairingMind, *, tls: bool = False, attempts: int = 5) -> TestClient:
    session = Session(mind, EventFeed(mind, AdmissionModes()), FaceSettings())  # type: ignore[arg-type]
    settings = WebSettings(pair_attempts_per_minute=attempts, origins=["https://proxy.example"])
    scheme = "https" if tls else "http"
    return TestClient(web_app(session, settings, tls=tls), base_url=f"{scheme}://testserver")


def test_a_redeemed_code_becomes_an_httponly_strict_session_cookie() -> None:
    mind = PairingMind()
    with client(mind) as http:
        paired = http.post("/api/pair", json={"code": CODE, "device": "web: Firefox"})
        assert paired.status_code == 204
        cookie = paired.headers["set-cookie"]
        assert cookie.startswith(f"tobe_session={TOKEN};")
        for attribute in ("HttpOnly", "SameSite=strict", "Path=/", "Max-Age=34560000"):
            assert attribute.lower() in cookie.lower()
        assert "secure" not in cookie.lower()
        session = http.get("/api/session")
    assert mind.redeemed == [(CODE, "web: Firefox")]
    assert session.status_code == 200
    assert session.json() == {"principal": "alice", "scopes": ["chat", "approve"]}


def test_under_tls_the_cookie_is_secure_and_browsers_are_told_to_stay_on_https() -> None:
    with client(PairingMind(), tls=True) as http:
        paired = http.post("/api/pair", json={"code": CODE})
    assert "secure" in paired.headers["set-cookie"].lower()
    assert paired.headers["strict-transport-security"].startswith("max-age=")


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (MindCallError("INVALID_ARGUMENT", "malformed pairing code"), 400),
        (MindCallError("NOT_FOUND", "no such pairing code"), 410),
        (MindCallError("UNAVAILABLE", "connection refused"), 503),
    ],
)
def test_the_minds_answer_to_a_redemption_becomes_an_http_status(
    failure: MindCallError, status: int
) -> None:
    with client(PairingMind(failure)) as http:
        answer = http.post("/api/pair", json={"code": CODE})
    assert answer.status_code == status
    assert answer.json()["error"]
    assert "set-cookie" not in answer.headers
    assert answer.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1]", b'{"code": 5}', b'{"code": ""}', b'{"code": "x", "device": 1}'],
)
def test_a_malformed_request_is_400_without_asking_the_mind(body: bytes) -> None:
    mind = PairingMind()
    with client(mind) as http:
        answer = http.post("/api/pair", content=body)
    assert answer.status_code == 400 and answer.json()["error"]
    assert mind.redeemed == []


def test_failed_attempts_beyond_the_limit_are_refused_429_malformed_ones_included() -> None:
    mind = PairingMind(MindCallError("NOT_FOUND", "no such pairing code"))
    with client(mind, attempts=3) as http:
        statuses = [http.post("/api/pair", json={"code": CODE}).status_code for _ in range(2)]
        statuses.append(http.post("/api/pair", content=b"{").status_code)
        refused = http.post("/api/pair", json={"code": CODE})
    assert statuses == [410, 410, 400]
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert len(mind.redeemed) == 2  # the refused attempt never reached the Mind


def test_failed_attempts_expire_after_a_minute() -> None:
    now = [0.0]
    attempts = MinuteLimit(2, clock=lambda: now[0])
    attempts.count("10.0.0.1")
    attempts.count("10.0.0.1")
    assert attempts.blocked("10.0.0.1") == 60.0
    assert attempts.blocked("10.0.0.2") == 0.0
    now[0] = 30.0
    assert attempts.blocked("10.0.0.1") == 30.0
    now[0] = 60.0
    assert attempts.blocked("10.0.0.1") == 0.0


def test_a_post_from_a_foreign_origin_is_refused_403_and_changes_nothing() -> None:
    mind = PairingMind()
    with client(mind) as http:
        foreign = http.post(
            "/api/pair", json={"code": CODE}, headers={"Origin": "https://evil.example"}
        )
        logout = http.post(
            "/api/logout",
            headers={"Origin": "https://evil.example", "Cookie": f"tobe_session={TOKEN}"},
        )
        proxied = http.post(
            "/api/pair", json={"code": CODE}, headers={"Origin": "https://proxy.example"}
        )
        own = http.post("/api/pair", json={"code": CODE}, headers={"Origin": "http://testserver"})
    assert foreign.status_code == 403 and logout.status_code == 403
    assert "face.web.origins" in foreign.json()["error"]
    assert mind.signed_out == []
    assert proxied.status_code == 204 and own.status_code == 204
    assert len(mind.redeemed) == 2


def test_logout_revokes_the_credential_and_clears_the_cookie() -> None:
    mind = PairingMind()
    with client(mind) as http:
        http.cookies.set("tobe_session", TOKEN)
        out = http.post("/api/logout")
        assert out.status_code == 204
        assert 'tobe_session=""' in out.headers["set-cookie"]
        assert "max-age=0" in out.headers["set-cookie"].lower()
    assert mind.signed_out == [TOKEN]


def test_logout_of_an_already_revoked_credential_still_signs_out() -> None:
    mind = PairingMind()
    mind.sign_out_failure = MindCallError("UNAUTHENTICATED", "credential revoked")
    with client(mind) as http:
        http.cookies.set("tobe_session", "tobe_client_gone")
        assert http.post("/api/logout").status_code == 204
    mind.sign_out_failure = MindCallError("UNAVAILABLE", "connection refused")
    with client(mind) as http:
        http.cookies.set("tobe_session", TOKEN)
        kept = http.post("/api/logout")
    assert kept.status_code == 503 and "set-cookie" not in kept.headers


def test_the_session_of_an_unknown_cookie_is_401() -> None:
    with client(PairingMind()) as http:
        http.cookies.set("tobe_session", "tobe_client_unknown")
        answer = http.get("/api/session")
    assert answer.status_code == 401 and answer.json() == {"error": "unknown credential"}


def test_neither_the_code_nor_the_token_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    mind = PairingMind()
    with client(mind) as http:
        http.post("/api/pair", json={"code": CODE, "device": "web"})
        http.get("/api/session")
        http.post("/api/logout")
    mind.failure = MindCallError("NOT_FOUND", "no such pairing code")
    with client(mind) as http:
        http.post("/api/pair", json={"code": CODE})
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert CODE not in logged and TOKEN not in logged
    assert "paired as alice" in logged


def test_only_the_widget_frame_may_be_framed_and_it_runs_sandboxed_without_network() -> None:
    with client(PairingMind()) as http:
        app_page = http.get("/")
        frame = http.get("/widget-frame.html")

    assert frame.status_code == 200 and "text/html" in frame.headers["content-type"]
    policy = frame.headers["content-security-policy"]
    assert policy == WIDGET_FRAME_POLICY
    assert "default-src 'none'" in policy and "sandbox allow-scripts" in policy
    assert "connect-src" not in policy and "'self'" not in policy.replace(
        "frame-ancestors 'self'", ""
    )
    assert frame.headers["x-frame-options"] == "SAMEORIGIN"
    assert app_page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "frame-src 'self'" in CONTENT_SECURITY_POLICY
    assert app_page.headers["x-frame-options"] == "DENY"


def test_chat_completions_beyond_a_credentials_limit_are_refused_429() -> None:
    session = Session(PairingMind(), EventFeed(PairingMind(), AdmissionModes()), FaceSettings())  # type: ignore[arg-type]
    settings = WebSettings(openai_requests_per_minute=2)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(web_app(session, settings, tls=False)) as http:
        # Malformed, so that no turn starts: each still counts against the limit.
        statuses = [
            http.post("/v1/chat/completions", content=b"{", headers=bearer).status_code
            for _ in range(2)
        ]
        refused = http.post("/v1/chat/completions", content=b"{", headers=bearer)
        stranger = http.post("/v1/chat/completions", content=b"{")
    assert statuses == [400, 400]
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert stranger.status_code == 401  # no credential: refused before any counting
