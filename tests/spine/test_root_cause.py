"""A spine run whose process dies names the dead one, not the peer that then timed
out waiting for it, whatever order the supervisor sees their ends in.

Both tests make the supervisor look late (its progress callback blocks it):
by its next look the victim is dead *and* its peer has ended too, so both
ends come in one batch, and only the ranking tells them apart.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from dmxshm.proc.outcome import Cause
from dmxshm.shm.names import list_entries
from dmxshm.spine.run import SpineBusError, SpineConfig, SpineProcessError, run
from dmxshm.spine.state_machine import State
from tests import procs

SPINE_TIMEOUT_S = 90
REPLY_TIMEOUT_S = 0.2  # how long the spine and the bus wait for each other
SHORT = dict(frequency_hz=200.0, duration_s=60.0, can_cycle_s=2e-3, reply_at_s=1.5e-3,
             plan_s=1e-3, realtime_priority=False, timeout_s=REPLY_TIMEOUT_S)
ACTING = SpineConfig().stop_cycles + 20  # cycles recorded: its stops, a reset, acting


def kill_then_await(victim: str, peer: str, pids: dict[str, int]):  # noqa: ANN201
    """A progress callback: once the spine acts, SIGKILL the child ``victim`` and wait,
    without reaping it, until the child ``peer`` has ended (the supervisor, blocked
    meanwhile, then sees both ends at once). ``pids`` gets both pids."""
    def progress(cycles_recorded: int) -> None:
        if pids or cycles_recorded < ACTING:
            return
        children = {c.name(): c.pid for c in procs.dmx_children()}
        pids.update(victim=children[f"dmx-{victim}"], peer=children[f"dmx-{peer}"])
        os.kill(pids["victim"], signal.SIGKILL)
        procs.await_end(pids["peer"])
    return progress


@pytest.mark.timeout(SPINE_TIMEOUT_S)
def test_a_killed_spine_is_named_not_the_bus_that_waited_for_it() -> None:
    pids: dict[str, int] = {}
    with pytest.raises(SpineProcessError) as info:
        run(SpineConfig(**SHORT), on_progress=kill_then_await("spine", "can-bus", pids))
    err = info.value
    # The bus failed too (its wait for the spine's next command), and was seen
    # no later than the spine; the spine's death is the cause.
    assert (err.role, err.pid, err.outcome.cause) == ("spine", pids["victim"], Cause.KILLED)
    assert str(err) == f"spine (pid {pids['victim']}) died: signal 9 (SIGKILL); the run was " \
                       "stopped."
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(SPINE_TIMEOUT_S)
def test_a_killed_bus_is_named_and_the_spine_shutdown_it_saw_is_reported() -> None:
    pids: dict[str, int] = {}
    with pytest.raises(SpineBusError) as info:
        run(SpineConfig(**SHORT), on_progress=kill_then_await("can-bus", "spine", pids))
    err = info.value
    message = str(err)
    # What the spine saw of it, then the bus's own end, last (the line a reader
    # sees at the bottom, and the one the fault suite reads): no traceback, it
    # did not raise.
    assert message.startswith(f"The spine (pid {pids['peer']}) saw: no reply")
    assert "went to SHUTDOWN" in message
    assert message.splitlines()[-1] == (f"CAN bus can-bus (pid {pids['victim']}) died: "
                                        "signal 9 (SIGKILL).")
    # It went on to send stops only, through SHUTDOWN, and ended.
    recs = err.records
    shutdown = recs["state"] == State.SHUTDOWN
    assert shutdown.any() and (recs["state"][np.argmax(shutdown):] == State.SHUTDOWN).all()
    assert (recs["wheels_rad_s"][shutdown] == 0).all()
    assert err.report.figures.states["SHUTDOWN"] == int(shutdown.sum())
    assert not [e for e in list_entries() if e.pid == os.getpid()]
