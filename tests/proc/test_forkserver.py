"""The fork server: a forked child starts with what its supervisor has at that moment,
its exit status comes back as Popen gives it, and where the server cannot serve,
children are spawned as fresh interpreters."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dmxshm.proc import forkserver
from dmxshm.proc.forkserver import Forked
from dmxshm.proc.supervisor import Supervisor
from tests.proc import targets
from tests.proc.test_supervisor import ended, named, wait_until

TIMEOUT_S = 60
ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["gymnasium", "pettingzoo", "numba", "pybullet", "PIL", "dmxshm.network.engine"]


def run_script(code: str) -> dict[str, object]:
    """``code`` in a fresh interpreter (its own fork server); what it prints, as JSON."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=TIMEOUT_S, check=True,
                         env={**os.environ, forkserver.START_ENV: "fork"})
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(TIMEOUT_S)
def test_a_forked_child_has_the_environment_folder_and_output_of_its_start(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(forkserver.START_ENV, raising=False)
    with Supervisor() as sup:
        first = sup.start("agent-0", targets.where_am_i)  # the server is up from here
        wait_until(sup, ended(first))
        monkeypatch.setenv("DMXSHM_TEST_MARK", "set after the server started")
        monkeypatch.chdir(tmp_path)
        child = sup.start("agent-1", targets.where_am_i)
        wait_until(sup, ended(child))
    assert isinstance(child.popen, Forked)
    seen = child.outcome.result  # type: ignore[union-attr]
    assert seen["ppid"] == forkserver.server_pid() != os.getpid()
    assert seen["supervisor"] == os.getpid()
    assert seen["mark"] == "set after the server started"
    assert seen["cwd"] == str(tmp_path)
    assert seen["stdout"] == os.readlink("/proc/self/fd/1")
    assert seen["stdin_is_null"] and seen["main_file"] is None
    assert seen["cpus"] == sorted(os.sched_getaffinity(0))


@pytest.mark.timeout(TIMEOUT_S)
def test_exit_statuses_come_back_as_popen_gives_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(forkserver.START_ENV, raising=False)
    with Supervisor() as sup:
        three = sup.start("a", targets.exits, 3)
        sleeping = sup.start("b", targets.sleeps, 60.0)
        wait_until(sup, lambda: ended(three)() and named(sleeping)())
        assert isinstance(sleeping.popen, Forked)
        with pytest.raises(subprocess.TimeoutExpired):
            sleeping.popen.wait(0.01)
        sleeping.popen.kill()
        assert sleeping.popen.wait(TIMEOUT_S) == -signal.SIGKILL
        sleeping.popen.kill()  # once it is gone: nothing, as Popen
    assert three.popen.poll() == 3
    assert three.outcome is not None and three.outcome.exitcode == 3


@pytest.mark.timeout(TIMEOUT_S)
def test_spawned_when_asked_or_started_off_the_main_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kinds: list[type] = []

    def start_one() -> None:
        with Supervisor() as sup:
            child = sup.start("agent-0", targets.returns, 1)
            wait_until(sup, ended(child))
            assert child.outcome is not None and child.outcome.result == 1
            kinds.append(type(child.popen))

    monkeypatch.setenv(forkserver.START_ENV, "spawn")
    start_one()
    monkeypatch.setenv(forkserver.START_ENV, "fork")
    thread = threading.Thread(target=start_one)
    thread.start()
    thread.join(TIMEOUT_S)
    start_one()
    assert kinds == [subprocess.Popen, subprocess.Popen, Forked]
    monkeypatch.setenv(forkserver.START_ENV, "vfork")
    with Supervisor() as sup, pytest.raises(ValueError, match="DMXSHM_CHILD_START"):
        sup.start("agent-0", targets.returns, 1)


@pytest.mark.parametrize(("start", "config", "forked"), [
    (None, None, True),
    ("/tmp/coveragerc", None, False),  # coverage.py's older way: a fork saves nothing
    (None, {"patch": ["subprocess"]}, False),
    (None, {"patch": ["subprocess", "fork", "_exit"]}, True),
    (None, "not json", False),
])
def test_children_are_forked_only_where_coverage_keeps_their_measurements(
        monkeypatch: pytest.MonkeyPatch, start: str | None, config: object,
        forked: bool) -> None:
    monkeypatch.delenv(forkserver.START_ENV, raising=False)
    for name, value in (("COVERAGE_PROCESS_START", start),
                        ("COVERAGE_PROCESS_CONFIG", config)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value if isinstance(value, str) else
                               base64.b64encode(json.dumps(value).encode()).decode())
    assert forkserver.wanted() is forked


@pytest.mark.timeout(TIMEOUT_S)
def test_a_new_servers_children_have_only_the_core_imported() -> None:
    # What the server imports at its start is what every child needs, no more: the
    # heavy modules (and a role's) come with a child's target, or the server learns
    # them once a child of that target was started.
    seen = run_script(f"""
import json
from dmxshm.proc.supervisor import Supervisor
from tests.proc import targets
with Supervisor() as sup:
    child = sup.start("worker-0", targets.imported, {HEAVY!r} + ["numpy", "posix_ipc"])
    while not child.ended:
        sup.wait(0.1)
    print(json.dumps(dict(child.outcome.result, forked=type(child.popen).__name__)))
""")
    assert seen == {**dict.fromkeys(HEAVY, False), "numpy": True, "posix_ipc": True,
                    "forked": "Forked"}


@pytest.mark.timeout(TIMEOUT_S)
def test_after_the_server_dies_children_are_spawned() -> None:
    seen = run_script("""
import json, os, signal
from dmxshm.proc import forkserver
from dmxshm.proc.supervisor import Supervisor
from tests.proc import targets
kinds = []
with Supervisor() as sup:
    for _ in range(2):
        child = sup.start("worker-0", targets.returns, 7)
        while not child.ended:
            sup.wait(0.1)
        kinds.append([type(child.popen).__name__, child.outcome.result])
        if forkserver.server_pid() is not None:
            os.kill(forkserver.server_pid(), signal.SIGKILL)
            os.waitpid(forkserver.server_pid(), 0)
print(json.dumps(kinds))
""")
    assert seen == [["Forked", 7], ["Popen", 7]]


@pytest.mark.timeout(TIMEOUT_S)
def test_once_a_supervisor_closes_the_server_imports_its_targets_modules() -> None:
    # The first child of a role imports the role's module itself; once its
    # supervisor has closed, the server imports it, and later children have it.
    seen = run_script("""
import json, time
from dmxshm.proc.supervisor import Supervisor
from tests.proc import targets
ROLE = "dmxshm.network.engine"
def has_role():
    with Supervisor() as sup:
        child = sup.start("worker-0", targets.imported, [ROLE])
        while not child.ended:
            sup.wait(0.1)
        return child.outcome.result[ROLE]
before = has_role()
with Supervisor() as sup:  # a child of the role's target (it fails: no arguments)
    child = sup.start("engine", getattr(__import__(ROLE, fromlist=["x"]), "run_engine"))
    while not child.ended:
        sup.wait(0.1)
deadline = time.monotonic() + 30
while not (after := has_role()) and time.monotonic() < deadline:
    pass  # each try is a fork: the server imports once it is idle between two
print(json.dumps({"before": before, "after": after}))
""")
    assert seen == {"before": False, "after": True}
