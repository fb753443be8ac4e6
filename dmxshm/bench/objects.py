"""``dmxshm bench objects``: what a map's objects cost a gym run.

Two maps with the same tiles (the bundled ``grid``: a ring with four 3-way
intersections and a 4-way), written as gym-duckietown YAML files: one without
objects, one with ``objects`` of them (duckies, cones, trees, houses, signs,
barriers, buses, parked Duckiebots...) placed off the road by a seeded draw, where
the cameras see them. Pairs of gym runs alternate between the two (4 robots, the
lane follower, a 160x120 camera by default: the objects are drawn in every frame and
hit by every time-of-flight ray); the figure is the ratio of the median steps/s,
with objects over without (target >= 0.8).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dmxshm.network import Network, NetworkConfig
from dmxshm.world.maps import load_map

TARGET = 0.8
KINDS = ("duckie", "cone", "tree", "house", "sign_stop", "barrier", "bus", "duckiebot",
         "building", "trafficlight", "truck", "sign_yield")
_ORIENT = {0: "E", 90: "N"}


@dataclass
class Result:
    """What ``dmxshm bench objects`` measured."""

    objects: int
    robots: int
    steps: int
    camera: tuple[int, int]
    without_steps_per_s: list[float] = field(default_factory=list)
    with_steps_per_s: list[float] = field(default_factory=list)
    ratio: float = 0.0  # median with / median without: the figure of the target
    collisions: int = 0  # robots that touched an object (the objects are off the road)

    def targets(self) -> list[tuple[str, float, bool]]:
        return [(f"gym steps/s with {self.objects} objects / without >= {TARGET}",
                 self.ratio, self.ratio >= TARGET)]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "camera": list(self.camera)}


def town_yaml(objects: int, seed: int = 0) -> str:
    """The grid's tiles in gym-duckietown's format, with ``objects`` objects off the
    road (on grass, a seeded draw of tile and place)."""
    m = load_map("grid")
    rows = []
    for row in m.tiles:
        cells = []
        for t in row:
            if t.kind in ("grass", "asphalt", "floor"):
                cells.append(t.kind)
            elif t.kind == "straight":
                cells.append(f"straight/{_ORIENT[t.rotation_deg]}")
            elif t.kind == "4way":
                cells.append("4way")
            else:  # curve and 3way: dmxshm's rotation r is gym's orientation (r - 90) / 90
                k = ((t.rotation_deg - 90) // 90) % 4
                cells.append(f"{'curve_left' if t.kind == 'curve' else '3way_left'}/"
                             f"{'SENW'[k]}")
        rows.append("- [" + ", ".join(cells) + "]")
    grass = [(r, c) for r, row in enumerate(m.tiles) for c, t in enumerate(row) if not t.is_road]
    rng = np.random.default_rng(seed)
    lines = [f"tile_size: {m.tile_size_m}", "tiles:", *rows]
    if objects:
        lines.append("objects:")
    for k in range(objects):
        r, c = grass[int(rng.integers(len(grass)))]
        x, y = c + float(rng.uniform(0.2, 0.8)), r + float(rng.uniform(0.2, 0.8))
        kind = KINDS[k % len(KINDS)]
        lines += [f"  ob{k}:", f"    kind: {kind}", f"    pos: [{x:.3f}, {y:.3f}]",
                  f"    rotate: {float(rng.uniform(0, 360)):.1f}"]
        if kind in ("house", "building", "bus", "truck"):
            lines.append("    height: 0.12")  # small enough for a grass tile
    return "\n".join(lines) + "\n"


def run(objects: int = 50, robots: int = 4, steps: int = 600, pairs: int = 3,
        camera: tuple[int, int] = (160, 120),
        progress: Callable[[str], None] | None = None) -> Result:
    """Alternate ``pairs`` gym runs without and with ``objects`` objects."""
    res = Result(objects=objects, robots=robots, steps=steps, camera=camera)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for n in (0, objects):
            paths[n] = os.path.join(tmp, f"town-{n}.yaml")
            with open(paths[n], "w") as f:
                f.write(town_yaml(n))
        assert load_map(paths[objects]).tiles == load_map("grid").tiles
        for _ in range(pairs):
            for n in (0, objects):
                cfg = NetworkConfig(robots=robots, steps=steps, camera=camera, map=paths[n],
                                    name=f"bench-objects-{os.getpid()}")
                with Network(cfg) as net:
                    s = net.run()
                (res.with_steps_per_s if n else res.without_steps_per_s).append(s.steps_per_s)
                if n:
                    res.collisions += sum(1 for c in s.lane["object_collisions"] if c)
                if progress is not None:
                    progress(f"{n} objects")
    res.ratio = statistics.median(res.with_steps_per_s) / statistics.median(
        res.without_steps_per_s)
    return res
