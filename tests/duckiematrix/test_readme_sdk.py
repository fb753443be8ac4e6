"""The README's duckietown-sdk example drives the run its command line starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.duckiematrix.test_bridge import start_run

if not os.environ.get("DMXSHM_REQUIRE_DUCKIEMATRIX"):
    pytest.importorskip("dtps_http", reason="the duckiematrix extra (dtps-http) is missing")
    pytest.importorskip("duckietown.sdk", reason="duckietown-sdk (the real client) is missing")

pytestmark = pytest.mark.timeout(180)
README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_sdk_agent_reads_frames_and_drives(tmp_path: Path) -> None:
    text = README.read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "DB21J" in b]
    (line,) = [ln for ln in text.splitlines() if ln.startswith("dmxshm run --duckiematrix")]
    argv = line.split("#")[0].split()[2:]  # the options after "dmxshm run"
    assert argv[:1] == ["--duckiematrix"]
    # The README's port is the SDK's default: this test runs on it too.
    run = start_run(7501, tmp_path, *argv[1:])
    script = tmp_path / "agent.py"
    script.write_text(block)
    got = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    run.terminate()  # the README's run lasts a minute: Ctrl-C's sibling ends it
    end = run.communicate(timeout=60)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "(480, 640, 3) left wheel at" in got.stdout
    rad = float(got.stdout.split("left wheel at")[1].split()[0])
    assert rad > 1.0  # it drove
    assert "realtime mode" in end[0] + end[1]
