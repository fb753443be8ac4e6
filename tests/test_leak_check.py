"""The suite's /dev/shm leak check (tests/conftest.py) sees what it must: a leak of a
process already gone, and one that a network's start-up sweep removed first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import procs
from tests.conftest import _our_pids, leaked_since, unlink_entry

pytestmark = pytest.mark.timeout(60)

_LEAKER = ("import os, posix_ipc; posix_ipc.SharedMemory("
           "f'/dmx-{os.getpid()}-0badcafe-leak', posix_ipc.O_CREX, size=4096).close_fd()")


def _leak_from_a_process_that_exits() -> str:
    """Run a process that creates a dmxshm-named segment and exits without unlinking it."""
    from dmxshm.shm.names import list_entries

    child = subprocess.run([sys.executable, "-c", _LEAKER], timeout=30, check=True)
    del child
    (entry,) = [e for e in list_entries() if e.what == "leak" and e.pid in procs.started_pids]
    return entry.name


@pytest.mark.alone  # the leak of a dead process: any other network's sweep removes it
def test_a_leak_of_a_process_already_gone_is_seen() -> None:
    from dmxshm.shm.names import list_entries

    before = {e.name for e in list_entries()}
    name = _leak_from_a_process_that_exits()
    leaked = leaked_since(before, _our_pids())  # the process is gone, yet it is ours
    assert [e.name for e in leaked] == [name]
    for entry in leaked:
        unlink_entry(entry)


@pytest.mark.alone
def test_a_leak_swept_by_a_network_start_is_reported_not_hidden() -> None:
    from dmxshm.network import supervisor

    name = _leak_from_a_process_that_exits()
    supervisor.sweep()  # what Network.start() does first: its creator is dead
    assert name in [e.name for e in procs.swept_entries]  # the check will see it...
    procs.swept_entries.clear()  # ...and fail this test, unless it is taken back here
