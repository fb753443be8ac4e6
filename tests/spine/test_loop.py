"""The spine loop in this process, over a bus in this process: a step that
raises sends the spine to SHUTDOWN; the loop still sends its stops and never raises."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dmxshm.spine.bus import BusReply
from dmxshm.spine.loop import SpineLoop
from dmxshm.spine.run import SpineConfig
from dmxshm.spine.state_machine import ShutdownReason, State

# 1 kHz for 20 acting cycles: the loop's own clock, some 30 ms in all.
CFG = SpineConfig(frequency_hz=1000.0, duration_s=0.02, can_cycle_s=0.5e-3, plan_s=0.1e-3,
                  realtime_priority=False, timeout_s=0.2)
BROKEN_CYCLE = 12  # acting by then: 5 stops, a reset, then actions


class InstantBus:
    """A bus (:class:`~dmxshm.spine.bus.Bus`) that answers each command at once."""

    def __init__(self, broken_cycle: int) -> None:
        self.broken_cycle = broken_cycle
        self.taken: list[tuple[int, np.ndarray]] = []  # (cycle, wheels) of each command
        self.replies: list[BusReply] = []

    def send(self, cycle: int, t_send: float, wheels_rad_s: np.ndarray, wait_s: float) -> None:
        if cycle == self.broken_cycle:
            raise ValueError("a bug in a step, on purpose")
        self.taken.append((cycle, wheels_rad_s.copy()))
        self.replies.append(BusReply(cycle, t_send, t_send, t_send))

    def collect(self, wait_s: float | None) -> BusReply | None:
        return self.replies.pop(0) if self.replies else None

    def end(self) -> None:
        pass


class Records:
    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []

    def write(self, rec: np.ndarray) -> None:
        self.rows.append(rec.copy())

    def close_writer(self) -> None:
        pass


@pytest.mark.parametrize("schedule", ["after-action", "after-sleep"])
def test_a_step_that_raises_shuts_the_spine_down_with_its_stops(schedule: str) -> None:
    cfg = replace(CFG, schedule=schedule)
    bus, records = InstantBus(BROKEN_CYCLE), Records()
    result = SpineLoop(cfg.loop_settings(), bus, records).run()  # type: ignore[arg-type]  # never raises
    recs = np.array(records.rows)
    assert result.shutdown_reason is ShutdownReason.ERROR
    assert result.error is not None and f"cycle {BROKEN_CYCLE}" in result.error
    assert "ValueError: a bug in a step, on purpose" in result.error
    # SHUTDOWN from the broken cycle on, for its shutdown cycles, then the end.
    states = recs["state"]
    assert states[BROKEN_CYCLE - 1] == State.ACT
    shutdown = cfg.stop_cycles + int(schedule == "after-sleep")
    assert (states[BROKEN_CYCLE:] == State.SHUTDOWN).all()
    assert len(recs) == BROKEN_CYCLE + shutdown == result.cycles
    # The broken cycle sent nothing; each later one sent a stop, which the bus took.
    assert np.isnan(recs["t_send"][BROKEN_CYCLE])
    after = [(k, w) for k, w in bus.taken if k > BROKEN_CYCLE]
    assert [k for k, _ in after] == list(range(BROKEN_CYCLE + 1, len(recs)))
    assert all((w == 0).all() for _, w in after)
    assert result.bus_error is None and result.unsent_commands == 0
