"""pybullet's build-date line stays out of dmxshm's output."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.timeout(60)
def test_importing_dmxshm_prints_nothing_and_keeps_stderr() -> None:
    code = ("import sys, dmxshm.batch.env, pybullet; "
            "print('out'); print('err', file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=50)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "out\n"
    assert out.stderr == "err\n"  # the line is gone, stderr itself still works


@pytest.mark.timeout(60)
def test_importing_dmxshm_works_without_a_stderr() -> None:
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "import dmxshm.batch.env" 2>&-'],
                         capture_output=True, text=True, timeout=50)
    assert out.returncode == 0 and out.stdout == ""
