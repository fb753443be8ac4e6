"""What each process of a network reports when it ends (typed, so a renamed
field is an error, not a silent zero in the summary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class EngineResult:
    """The engine's figures (times in seconds).

    ``expired_commands``, ``late_steps`` and ``max_lag_s`` are None where the
    engine does not measure them: in gym mode no command expires and no step is
    late by construction; with a realtime spine the spine expires commands and
    keeps the schedule (its report has them).

    ``taps`` is what the taps the network was given report in the engine, by name
    (:class:`~dmxshm.network.plan.TapSpec`; ``dmxshm bench network``'s floor).
    ``digests`` are the engine's streams (``states``, ``commands``) of the
    trajectory digest (:mod:`dmxshm.network.taps.digest`); ``pose_digest`` is the
    pose-only digest.
    """

    steps: int
    sim_time_s: float
    wall_time_s: float
    physics_s: float
    metrics_s: float
    pose_digest: str
    digests: dict[str, str]
    rejected_commands: list[int]
    expired_commands: list[int] | None
    lane: dict[str, list[float]]
    received_commands: list[int] = field(default_factory=list)
    first_rejections: dict[int, str] = field(default_factory=dict)
    late_steps: int | None = 0
    max_lag_s: float | None = 0.0
    final_poses: list[list[float]] = field(default_factory=list)
    start_poses: list[list[float]] = field(default_factory=list)
    cmd_drops: int = 0
    state_drops: int = 0
    taps: dict[str, Any] = field(default_factory=dict)
    command_latency: dict[str, dict[str, float]] | None = None
    episodes: dict[str, int] | None = None


@dataclass
class RendererResult:
    """A renderer's figures: sensor work, what it produced and recorded."""

    steps: int
    render_s: float
    produced: dict[str, int]
    frames: dict[int, list[tuple[np.ndarray, int, float]]]  # (frame, step, sim time)
    recorded: int
    elapsed_s: float = 0.0
    missed: dict[str, int] = field(default_factory=dict)
    fresh: dict[str, int] = field(default_factory=dict)  # ticks that read a new state
    repeated: dict[str, int] = field(default_factory=dict)  # ticks that read the last one's
    repeated_late: dict[str, int] = field(default_factory=dict)  # of those, after a late tick
    digests: dict[str, str] = field(default_factory=dict)  # its robots' sample streams


@dataclass
class CameraResult:
    """A realtime renderer's camera process: frames made, their render time, missed ticks."""

    frames: int
    render_s: float
    missed: int
    elapsed_s: float
    kept: dict[int, list[tuple[np.ndarray, int, float]]] = field(default_factory=dict)
    recorded: int = 0  # frames written as PNG (--record)
    fresh: int = 0  # frames of a state newer than the frame before's
    repeated: int = 0  # frames of the same state as the frame before
    digests: dict[str, str] = field(default_factory=dict)  # its robots' camera streams


@dataclass
class AgentResult:
    """An agent's figures: policy calls and the observations it lost."""

    steps: int
    busy_s: float
    obs_drops: int


@dataclass
class SlotResult:
    """An agent slot's figures (:mod:`dmxshm.network.slot`): who held it and when,
    the commands it passed on and those it rejected.

    ``holders`` has one record per client that held the slot: ``pid``, ``name`` (what
    the client called itself), ``claimed_at``/``left_at`` (Unix time; ``left_at`` None
    if it held the slot to the end) and ``claimed_step``/``left_step``. ``rejections``
    counts the rejected commands by reason (``step``, ``sequence``, ``reset``, ``time``),
    ``first_rejections`` says what the first of each was. ``resets``: realtime, the
    commands that asked for the slot's robots back at their start poses;
    ``light_patterns``: the commands that set the robots' LEDs.
    """

    index: int
    robots: list[int]
    steps: int = 0  # commands passed on to the engine
    accepted: int = 0
    rejected: int = 0
    rejections: dict[str, int] = field(default_factory=dict)
    first_rejections: dict[str, str] = field(default_factory=dict)
    holders: list[dict[str, Any]] = field(default_factory=list)
    obs_drops: int = 0
    resets: int = 0
    light_patterns: int = 0
