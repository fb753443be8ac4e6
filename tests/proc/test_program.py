"""Programs (``python -m module``) started through the process layer: named, with the
parent's interpreter and path, their secrets in the environment, and stopped."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from typing import Any

import pytest

from dmxshm.proc import program
from tests.proc.echo_program import VAR

TIMEOUT_S = 60
WAIT_S = 30.0  # the longest a test waits for the program's line
SHORT_GRACE_S = 0.5


def first_line(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The JSON line the program prints once it is up."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
    assert ready, "the program said nothing in time"
    return json.loads(proc.stdout.readline())


@pytest.mark.timeout(TIMEOUT_S)
def test_a_program_runs_as_main_named_with_our_path_and_its_environment() -> None:
    proc = program.start("echo", "tests.proc.echo_program", ["--x", "1"], env={VAR: "s3cret"})
    try:
        seen = first_line(proc)
        assert seen == {"argv": ["--x", "1"], "var": "s3cret", "name": "dmx-echo",
                        "ppid": os.getpid(), "path": sys.path, "main": "__main__",
                        "gymnasium": False}
        assert "s3cret" not in " ".join(proc.args)  # type: ignore[arg-type]
    finally:
        program.stop(proc)
    assert proc.returncode == -signal.SIGTERM
    assert proc.stdout is not None and proc.stdout.closed


@pytest.mark.timeout(TIMEOUT_S)
def test_a_program_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    proc = program.start("echo", "tests.proc.echo_program", ["--ignore-term"])
    try:
        first_line(proc)  # its handler is in place
    finally:
        program.stop(proc, grace_s=SHORT_GRACE_S)
    assert proc.returncode == -signal.SIGKILL
