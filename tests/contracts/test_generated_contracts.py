"""The generated contracts in tobe/v1 are exactly what scripts/gen_proto.py produces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_regenerating_contracts_changes_nothing() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr


def test_every_service_of_the_design_is_in_the_contracts() -> None:
    from tobe.v1 import awareness_pb2, face_pb2, hand_pb2, management_pb2, mind_pb2

    services = {
        name
        for module in (awareness_pb2, face_pb2, hand_pb2, management_pb2, mind_pb2)
        for name in module.DESCRIPTOR.services_by_name
    }
    assert services == {"Mind", "FaceGateway", "HandLink", "Awareness", "Management"}
