"""What the CLI's tests share: their timeout, and how a refusal is checked."""

from __future__ import annotations

import os

import pytest

from dmxshm.cli import EXIT_USAGE, main
from dmxshm.shm.names import list_entries

CLI_TIMEOUT_S = 120
"""The longest one CLI test may take (a run or a benchmark starts processes)."""


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``dmxshm ARGV``; it must exit 2 (EXIT_USAGE) with a message and no
    traceback, and leave /dev/shm as it was. Returns stderr."""
    before = ours()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == EXIT_USAGE, err
    assert "Traceback" not in err and "Error: " in err
    assert ours() <= before  # nothing was started
    return err


def ours() -> set[str]:
    """The names in /dev/shm that this process made (a run's supervisor makes them all;
    other runs on the machine are not ours to count)."""
    return {e.name for e in list_entries() if e.pid == os.getpid()}
