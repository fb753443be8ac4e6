"""Bad input and hostile surroundings: a clear error, nothing lost or leaked.

The rest of the bad-input table of docs/reliability.md is tested beside the
code it concerns (NaN commands, wrong answer shapes, agents that raise or do
not import, malformed maps, impossible configurations and CLI values, a
/dev/shm too small, a pre-created segment); this file holds the cases that
had no test of their own.
"""

from __future__ import annotations

import os

import posix_ipc
import pytest

from dmxshm.network import CommandsRejectedError, Network, NetworkConfig, NetworkError
from dmxshm.shm.names import list_entries
from tests.networks import runner

RUN_TIMEOUT_S = 120
SMALL = dict(camera=(0, 0), steps=12, wait_timeout_s=5.0)


run = runner(**SMALL)


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("agent", ["tests.agents:inf_wheels", "tests.agents:too_fast"])
def test_impossible_wheel_speeds_are_rejected_counted_and_the_robots_stopped(
        agent: str, capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CommandsRejectedError) as info:
        run(agent=agent)
    s = info.value.summary
    assert s.rejected_commands == s.received_commands == [12, 12]  # every command of both
    assert max(s.lane["distance_m"]) < 0.01  # never passed to physics: the robots stood
    assert info.value.robots == [0, 1] and "from agent-0" in str(info.value)
    # Each robot's first rejection was told at once, by the engine, with its values.
    warnings = [line for line in capfd.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 2 and all("at step 0" in w for w in warnings)
    assert "robot 0's command" in warnings[0] and "robot 1's command" in warnings[1]


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_an_answer_that_is_not_numbers_ends_the_run_naming_the_agent() -> None:
    with pytest.raises(NetworkError) as info:
        run(agent="tests.agents:strings")
    assert info.value.role == "agent-0" and "not a (2, 2) array" in str(info.value)


@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_objects_removed_under_a_starting_network_end_it_with_the_reason() -> None:
    # What systemd's RemoveIPC does at logout: unlink a user's /dev/shm
    # objects. A process that then tries to attach says why it cannot.
    net = Network(NetworkConfig(**{**SMALL, "steps": 60}))
    net.start()
    try:
        for entry in [e for e in list_entries() if e.pid == os.getpid()]:
            os.unlink(entry.path)
        with pytest.raises(NetworkError) as info:
            net.run()
    finally:
        net.close()
    assert "removed underneath" in str(info.value) and "RemoveIPC" in str(info.value)
    assert "Traceback" not in info.value.args[0].splitlines()[0]
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(60)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_open_a_runs_objects() -> None:
    from dmxshm.shm.segment import Segment

    net = Network(NetworkConfig(**SMALL))
    net.start()
    try:
        names = [(e.kind, e.name) for e in list_entries() if e.pid == os.getpid()]
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # as nobody, try every object of the run
            os.close(read)
            lines = []
            try:
                os.setgid(65534)
                os.setuid(65534)
                for kind, name in names:
                    try:
                        if kind == "segment":
                            Segment.attach(name)
                        else:
                            posix_ipc.Semaphore(name)
                        lines.append(f"OPENED {name}")
                    except Exception as exc:  # noqa: BLE001  what it says is the test
                        lines.append(f"{type(exc).__name__}: {exc}")
            finally:
                os.write(write, "\n".join(lines).encode())
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as fh:
            said = fh.read().splitlines()
        os.waitpid(child, 0)
    finally:
        net.close()
    assert names and len(said) == len(names), said
    assert not [line for line in said if line.startswith("OPENED")], said
    for line in said:
        assert "ermission" in line, line


@pytest.mark.timeout(120)
def test_a_slow_reader_loses_counted_slots_and_never_reads_a_torn_one() -> None:
    from dmxshm.bench.faults import ring_load

    out = ring_load(3.0, read_every_s=100e-6)
    assert out["writer_exit"] == 0
    assert out["writes"] > 10 * out["reads"] > 0  # the reader is far slower
    assert out["torn"] == 0
    assert out["backwards"] == 0  # every slot read at most once, in order...
    assert out["drops"] == out["gaps"]  # ...so the holes are exactly what was counted
    assert out["drops"] + out["reads"] == out["writes"]
    assert not [e for e in list_entries() if e.pid == os.getpid()]
