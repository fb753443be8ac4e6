"""A pure-pursuit teacher's rollouts (gym-duckietown's imitation-learning teacher, the
way it is written: ``closest_curve_point`` on ``cur_pos`` and ``cur_angle``, a point
ahead along the lane, steer to it) on gym-duckietown and on the drop-in, the same script
under each's imports, alternated run by run.

    python scripts/bench_teacher.py --peer-python gdvenv/bin/python \\
        [--cameras 160x120,640x480] [--steps 300] [--runs 3] [--json out.json]

gym-duckietown runs in its own interpreter (set up as ``scripts/bench_dropin.py``
says). Each run: ``DuckietownEnv(map_name=--map, domain_rand=False, camera_width,
camera_height)``, seeded, reset, 20 warm-up steps, then ``--steps`` steps of the
teacher (the camera image rendered at every step, as a rollout that records images
does), timed on the wall clock; an episode that ends resets. Prints env-steps/s per
camera for each, the medians and ranges, and the ratio dmxshm / gym-duckietown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from typing import Any

ROLLOUT = r'''
import json, math, sys, time
import numpy as np
spec = json.loads(sys.argv[1])
if spec["who"] == "peer":
    from gym_duckietown.envs import DuckietownEnv
    kw = {}
else:
    from dmxshm.duckietown.envs import DuckietownEnv
    kw = {"maps_dir": spec["maps_dir"]}
env = DuckietownEnv(map_name=spec["map"], domain_rand=False, camera_width=spec["w"],
                    camera_height=spec["h"], **kw)
env.seed(spec["seed"])
env.reset()

def teacher():
    point, tangent = env.closest_curve_point(env.cur_pos, env.cur_angle)
    if point is None:
        env.reset()
        point, tangent = env.closest_curve_point(env.cur_pos, env.cur_angle)
    look, follow = 0.24, None
    for _ in range(10):
        p, t = env.closest_curve_point(point + tangent * look, env.cur_angle)
        if p is not None:
            follow = p
            break
        look *= 0.5
    if follow is None:
        return [0.0, 0.0]
    v = follow - env.cur_pos
    v /= np.linalg.norm(v)
    right = np.array([math.sin(env.cur_angle), 0, math.cos(env.cur_angle)])
    return [0.35, -8.0 * float(np.dot(right, v))]

def run(n):
    ends = 0
    for _ in range(n):
        obs, reward, done, info = env.step(teacher())
        if done:
            ends += 1
            env.reset()
    return ends

run(20)
t0 = time.perf_counter()
ends = run(spec["steps"])
dt = time.perf_counter() - t0
env.close()
print(json.dumps({"rate": spec["steps"] / dt, "ends": ends}))
'''


def maps_dir(python: str) -> str:
    out = subprocess.run([python, "-c", "import os, duckietown_world; print(os.path.join("
                          "os.path.dirname(duckietown_world.__file__), 'data', 'gd1', "
                          "'maps'))"], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"no duckietown-world in {python}:\n{out.stderr[-2000:]}")
    return out.stdout.strip().splitlines()[-1]


def rollout(python: str, spec: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run([python, "-c", ROLLOUT, json.dumps(spec)], capture_output=True,
                         text=True, timeout=1200)
    if out.returncode != 0:
        raise SystemExit(f"{spec['who']} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", required=True)
    parser.add_argument("--map", default="loop_empty")
    parser.add_argument("--cameras", default="160x120,640x480")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    folder = maps_dir(args.peer_python)
    report: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "map": args.map, "steps": args.steps, "cameras": {}}
    for cam in args.cameras.split(","):
        w, h = (int(v) for v in cam.split("x"))
        rates: dict[str, list[float]] = {"gym-duckietown": [], "dmxshm": []}
        ends: dict[str, int] = {"gym-duckietown": 0, "dmxshm": 0}
        for r in range(args.runs):
            order = ["peer", "dmxshm"] if r % 2 == 0 else ["dmxshm", "peer"]
            for who in order:
                spec = {"who": who, "map": args.map, "w": w, "h": h, "seed": args.seed,
                        "steps": args.steps, "maps_dir": folder}
                python = args.peer_python if who == "peer" else sys.executable
                got = rollout(python, spec)
                name = "gym-duckietown" if who == "peer" else "dmxshm"
                rates[name].append(got["rate"])
                ends[name] += got["ends"]
        med = {k: statistics.median(v) for k, v in rates.items()}
        ratios = [a / b for a, b in zip(rates["dmxshm"], rates["gym-duckietown"], strict=True)]
        print(f"{cam}: gym-duckietown {med['gym-duckietown']:.1f} "
              f"({min(rates['gym-duckietown']):.1f}-{max(rates['gym-duckietown']):.1f}), "
              f"dmxshm {med['dmxshm']:.1f} ({min(rates['dmxshm']):.1f}-"
              f"{max(rates['dmxshm']):.1f}) env-steps/s; dmxshm / gym-duckietown "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}); "
              f"episodes ended: {ends}", flush=True)
        report["cameras"][cam] = {"rates": rates, "ends": ends, "ratios": ratios}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
