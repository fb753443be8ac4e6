"""The network spine is ``dmxshm spine``'s loop with the engine as its bus: run here
over an engine that answers on a cycle count the test sets (no process, no
physics), with agents that always have a command. Checked by cycle indices and
recorded instants: the observation behind a frame is the newest reply held at
its send, and the report's figures come out under the summary's frozen names."""

from __future__ import annotations

import math
import signal

import numpy as np
import pytest

from dmxshm.proc.outcome import Terminated
from dmxshm.spine import loop, network_spine
from dmxshm.spine.bus import BusReply
from dmxshm.spine.config import LoopSettings
from dmxshm.spine.law import Law
from dmxshm.spine.loop import SpineLoop
from dmxshm.spine.network_spine import (
    STOP_CYCLES,
    NetworkSpineResult,
    predicted_send_minus_obs_s,
)
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.spine.report import measure
from dmxshm.spine.state_machine import State

ROBOTS = 2
REPLY_AT_S = 2e-4
# 1 kHz for 30 acting cycles, as a network spine's settings (no plan time).
SETTINGS = LoopSettings(frequency_hz=1000.0, schedule="after-action", stop_cycles=STOP_CYCLES,
                        acting_cycles=30, start_limit=STOP_CYCLES + 100, bus_timeout_s=1.0,
                        plan_s=0.0)
SILENT_EVERY = 4  # the engine bus gives nothing new at every 4th collect


class Engine:
    """An engine bus (as :class:`~dmxshm.spine.engine_bus.EngineBus`) whose reply to a
    frame comes ``late`` collects after it, and nothing at every ``SILENT_EVERY``th."""

    def __init__(self, late: int) -> None:
        self.late = late
        self.frames: list[tuple[int, float, np.ndarray]] = []  # cycle, t_send, wheels
        self.collects = 0

    def send(self, cycle: int, t_send: float, wheels_rad_s: np.ndarray, wait_s: float) -> None:
        self.frames.append((cycle, t_send, np.broadcast_to(wheels_rad_s, (ROBOTS, 2)).copy()))

    def collect(self, wait_s: float | None) -> BusReply | None:
        self.collects += 1
        due = len(self.frames) - self.late  # the newest frame answered by now
        if self.collects % SILENT_EVERY == 0 or due < 0:
            return None
        cycle, t_send, _ = self.frames[due]
        return BusReply(cycle, t_send, t_send + REPLY_AT_S, t_send + REPLY_AT_S)

    def end(self) -> None:
        pass


class Agents:
    """A network's agents that always have a fresh command for every robot."""

    observes = False
    started = True
    expired = 0

    def __init__(self) -> None:
        self.action = np.zeros((), [("obs_cycle", "<i8"), ("t_obs", "<f8"), ("t_act", "<f8"),
                                    ("wheels_rad_s", "<f8", (ROBOTS, 2))])
        self.action["obs_cycle"] = -1
        self.action["wheels_rad_s"] = [[1.0, 2.0], [3.0, 4.0]]

    def publish(self, k: int, obs_cycle: int, t_obs: float, state: State) -> None:
        pass

    def take(self, answer_to: int | None = None, until: float = -math.inf) -> np.ndarray:
        return self.action

    def forget(self) -> None:
        pass


class Records:
    def write(self, rec: np.ndarray) -> None:
        pass

    def close_writer(self) -> None:
        pass


def run_loop(late: int) -> tuple[Engine, np.ndarray, NetworkSpineResult]:
    engine, history = Engine(late), np.zeros(SETTINGS.most_cycles, RECORD_DTYPE)
    done = SpineLoop(SETTINGS, engine, Records(), Agents(),  # type: ignore[arg-type]
                     history=history).run()
    recs = history[:done.cycles]
    law = Law("after-action", REPLY_AT_S, predicted_send_minus_obs_s(1e-3, REPLY_AT_S), None)
    report = measure(recs, done, law, frequency_hz=SETTINGS.frequency_hz, cpu=0)
    return engine, recs, NetworkSpineResult(report, [0, 0], [1, 1], -1, 0)


@pytest.mark.parametrize("late", [1, 2], ids=["reply within a period", "a period late"])
def test_a_frames_observation_is_the_newest_reply_held_at_its_send(late: int) -> None:
    engine, recs, _ = run_loop(late)
    # Every cycle sent one frame, with every robot's command while acting.
    assert [c for c, _, _ in engine.frames] == recs["cycle"].tolist()
    acting = recs[recs["state"] == State.ACT]
    assert len(acting) == SETTINGS.acting_cycles
    sent = {c: w for c, _, w in engine.frames}
    assert all((sent[int(k)] == Agents().action["wheels_rad_s"]).all() for k in acting["cycle"])
    assert (acting["wheels_rad_s"] == [1.0, 2.0]).all()  # the record keeps robot 0's
    # A cycle that collected a reply holds it: that frame's, `late` cycles back
    # (an engine replying T_o after a send: floor(T_o / T) + 1, the network's law);
    # one that collected nothing keeps the one before (its CAN fields are NaN).
    got = recs["can_cycle"] >= 0
    assert (recs["cycle"][got] - recs["can_cycle"][got] == late).all()
    assert (recs["obs_cycle"][got] == recs["can_cycle"][got]).all()
    none = np.flatnonzero(~got)[1:]
    assert len(none) and (recs["obs_cycle"][none] == recs["obs_cycle"][none - 1]).all()
    assert np.isnan(recs["can_start"][~got]).all()
    # t_obs is that reply's instant, on the bus's clock.
    by_cycle = {c: t for c, t, _ in engine.frames}
    held = acting[acting["obs_cycle"] >= 0]
    assert (held["t_obs"] == [by_cycle[int(c)] + REPLY_AT_S for c in held["obs_cycle"]]).all()


def test_the_report_keeps_the_summarys_names_and_figures() -> None:
    _, recs, result = run_loop(late=1)
    out = result.to_dict()
    timing, report = out["timing"], result.report
    states = timing["states"]
    assert out["cycles"] == timing["records"] == len(recs)
    assert states == {"SEND_STOPS": STOP_CYCLES, "RESET": 1, "ACT": SETTINGS.acting_cycles,
                      "SHUTDOWN": STOP_CYCLES}  # no IDLE: the states that occurred
    assert out["stop_cycles"] == out["cycles"] - states["ACT"]
    assert "stopped_by" not in timing and "host_steal_s" not in out
    # The law from the configuration alone, and the measured minus it, by another route.
    assert timing["predicted"] == {"schedule": "after-action", "reply_at_us": REPLY_AT_S * 1e6,
                                   "send_minus_obs_us": pytest.approx(800.0)}
    acting = recs[(recs["stopping"] == 0) & (recs["obs_cycle"] >= 0)]
    beyond = (acting["t_send"] - acting["t_obs"]) * 1e6 - 800.0
    assert timing["minus_predicted_us"]["send_minus_obs_us"]["p50"] == pytest.approx(
        np.median(beyond))
    for figure in (timing["delivery_us"]["spine_to_engine"], timing["engine_step_us"],
                   timing["send_minus_obs_us"], out["period_us"]):
        assert set(figure) == {"p50", "p99", "max"} and figure["p50"] <= figure["max"]
    # The same report as dmxshm spine's JSON: its keys, with the same figures.
    spine = report.to_dict()
    assert spine["cycles"] == out["cycles"] and spine["states"]["IDLE"] == 0
    assert spine["predicted"]["send_minus_obs_us"] == timing["predicted"]["send_minus_obs_us"]
    assert spine["delivery_us"]["spine_to_bus"]["p50"] == \
        timing["delivery_us"]["spine_to_engine"]["p50"]


def test_a_signal_before_the_loop_unwinds_and_one_in_it_sends_the_stops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop, "_stop_requested", None)
    monkeypatch.setattr(network_spine, "_cycling", False)
    with pytest.raises(Terminated):  # at the start gate: nothing to stop safely
        network_spine.request_stop(signal.SIGINT, None)
    monkeypatch.setattr(network_spine, "_cycling", True)
    network_spine.request_stop(signal.SIGTERM, None)  # Ctrl-C's SIGTERM: the first one says
    _, recs, result = run_loop(late=1)
    assert result.report.stop_signal == signal.SIGINT
    assert result.to_dict()["timing"]["stopped_by"] == "SIGINT"
    assert (recs["state"] == State.SHUTDOWN).sum() == STOP_CYCLES
    assert (recs["stopping"] == 1).all() and len(recs) == STOP_CYCLES
    assert result.report.acting_cycles == 0
