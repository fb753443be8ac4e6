"""A CAN bus that stops replying: the spine goes to SHUTDOWN in that cycle, still
tries to send its stops, and the run names the bus (SpineBusError)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import dmxshm.spine.run as spine_run
from dmxshm.shm.names import list_entries
from dmxshm.spine.law import SCHEDULES
from dmxshm.spine.run import SpineBusError, SpineConfig, run
from dmxshm.spine.state_machine import State
from tests import spine_buses

SPINE_TIMEOUT_S = 90
REPLY_TIMEOUT_S = 0.2  # how long the spine waits for a reply: short, for a quick test
CMD_SLOTS = 2  # the command ring's slots (run.py): what a hung bus still takes
SHORT = dict(frequency_hz=200.0, duration_s=0.25, can_cycle_s=2e-3, reply_at_s=1.5e-3,
             plan_s=1e-3, realtime_priority=False, timeout_s=REPLY_TIMEOUT_S)


@pytest.mark.timeout(SPINE_TIMEOUT_S)
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("bus", ["goes_mute", "goes_deaf"])
def test_a_bus_that_stops_replying_gets_the_stops_and_is_named(
        monkeypatch: pytest.MonkeyPatch, schedule: str, bus: str) -> None:
    # The run starts its mock bus by this name: the failing one takes its place.
    monkeypatch.setattr(spine_run, "run_mock_bus", getattr(spine_buses, bus))
    cfg = SpineConfig(schedule=schedule, **SHORT)
    with pytest.raises(SpineBusError) as info:
        run(cfg)
    err = info.value
    recs, message = err.records, str(err)

    # Named: the run's can-bus child, and the ring's writer seen by the spine, are one.
    pids = set(re.findall(r"can-bus \(pid (\d+)", message))
    assert len(pids) == 1 and "no reply" in message and "RingTimeoutError" in message

    # The failure is in the cycle that collects the first CAN cycle left unanswered.
    sent = np.flatnonzero(np.isfinite(recs["t_send"]))
    failed = sent[spine_buses.REPLIES] + 1
    states = recs["state"]
    assert (states[:failed] != State.SHUTDOWN).all() and states[failed - 1] == State.ACT
    # It went to SHUTDOWN at once, after waiting its timeout for the reply...
    t_send = recs["t_send"]
    assert t_send[failed] - t_send[failed - 1] >= REPLY_TIMEOUT_S
    # ...and sent stops only, for its shutdown cycles, then ended.
    lag = int(schedule == "after-sleep")
    after = recs[failed:]
    assert len(after) == cfg.stop_cycles + lag
    assert (after["state"] == State.SHUTDOWN).all() and (after["stopping"] == 1).all()
    assert (after["wheels_rad_s"] == 0).all()
    assert err.report.figures.states["SHUTDOWN"] == len(after)
    # A mute bus takes every stop; a hung one, what its ring has room for.
    taken = int(np.isfinite(after["t_send"]).sum())
    assert taken == (len(after) if bus == "goes_mute" else CMD_SLOTS)
    assert f"({len(after) - taken} not taken by the bus)" in message
    assert not [e for e in list_entries() if e.pid == os.getpid()]
