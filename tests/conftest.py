"""Suite-wide fixtures: every test must leave /dev/shm as it found it.

The autouse ``shm_leak_check`` fixture snapshots the dmxshm entries of
/dev/shm before each test and fails the test (at teardown) when entries that
this pytest process or one of its children created are still there, after
unlinking them so that one leak does not cascade into later tests. Entries
created by other processes (another developer's run on the same machine) are
neither reported nor touched.

"Its children" includes those already gone: every process a test starts through
``subprocess`` (a CLI run, a client) is recorded at its start, so the leaks of a
run that exited are still its test's. And a sweep (every ``Network.start()``
removes the objects of dead creators) that removes one of this test's leaks
before the check looks reports it to the check instead of hiding it (an
in-process network's; a CLI run in a subprocess sweeps unseen).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Iterator
from typing import Any

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


_popen_init = subprocess.Popen.__init__


def _recorded_popen_init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
    """``subprocess.Popen`` that records the pid of what it started (see the docstring)."""
    _popen_init(self, *args, **kwargs)
    procs.started_pids.add(self.pid)


subprocess.Popen.__init__ = _recorded_popen_init  # type: ignore[method-assign]


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
def alone_when_marked(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``alone`` runs while no other worker runs one.

    Every network start sweeps the objects of dead creators (``dmxshm clean``): a
    test that looks at what a killed run left (its orphans, until a clean) would
    see another worker's network sweep them first. Each test holds a lock shared
    by the workers of the run; an ``alone`` test holds it exclusively. A gate
    before it keeps the others from starting new tests while an ``alone`` one
    waits (flock prefers no one: it could wait for ever).
    """
    if not hasattr(request.config, "workerinput"):
        yield  # one process: nothing runs beside it
        return
    folder = tmp_path_factory.getbasetemp().parent
    mode = fcntl.LOCK_EX if request.node.get_closest_marker("alone") else fcntl.LOCK_SH
    with open(folder / "dmxshm-tests.gate", "a") as gate, \
            open(folder / "dmxshm-tests.lock", "a") as lock:
        fcntl.flock(gate, mode)
        try:
            fcntl.flock(lock, mode)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def shm_leak_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if it leaves dmxshm segments or semaphores behind."""
    from dmxshm.network import supervisor
    from dmxshm.shm import clean

    before = {e.name for e in list_entries()}
    procs.started_pids.clear()
    swept = procs.swept_entries
    swept.clear()
    real_sweep = clean.sweep

    def recording_sweep(*args: Any, **kwargs: Any) -> list[clean.Found]:
        found = real_sweep(*args, **kwargs)
        swept.extend(f.entry for f in found if not kwargs.get("dry_run"))
        return found

    # A network's start-up sweep only (an explicit `dmxshm clean` is the test's own doing).
    monkeypatch.setattr(supervisor, "sweep", recording_sweep)
    yield
    pids = _our_pids()
    leaked = leaked_since(before, pids)
    leaked += [e for e in swept if e.name not in before and e.pid in pids
               and e.name not in {x.name for x in leaked}]
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
