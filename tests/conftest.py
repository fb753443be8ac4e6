"""Suite-wide fixtures: every test must leave /dev/shm as it found it.

The autouse ``shm_leak_check`` fixture snapshots the dmxshm entries of
/dev/shm before each test and fails the test (at teardown) when entries that
this pytest process or one of its children created are still there, after
unlinking them so that one leak does not cascade into later tests. Entries
created by other processes (another developer's run on the same machine) are
neither reported nor touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import posix_ipc
import psutil
import pytest
from hypothesis import settings

from dmxshm.shm.names import Entry, list_entries
from dmxshm.shm.registry import Registry
from tests import procs

# No example database (it would write .hypothesis/ into the working tree) and
# a fixed seed, so the suite is deterministic; no deadline, because a shared
# CI machine makes the first shm_open/mmap of an example arbitrarily slow.
settings.register_profile("dmxshm", database=None, derandomize=True, deadline=None)
settings.load_profile("dmxshm")


def _our_pids() -> set[int]:
    me = psutil.Process()
    return {me.pid, *(c.pid for c in me.children(recursive=True)), *procs.started_pids}


def unlink_entry(entry: Entry) -> None:
    """Remove one /dev/shm entry, whatever its kind; gone already is fine."""
    try:
        if entry.kind == "semaphore":
            posix_ipc.unlink_semaphore(entry.name)
        else:
            posix_ipc.unlink_shared_memory(entry.name)
    except posix_ipc.ExistentialError:
        pass


def leaked_since(before: set[str], pids: set[int]) -> list[Entry]:
    """Entries of ``pids`` that were not in the ``before`` snapshot."""
    return [e for e in list_entries() if e.name not in before and e.pid in pids]


@pytest.fixture(autouse=True)
def shm_leak_check() -> Iterator[None]:
    """Fail the test if it leaves dmxshm segments or semaphores behind."""
    before = {e.name for e in list_entries()}
    procs.started_pids.clear()
    yield
    leaked = leaked_since(before, _our_pids())
    for entry in leaked:
        unlink_entry(entry)
    if leaked:
        pytest.fail(
            "test left shared-memory objects in /dev/shm (now unlinked): "
            + ", ".join(sorted(f"{e.kind} {e.name}" for e in leaked)),
            pytrace=False,
        )


@pytest.fixture(scope="session", autouse=True)
def shm_session_check() -> Iterator[None]:
    """At the end of the run, nothing created by this process may remain."""
    yield
    left = [e for e in list_entries() if e.pid == os.getpid()]
    for entry in left:
        unlink_entry(entry)
    assert not left, f"the test session left {len(left)} object(s) in /dev/shm: {left}"


@pytest.fixture
def registry() -> Iterator[Registry]:
    """A fresh network registry, unlinked at teardown whatever the test did."""
    reg = Registry()
    try:
        yield reg
    finally:
        reg.unlink_all()
