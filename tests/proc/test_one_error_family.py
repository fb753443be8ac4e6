"""One watch policy, one error family: a child SIGKILLed in the middle of a network
run, a batch or a ``dmxshm spine`` run is named as the root cause (not the peers
that then saw it fail) by the same ChildFailedError, with the same wording of its
end."""

from __future__ import annotations

import os
import signal

import pytest

from dmxshm.batch.vector import DmxVectorEnv
from dmxshm.network import Network, NetworkConfig
from dmxshm.proc.outcome import Cause
from dmxshm.proc.watch import ChildFailedError
from dmxshm.shm.names import list_entries
from tests import procs

TIMEOUT_S = 120


def _child_pid(name: str) -> int:
    return next(c.pid for c in procs.dmx_children() if c.name() == f"dmx-{name}")


def _network_kill(victim: str) -> ChildFailedError:
    cfg = NetworkConfig(robots=2, renderers=2, agents=2, camera=(0, 0), steps=100_000,
                        wait_timeout_s=5.0)
    with Network(cfg) as net:
        pid = net.supervisor.child(victim).pid
        sent: list[int] = []

        def progress(step: int) -> None:
            if step > 5 and not sent:
                os.kill(pid, signal.SIGKILL)
                sent.append(step)

        with pytest.raises(ChildFailedError) as info:
            net.run(on_progress=progress)
    info.value.killed_pid = pid  # type: ignore[attr-defined]
    return info.value


def _batch_kill(victim: str) -> ChildFailedError:
    env = DmxVectorEnv(4, num_workers=2, obs="state", timeout_s=10.0)
    try:
        env.reset(seed=0)
        pid = _child_pid(victim)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ChildFailedError) as info:
            for _ in range(100):
                env.step(env.action_space.sample())
    finally:
        env.close()
    info.value.killed_pid = pid  # type: ignore[attr-defined]
    return info.value


def _spine_kill(victim: str) -> ChildFailedError:
    from dmxshm.spine.run import SpineConfig, run

    killed: list[int] = []

    def progress(cycles_recorded: int) -> None:
        if not killed and cycles_recorded > SpineConfig().stop_cycles + 20:  # acting
            killed.append(_child_pid(victim))
            os.kill(killed[0], signal.SIGKILL)

    with pytest.raises(ChildFailedError) as info:
        run(SpineConfig(frequency_hz=200.0, duration_s=60.0, can_cycle_s=2e-3,
                        reply_at_s=1.5e-3, plan_s=1e-3, realtime_priority=False,
                        timeout_s=0.2), on_progress=progress)
    info.value.killed_pid = killed[0]  # type: ignore[attr-defined]
    return info.value


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("run,victim", [(_network_kill, "renderer-1"),
                                        (_network_kill, "agent-0"),
                                        (_batch_kill, "batch-1"),
                                        (_spine_kill, "spine")])
def test_a_killed_child_is_the_root_cause_in_every_kind_of_run(run, victim: str) -> None:  # noqa: ANN001
    err = run(victim)
    assert err.role == victim and err.pid == err.killed_pid  # type: ignore[attr-defined]
    assert err.outcome is not None and err.outcome.cause is Cause.KILLED
    assert err.cause == "signal 9 (SIGKILL)"
    assert f"(pid {err.pid})" in str(err) and "SIGKILL" in str(err)
    assert not [e for e in list_entries() if e.pid == os.getpid()]
