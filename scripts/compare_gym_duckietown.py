"""The drop-in's trajectories against gym-duckietown's own: the same start pose, the
same duties, ``--steps`` physics updates, on each map of ``--maps``.

    python scripts/compare_gym_duckietown.py --peer-python gdvenv/bin/python \\
        [--maps loop_empty,small_loop] [--steps 300] [--json out.json]

gym-duckietown runs in its own interpreter (its pins clash with dmxshm's: set it up as
``scripts/bench_dropin.py`` says). For each map: gym-duckietown's ``Simulator``
(``domain_rand=False``, ``dynamics_rand=False``, seeded) is reset, its start pose taken
as it placed it, and it is moved by ``update_physics`` with a fixed sequence of duties
(no image, no end of episode); the drop-in's ``Simulator`` on the same map file (found
in the peer's duckietown-world) is put at that pose, at rest, and moved by the same
duties. Prints, per map, the largest distance between the two robots' positions (m) and
headings (degrees) over the steps, and at the last step. Both use the DB18 with a 0.15 s
command delay, one integration per frame at 30 Hz.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import numpy as np

PEER = r'''
import json, sys, os
spec = json.loads(sys.stdin.read())
import numpy as np
from gym_duckietown.simulator import Simulator
import duckietown_world
maps = os.path.join(os.path.dirname(duckietown_world.__file__), "data", "gd1", "maps")
env = Simulator(map_name=spec["map"], domain_rand=False, dynamics_rand=False,
                camera_width=64, camera_height=48, seed=spec["seed"],
                max_steps=10**6)
env.reset()
out = {"maps": maps, "height": env.grid_height * env.road_tile_size,
       "poses": [[float(env.cur_pos[0]), float(env.cur_pos[2]), float(env.cur_angle)]]}
for left, right in spec["duties"]:
    env.update_physics(np.array([left, right]))
    out["poses"].append([float(env.cur_pos[0]), float(env.cur_pos[2]), float(env.cur_angle)])
env.close()
print(json.dumps(out))
'''


def duties(steps: int) -> list[list[float]]:
    """A fixed sequence of duties: forward at varying speed, turning both ways."""
    t = np.arange(steps) / 30.0
    forward = 0.35 + 0.15 * np.sin(0.7 * t)
    turn = 0.25 * np.sin(1.3 * t) + 0.1 * np.sin(3.1 * t)
    return np.stack([forward - turn, forward + turn], axis=1).round(6).tolist()


def peer_run(python: str, map_name: str, seed: int, actions: list[list[float]]) -> Any:
    out = subprocess.run([python, "-c", PEER], input=json.dumps(
        {"map": map_name, "seed": seed, "duties": actions}), capture_output=True,
        text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"gym-duckietown failed on {map_name}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def dropin_at(map_path: str, pose: list[float], height: float, camera: tuple[int, int],
              **kw: Any) -> Iterator[Any]:
    """The drop-in's ``Simulator`` on ``map_path`` (no randomisation, ``camera`` its
    width and height, ``kw`` more of its arguments), its robot put at rest (no past
    commands) at gym-duckietown's pose ``[x, z, angle]`` (``height``: the map's, in
    metres, which turns gym-duckietown's ``z`` into dmxshm's ``y``); closed after."""
    from dmxshm.duckietown.simulator import Simulator

    env = Simulator(map_name=map_path, domain_rand=False, dynamics_rand=False,
                    camera_width=camera[0], camera_height=camera[1], max_steps=10**6, **kw)
    try:
        env.reset(seed=0)
        x, z, angle = pose
        env.world.replace_robots([(x, height - z, angle)])
        yield env
    finally:
        env.close()


def ours(map_path: str, start: list[float], height: float,
         actions: list[list[float]]) -> list[list[float]]:
    """The drop-in's poses in gym-duckietown's frame ``[x, z, angle]``."""
    with dropin_at(map_path, start, height, (64, 48)) as env:
        poses = [[float(env.cur_pos[0]), float(env.cur_pos[2]), float(env.cur_angle)]]
        for left, right in actions:
            env.update_physics([left, right])
            poses.append([float(env.cur_pos[0]), float(env.cur_pos[2]), float(env.cur_angle)])
        return poses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True)
    parser.add_argument("--maps", default="loop_empty,small_loop")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    actions = duties(args.steps)
    report: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "steps": args.steps, "maps": {}}
    for name in args.maps.split(","):
        theirs = peer_run(args.peer_python, name, args.seed, actions)
        path = f"{theirs['maps']}/{name}.yaml"
        mine = ours(path, theirs["poses"][0], theirs["height"], actions)
        a, b = np.array(mine), np.array(theirs["poses"])
        dist = np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])
        dangle = np.degrees(np.abs((a[:, 2] - b[:, 2] + math.pi) % (2 * math.pi) - math.pi))
        travelled = float(np.hypot(*np.diff(b[:, :2], axis=0).T).sum())
        row = {"max_distance_m": float(dist.max()), "final_distance_m": float(dist[-1]),
               "max_angle_deg": float(dangle.max()), "final_angle_deg": float(dangle[-1]),
               "travelled_m": travelled, "start": theirs["poses"][0]}
        report["maps"][name] = row
        ok = row["max_distance_m"] <= 1e-3 and row["max_angle_deg"] <= 0.1
        print(f"{name}: {args.steps} steps, {travelled:.2f} m driven; largest difference "
              f"{row['max_distance_m']:.3g} m, {row['max_angle_deg']:.3g} deg (last "
              f"{row['final_distance_m']:.3g} m, {row['final_angle_deg']:.3g} deg)  "
              f"target 1 mm and 0.1 deg: {'met' if ok else 'MISSED'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    sys.exit(0)


if __name__ == "__main__":
    main()
