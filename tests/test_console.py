"""What the command line prints: progress with an honest ETA, without a terminal too."""

from __future__ import annotations

import io

import pytest

from dmxshm.cli import console


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_counts_steps_only_and_a_log_gets_a_line_every_few_seconds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(console.time, "monotonic", clock)
    out = io.StringIO()  # not a terminal: a log, CI
    bar = console.Progress("gym run", 1000, stream=out)
    bar.update(0)
    clock.now += 30.0  # start-up: processes spawn, worlds load; no step yet
    bar.update(100)  # the first step seen: the clock starts here
    clock.now += 1.0
    bar.update(200)  # 100 steps per second since the first step
    assert bar.eta_s(clock.now) == pytest.approx(8.0)  # 800 left, start-up not counted
    clock.now += 6.0
    bar.update(800)
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "gym run 0/1000 steps (0%)"
    assert lines[1].startswith("gym run 100/1000 steps (10%)")  # 30 s after the first line
    assert lines[2] == "gym run 800/1000 steps (80%), ETA 0:02"  # 5 s or more later
    assert len(lines) == 4 and lines[3].startswith("gym run 800/1000")
