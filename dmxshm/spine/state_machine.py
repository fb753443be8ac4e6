"""The spine's states and their transitions, as Vulp's ``StateMachine``.

::

    SEND_STOPS --(stop_cycles sent, agent started)--> RESET --> IDLE <--> ACT
        |                                                          |
        +--(agent never started, signal)--> SHUTDOWN <--(acted, signal, failure)
                                                |
                                  (shutdown_cycles sent) --> end

Transitions happen at the top of a cycle, except two: the plan moves
between IDLE and ACT (an action came or not), and a failure (a silent or
dead bus, an error in a step) moves to SHUTDOWN at once, so that the rest of
that cycle already sends stops. SHUTDOWN always runs its cycles: the spine
never ends without trying to send its stops.
"""

from __future__ import annotations

import enum


class State(enum.IntEnum):
    """The spine's states, as a real spine's (Vulp's ``State``); recorded as ints."""

    SEND_STOPS = 0  # stop commands until the agent starts us (>= stop_cycles)
    RESET = 1  # one cycle: forget the last action
    IDLE = 2  # no fresh action: stop commands
    ACT = 3  # send the latest action
    SHUTDOWN = 4  # stop commands again (>= stop_cycles), then the end


class ShutdownReason(enum.Enum):
    """Why the spine went to SHUTDOWN."""

    DONE = "done"  # it acted for the run's duration
    NO_AGENT = "no agent"  # its agent never started it
    SIGNAL = "signal"  # SIGINT or SIGTERM from outside
    BUS = "bus"  # the CAN bus fell silent, died or refused a command
    ERROR = "error"  # a step of the cycle raised


class StateMachine:
    """The state of the spine, its cycle counts per state, and why it shut down.

    Args:
        stop_cycles: stop commands sent before acting.
        acting_cycles: IDLE and ACT cycles to run, then SHUTDOWN.
        shutdown_cycles: SHUTDOWN cycles to run, then the end.
        start_limit: with an agent, the most SEND_STOPS cycles to wait for it.
        has_agent: actions come from an agent that must start the spine.

    Attributes:
        state: the current state.
        counts: cycles run in each state.
        reason: why it shut down (None before SHUTDOWN).
        stop_signal: the signal that stopped it, if one did.
        bus_error: the bus's failure (its ring's error), if it failed.
        error: the traceback of a step that raised, if one did.
    """

    def __init__(self, stop_cycles: int, acting_cycles: int, shutdown_cycles: int,
                 start_limit: int, has_agent: bool) -> None:
        self.stop_cycles = stop_cycles
        self.acting_cycles = acting_cycles
        self.shutdown_cycles = shutdown_cycles
        self.start_limit = start_limit
        self.has_agent = has_agent
        self.state = State.SEND_STOPS
        self.counts = dict.fromkeys(State, 0)
        self.reason: ShutdownReason | None = None
        self.stop_signal: int | None = None
        self.bus_error: str | None = None
        self.error: str | None = None

    def begin_cycle(self, stop_signal: int | None, agent_started: bool) -> bool:
        """Move to this cycle's state; False once the shutdown stops are all sent.

        Args:
            stop_signal: a signal that asked for a stop, if one came.
            agent_started: the agent has sent an action (ignored without one).
        """
        state, counts = self.state, self.counts
        if stop_signal and state is not State.SHUTDOWN:
            self.stop_signal = stop_signal
            self.shut_down(ShutdownReason.SIGNAL)
        elif state is State.SEND_STOPS and counts[State.SEND_STOPS] >= self.stop_cycles:
            started = not self.has_agent or agent_started
            if started:
                self.state = State.RESET
            elif counts[State.SEND_STOPS] >= self.start_limit:
                self.shut_down(ShutdownReason.NO_AGENT)
        elif state is State.RESET:
            self.state = State.IDLE
        elif state in (State.IDLE, State.ACT) and (
                counts[State.IDLE] + counts[State.ACT] >= self.acting_cycles):
            self.shut_down(ShutdownReason.DONE)
        elif state is State.SHUTDOWN and counts[State.SHUTDOWN] >= self.shutdown_cycles:
            return False
        return True

    @property
    def acting(self) -> bool:
        """In IDLE or ACT: the plan may send an action."""
        return self.state in (State.IDLE, State.ACT)

    def planned(self, acted: bool) -> None:
        """The plan of an acting cycle sent an action (ACT) or a stop (IDLE)."""
        self.state = State.ACT if acted else State.IDLE

    def shut_down(self, reason: ShutdownReason) -> None:
        """Go to SHUTDOWN now (a first reason is kept)."""
        self.state = State.SHUTDOWN
        if self.reason is None:
            self.reason = reason

    def fail(self, reason: ShutdownReason, message: str) -> None:
        """Something failed (``BUS`` or ``ERROR``): SHUTDOWN now; the first failure of
        each kind is kept to report, and a shutdown already under way keeps its reason."""
        if reason is ShutdownReason.BUS:
            self.bus_error = self.bus_error or message
        else:
            self.error = self.error or message
        self.shut_down(reason)

    def end_cycle(self) -> None:
        """Count the cycle in the state it ended in."""
        self.counts[self.state] += 1
