"""A sweep leaves alone the live objects of a network in another PID namespace.

Two containers that share /dev/shm but not their PID namespace see each
other's objects; the pid in a name from the other namespace names nobody
here. The other namespace is made with ``unshare --pid --fork`` (plus a user
namespace where we are not root). In it, a process whose pid is free out
here (so by its pid alone its objects look orphaned) creates a ring and stays
alive; the sweep of every network start must keep its objects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import posix_ipc
import pytest

from dmxshm.shm.clean import creator_alive, scan, sweep
from dmxshm.shm.names import list_entries, own_pidns, parse_entry

# Starting the namespace, forking until a pid is free out here, importing numpy
# and dmxshm there: generous for a slow machine.
CREATOR_READY_TIMEOUT_S = 60.0
# How long the creator gets to unlink what it made and exit once told.
CREATOR_EXIT_TIMEOUT_S = 30.0
# unshare's own failure (not permitted, no such option) comes back at once.
PROBE_TIMEOUT_S = 30.0

# Runs as pid 1 of the new namespace, whose /proc is still ours (no
# --mount-proc): /proc/<n> tells whether pid n is taken *out here*.
CREATOR = textwrap.dedent("""
    import json, os, sys
    while True:
        child = os.fork()
        if child == 0:
            if os.path.exists(f"/proc/{os.getpid()}"):
                os._exit(3)  # this pid names a process out here too: try the next one
            break
        code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        if code != 3:
            sys.exit(code)
    from dmxshm.shm.names import own_pidns
    from dmxshm.shm.registry import Registry
    from dmxshm.shm.ring import Ring
    from tests.shm.slots import FIELD_DT
    with Registry() as reg:
        ring = Ring.create(reg, "ns", FIELD_DT, nslots=2)
        print(json.dumps({"names": reg.names, "pid": os.getpid(), "pidns": own_pidns()}),
              flush=True)
        sys.stdin.readline()  # alive until the test lets go
        ring.close()
""")


def _unshare_command() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) here to make a PID namespace")
    command = [unshare, "--pid", "--fork", "--kill-child"]
    if os.geteuid() != 0:
        command += ["--user", "--map-root-user"]
    probe = subprocess.run([*command, "true"], capture_output=True, text=True,
                           timeout=PROBE_TIMEOUT_S, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here ({' '.join(command)}): "
                    f"{probe.stderr.strip() or probe.returncode}")
    return command


def _unlink(names: list[str]) -> None:
    for name in names:
        try:
            posix_ipc.unlink_shared_memory(name)
        except posix_ipc.ExistentialError:
            try:
                posix_ipc.unlink_semaphore(name)
            except posix_ipc.ExistentialError:
                pass


@pytest.fixture
def other_namespace_network() -> Iterator[dict]:
    """A live creator in a new PID namespace: its names, its pid there, its namespace."""
    proc = subprocess.Popen([*_unshare_command(), sys.executable, "-c", CREATOR],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    made: dict = {"names": []}
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline()  # bounded by pytest-timeout
        assert line, f"the creator in the new namespace ended ({proc.wait()}) before it spoke"
        made = json.loads(line)
        yield made
        proc.stdin.close()  # let go: it unlinks what it made and exits
        assert proc.wait(CREATOR_EXIT_TIMEOUT_S) == 0
        left = {e.name for e in list_entries()} & set(made["names"])
        assert not left, f"the creator left {sorted(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()  # --kill-child takes the whole namespace with it
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
        _unlink(made["names"])


@pytest.mark.timeout(CREATOR_READY_TIMEOUT_S + CREATOR_EXIT_TIMEOUT_S + 2 * PROBE_TIMEOUT_S)
def test_the_start_up_sweep_keeps_a_live_network_of_another_pid_namespace(
        other_namespace_network: dict) -> None:
    names = set(other_namespace_network["names"])
    assert len(names) == 3  # the ring and its free and filled semaphores
    assert other_namespace_network["pidns"] != own_pidns()
    entries = [e for e in list_entries() if e.name in names]
    assert {e.name for e in entries} == names
    # The premise: judged by its pid, as a sweep always did, the network looks dead.
    assert not [e.name for e in entries if creator_alive(e, os.stat(e.path))]
    assert {e.pid for e in entries} == {other_namespace_network["pid"]}
    assert {e.pidns for e in entries} == {other_namespace_network["pidns"]}

    removed = sweep()  # what every network start does
    assert not {f.entry.name for f in removed} & names
    assert {e.name for e in list_entries()} >= names  # all still there

    found = {f.entry.name: f for f in scan() if f.entry.name in names}
    assert set(found) == names
    assert all(f.other_namespace and f.creator_alive for f in found.values())
    # They can still be removed on purpose (dry runs: the creator unlinks them).
    would = {f.entry.name for f in sweep(dry_run=True, all_namespaces=True)}
    assert would >= names
    would = {f.entry.name for f in sweep(dry_run=True, remove_live=True)}
    assert would >= names


def test_an_entry_of_this_namespace_is_judged_by_its_pid(tmp_path) -> None:  # noqa: ANN001
    ours, dead_pid = own_pidns(), 2**22 + 1  # above pid_max: never a live process
    assert ours is not None
    for token in (f"0badcafe{ours:08x}", "0badcafe"):  # our namespace, or none said
        (tmp_path / f"dmx-{dead_pid}-{token}-orphan").write_bytes(b"x")
    other = tmp_path / f"dmx-{dead_pid}-0badcafe{(ours + 1) % 2**32:08x}-elsewhere"
    other.write_bytes(b"x")
    removed = sorted(f.entry.what for f in sweep(shm_dir=str(tmp_path)))
    assert removed == ["orphan", "orphan"]
    assert [p.name for p in tmp_path.iterdir()] == [other.name]
    entry = parse_entry(other.name)
    assert entry is not None and entry.pidns == (ours + 1) % 2**32
