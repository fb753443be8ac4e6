"""The behaviour the simulation core must keep, bit for bit: the trajectory digests
pinned before it was built (scripts/digests.py: networks and make_vec at 7636419;
scripts/front_end_digests.py: v0, v1, parallel_env and the drop-in at b6adf68)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.mark.parametrize(("script", "table"), [
    ("digests.py", "digests-7636419.json"),
    ("front_end_digests.py", "digests-43start.json"),
])
def test_the_pinned_digests_are_unchanged(script: str, table: str) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--compare",
                          str(ROOT / "docs" / table)], capture_output=True, text=True,
                         timeout=850)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " equal" in out.stdout.splitlines()[-1]
