"""``dmxshm bench duckiematrix`` runs its SDK agent and reports figures it measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if not os.environ.get("DMXSHM_REQUIRE_DUCKIEMATRIX"):
    pytest.importorskip("dtps_http", reason="the duckiematrix extra (dtps-http) is missing")
    pytest.importorskip("duckietown.sdk", reason="duckietown-sdk (the real client) is missing")

pytestmark = pytest.mark.timeout(180)


def test_the_bench_counts_frames_and_commands_of_a_real_sdk_agent(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    got = subprocess.run([sys.executable, "-m", "dmxshm.cli", "bench", "duckiematrix",
                          "--duration", "4", "--renderer", "tiny", "--json", str(out)],
                         capture_output=True, text=True, timeout=150)
    assert got.returncode == 0, got.stderr[-3000:]
    res = json.loads(out.read_text())
    # The renderer counted the frames made; the agent, those it decoded: never more.
    assert 0 < res["frames_received"] <= res["frames_made"] + 1
    assert res["commands_published"] == res["frames_received"]
    # The slot forwards what it accepted; the realtime engine applies the newest record
    # it finds each step, so one superseded within a step is forwarded, not applied.
    assert 0 < res["commands_applied"] <= res["commands_forwarded"] <= res["commands_published"]
    assert res["latency"]["n"] == res["commands_applied"] and res["latency"]["p50_s"] > 0
    assert 0 < res["bridge_cpu_share"] < 2 and res["bridge"]["stamped_commands"] > 0
    assert "camera:" in got.stdout and "publish -> applied" in got.stdout
