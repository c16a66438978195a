"""`tobe doctor` in the container layout of docker/compose.yaml, simulated: TOBE_SERVICE set
as the image and compose set it, the Mind's data directory, and the other services'
credentials under TOBE_PROVISION_DIR, beside a running Mind."""

from __future__ import annotations

from pathlib import Path

import pytest
from doctor_run import doctor_env, run_doctor, store_settings
from helpers.admin_cli import Admin
from helpers.mind_process import running_mind

from mind.management import provision
from tobe.provider_detect import DEMO_SCRIPT

pytestmark = pytest.mark.e2e

SKIPPED = (
    "skip in the mind container: checks skipped: ports (Docker publishes them), services "
    "(Docker restarts them), sandbox (the Hand's container is its boundary)"
)
RESTART = (
    "`docker compose -f docker/compose.yaml restart mind` provisions them again, then "
    "`docker compose -f docker/compose.yaml restart face hand awareness`"
)


def test_doctor_in_the_mind_container_checks_the_credentials_where_the_mind_provisions_them(
    tmp_path: Path,
) -> None:
    data_dir, services_dir = tmp_path / "data", tmp_path / "credentials"
    provision(store_settings(data_dir), services_dir=services_dir)
    assert (services_dir / "face" / "face.token").is_file()
    with running_mind(tmp_path, script=DEMO_SCRIPT, clients=()) as mind:
        config = tmp_path / "none.toml"
        container = doctor_env(
            data_dir,
            config,
            TOBE_SERVICE="mind",
            TOBE_PROVISION_DIR=str(services_dir),
            TOBE_MIND__LISTEN=mind.address,
        )
        status, findings = run_doctor(container)
        assert status == 0, findings
        assert findings["container"] == [SKIPPED]
        assert not {"port mind", "services", "sandbox"} & set(findings)
        assert findings["credentials"] == ["ok face, hand, client: accepted by the store (online)"]

        # The same directory read as a host layout: the services' tokens are not where a host
        # keeps them (the false failure a container used to report).
        _, host = run_doctor(doctor_env(data_dir, config, TOBE_MIND__LISTEN=mind.address))
        [line] = host["credentials"]
        assert line.startswith(f"FAIL {data_dir / 'credentials' / 'face.token'} is missing")

        # A revoked service credential: the fix is a restart of the Mind, not --fix.
        hand_token = services_dir / "hand" / "hand.token"
        secret = hand_token.read_text()
        prefix = secret.split("_")[1]
        admin = Admin(data_dir)
        [hand] = [c for c in admin.json("credentials", "list") if c["prefix"] == prefix]
        admin.run("credentials", "revoke", hand["id"])
        status, findings = run_doctor(container, "--fix")
        assert status == 1
        assert findings["credentials"] == [
            f"FAIL {hand_token} was revoked (credential {hand['id']}) — fix: {RESTART}"
        ]
        assert hand_token.read_text() == secret  # nothing was rewritten
        assert mind.process is not None and mind.process.poll() is None


def test_doctor_in_another_service_container_points_to_the_mind_container(
    tmp_path: Path,
) -> None:
    env = doctor_env(tmp_path / "data", tmp_path / "none.toml", TOBE_SERVICE="face")
    status, findings = run_doctor(env)
    assert status == 0
    assert findings == {
        "container": [
            "skip in the face container: the checks read the Mind's data directory — fix: "
            "`docker compose -f docker/compose.yaml exec mind tobe doctor`"
        ]
    }


def test_doctor_in_a_mind_container_that_provisions_nothing_skips_the_credentials(
    tmp_path: Path,
) -> None:
    """A second Mind on a shared database (docker/compose.cluster.yaml) has no token files:
    the Mind that provisions keeps them, so their absence here is no failure."""
    data_dir = tmp_path / "data"
    provision(store_settings(data_dir), services_dir=tmp_path / "elsewhere")
    env = doctor_env(data_dir, tmp_path / "none.toml", TOBE_SERVICE="mind")
    assert run_doctor(env)[1]["credentials"] == [
        "skip this Mind provisions no credentials (TOBE_PROVISION_DIR is unset): the token "
        "files are with the Mind that does — fix: run `tobe doctor` in the container of the "
        "Mind that has TOBE_PROVISION_DIR"
    ]
