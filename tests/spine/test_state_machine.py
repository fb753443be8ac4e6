"""The spine's state machine, driven cycle by cycle as the loop drives it."""

from __future__ import annotations

import signal
from collections.abc import Callable

from dmxshm.spine.state_machine import ShutdownReason, State, StateMachine

STOPS, ACTING, SHUTDOWN_CYCLES, START_LIMIT = 5, 8, 6, 12
SEND, RESET, IDLE, ACT, DOWN = (State.SEND_STOPS, State.RESET, State.IDLE, State.ACT,
                                State.SHUTDOWN)

Event = Callable[[StateMachine, int], None]  # what happens in cycle k, mid-cycle


def drive(machine: StateMachine, stop_at: int | None = None, started_at: int = 0,
          acts: Callable[[int], bool] = lambda k: True, event: Event | None = None,
          max_cycles: int = 100) -> list[State]:
    """The state of each cycle until the machine ends (a stop signal from cycle
    ``stop_at``; the agent started from ``started_at``; ``acts(k)``: an action came)."""
    states = []
    for k in range(max_cycles):
        stop = signal.SIGINT if stop_at is not None and k >= stop_at else None
        if not machine.begin_cycle(stop, agent_started=k >= started_at):
            return states
        if machine.acting:
            machine.planned(acts(k))
        if event is not None:
            event(machine, k)
        machine.end_cycle()
        states.append(machine.state)
    raise AssertionError(f"no end after {max_cycles} cycles: {states}")


def machine(has_agent: bool = False) -> StateMachine:
    return StateMachine(stop_cycles=STOPS, acting_cycles=ACTING, shutdown_cycles=SHUTDOWN_CYCLES,
                        start_limit=START_LIMIT, has_agent=has_agent)


def test_stops_reset_acting_then_shutdown() -> None:
    m = machine()
    idle_at = {STOPS + 3, STOPS + 4}
    states = drive(m, acts=lambda k: k not in idle_at)
    acting = [IDLE if STOPS + 1 + i in idle_at else ACT for i in range(ACTING)]
    assert states == [SEND] * STOPS + [RESET] + acting + [DOWN] * SHUTDOWN_CYCLES
    assert m.reason is ShutdownReason.DONE and m.stop_signal is None
    assert m.counts == {SEND: STOPS, RESET: 1, IDLE: 2, ACT: ACTING - 2, DOWN: SHUTDOWN_CYCLES}
    assert m.bus_error is None and m.error is None


def test_an_agent_that_never_starts_gets_stops_until_the_limit() -> None:
    m = machine(has_agent=True)
    assert drive(m, started_at=10**6) == [SEND] * START_LIMIT + [DOWN] * SHUTDOWN_CYCLES
    assert m.reason is ShutdownReason.NO_AGENT


def test_a_late_agent_is_waited_for_after_the_stop_cycles() -> None:
    m = machine(has_agent=True)
    states = drive(m, started_at=STOPS + 3)
    # the stop cycles, stops until it started, then a reset and acting
    assert states[:STOPS + 5] == [SEND] * (STOPS + 3) + [RESET, ACT]
    assert m.reason is ShutdownReason.DONE


def test_a_signal_shuts_down_at_the_next_cycle_and_the_stops_all_go() -> None:
    m = machine()
    stop_at = STOPS + 3
    states = drive(m, stop_at=stop_at)  # the signal stays recorded: SHUTDOWN still ends
    assert states == [SEND] * STOPS + [RESET] + [ACT] * 2 + [DOWN] * SHUTDOWN_CYCLES
    assert m.reason is ShutdownReason.SIGNAL and m.stop_signal == signal.SIGINT


def test_a_bus_failure_shuts_down_in_its_own_cycle() -> None:
    failed_at = STOPS + 4

    def bus_fails(m: StateMachine, k: int) -> None:
        if k == failed_at:
            m.fail(ShutdownReason.BUS, "no reply")

    m = machine()
    states = drive(m, event=bus_fails)
    assert states == [SEND] * STOPS + [RESET] + [ACT] * 3 + [DOWN] * SHUTDOWN_CYCLES
    assert states[failed_at] is DOWN
    assert m.reason is ShutdownReason.BUS and m.bus_error == "no reply" and m.error is None


def test_a_failure_during_shutdown_is_kept_beside_its_reason() -> None:
    def fails_twice(m: StateMachine, k: int) -> None:
        if m.state is DOWN:
            m.fail(ShutdownReason.BUS, f"silent in cycle {k}")

    m = machine()
    states = drive(m, event=fails_twice)
    assert states.count(DOWN) == SHUTDOWN_CYCLES  # a failure does not restart the shutdown
    assert m.reason is ShutdownReason.DONE
    assert m.bus_error == f"silent in cycle {STOPS + 1 + ACTING}"  # the first one
