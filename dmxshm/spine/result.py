"""What a spine's loop returns to its supervisor (:class:`~dmxshm.spine.loop.SpineLoop`)."""

from __future__ import annotations

from dataclasses import dataclass

from dmxshm.spine.state_machine import ShutdownReason


@dataclass(frozen=True)
class SpineResult:
    """What the spine did: the result of its loop (:meth:`~dmxshm.spine.loop.SpineLoop.run`).

    Attributes:
        cycles: cycles run (one record each).
        acting_cycles: cycles in ACT.
        skipped_cycles: clock ticks missed.
        states: cycles run in each state, by state name.
        shutdown_reason: why it went to SHUTDOWN.
        stop_signal: the signal that stopped it, if one did.
        bus_error: how the bus failed (it fell silent, died or refused a
            command), if it did: the stops could not all be confirmed.
        error: the traceback of a step that raised, if one did.
        unsent_commands: commands the bus did not take (their ``t_send`` is NaN).
        expired_actions: agent actions dropped for being too old.
        agent_started: its agent started it (None: no agent).
        scheduling: the scheduling policy it got.
    """

    cycles: int
    acting_cycles: int
    skipped_cycles: int
    states: dict[str, int]
    shutdown_reason: ShutdownReason
    stop_signal: int | None = None
    bus_error: str | None = None
    error: str | None = None
    unsent_commands: int = 0
    expired_actions: int = 0
    agent_started: bool | None = None
    scheduling: str = ""
