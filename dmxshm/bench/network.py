"""``dmxshm bench network``: gym-mode steps/s and what the framework costs.

For each configuration (1, 4, 8 robots; without and with a 160x120 camera;
one renderer, one agent, the ``idle`` policy so that agent time is nil) it
runs a gym-mode network and reports steps/s and the time per step spent in
physics, rendering, agent code and the framework (everything else: ring
handoffs, copies, waiting). In the same processes, right before the run, it
times the floor: as many raw posix_ipc semaphore handoffs per round as a
step makes, along the same paths (:mod:`dmxshm.bench.floor`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from dmxshm.bench.floor import FloorRounds
from dmxshm.network import Network, NetworkConfig

CONFIGS = [(robots, camera) for camera in ((0, 0), (160, 120)) for robots in (1, 4, 8)]
FLOOR_ROUNDS = 2000


@dataclass
class Row:
    """One configuration's figures (times per step, in microseconds)."""

    robots: int
    camera: str
    steps: int
    steps_per_s: float
    physics_us: float
    rendering_us: float
    agents_us: float
    overhead_us: float
    overhead_fraction: float
    floor_us: float
    busy_us: dict[str, float] = field(default_factory=dict)  # per process, per step
    physics: str = "bullet"


def run(*, quick: bool = False, progress: Callable[[str], None] | None = None,
        configs: list[tuple[int, tuple[int, int]]] = CONFIGS,
        physics: str = "bullet") -> list[Row]:
    """Measure every configuration under ``physics`` (``bullet`` or ``db18``: the
    network's physics, docs/physics.md); returns one :class:`Row` each."""
    rows = []
    for robots, camera in configs:
        cam = "none" if camera == (0, 0) else f"{camera[0]}x{camera[1]}"
        steps = (100 if quick else 300) if camera != (0, 0) else (500 if quick else 2000)
        if progress:
            progress(f"{robots} robot(s), camera {cam}")
        cfg = NetworkConfig(robots=robots, camera=camera, steps=steps, agent="idle",
                            physics=physics)
        floor = FloorRounds(FLOOR_ROUNDS // (4 if quick else 1))
        with Network(cfg, taps=[floor]) as net:
            s = net.run()
        t = s.timing
        rows.append(Row(
            robots=robots, camera=cam, steps=s.steps, steps_per_s=s.steps_per_s,
            physics_us=t.physics_s * 1e6, rendering_us=t.rendering_s * 1e6,
            agents_us=t.agents_s * 1e6,
            overhead_us=((t.framework_s or 0.0) + t.metrics_s) * 1e6,
            overhead_fraction=((t.framework_s or 0.0) + t.metrics_s) / t.step_s,
            floor_us=s.taps["floor"] * 1e6, busy_us=dict(s.busy_us), physics=s.physics))
    return rows


def targets(rows: list[Row]) -> list[tuple[str, float, bool]]:
    """The issue's figures: (description, measured, reached?)."""
    out = []
    for r in rows:
        if r.robots == 4 and r.camera == "160x120":
            out.append(("overhead, 4 robots, 160x120 camera <= 5% of the step",
                        r.overhead_fraction, r.overhead_fraction <= 0.05))
        if r.robots == 4 and r.camera == "none":
            ratio = r.overhead_us / r.floor_us
            out.append(("overhead_us / floor_us, 4 robots, no camera <= 2", ratio, ratio <= 2))
    return out


def as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts."""
    return [asdict(r) for r in rows]
