"""The gym-duckietown drop-in against gym-duckietown itself, in one run: frames/s.

gym-duckietown's pins clash with dmxshm's (it needs numpy < 1.24, gym 0.26, pyglet
1.5), so it lives in its own environment and is driven as a subprocess, given by
``--peer-python``; dmxshm's drop-in runs in this interpreter's environment, also as a
subprocess. Both run the same driver (the old gym API, one import apart): the same
map file (gym-duckietown's own, read from its installed duckietown-world), the same
camera size, ``domain_rand=False``, the action ``(0.15, 0.0)`` of ``DuckietownEnv``,
a reset whenever an episode ends; frames/s counted over ``--steps`` steps after 10
warm-up steps, so neither side's start-up counts. Runs alternate peer, dmxshm,
dmxshm, peer, ... The figure is the ratio of the medians, dmxshm over gym-duckietown.

Set the peer up (it installs on Python 3.11 with these pins; it finds an OpenGL
context headless through pyglet's EGL, no X server needed)::

    python3 -m venv gdvenv
    gdvenv/bin/pip install duckietown-gym-daffy==6.1.34 pyglet==1.5.15 numpy==1.23.5 \\
        'scipy<1.12' 'contourpy<1.2' 'opencv-python<4.11'

Run: ``python scripts/bench_dropin.py --peer-python gdvenv/bin/python [--json out.json]``
(dmxshm's side with each of ``--renderers`` tiny and EGL: on a machine without a GPU
both draw on the CPU, EGL through Mesa's llvmpipe, as gym-duckietown's OpenGL does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

DRIVER = r'''
import json, logging, sys, time
import numpy as np
logging.disable(logging.CRITICAL)
kind, map_name = sys.argv[1], sys.argv[2]
w, h, steps = (int(v) for v in sys.argv[3:6])
extra = {}
if kind == "peer":
    from gym_duckietown.envs import DuckietownEnv
else:
    from dmxshm.duckietown.legacy import DuckietownEnv
    extra = {"renderer": kind}
env = DuckietownEnv(map_name=map_name, domain_rand=False, camera_width=w, camera_height=h,
                    **extra)
env.reset()
action = np.array([0.15, 0.0])
for _ in range(10):
    if env.step(action)[2]:
        env.reset()
resets, t0 = 0, time.perf_counter()
for _ in range(steps):
    obs, reward, done, info = env.step(action)
    if done:
        env.reset()
        resets += 1
dt = time.perf_counter() - t0
assert obs.shape == (h, w, 3), obs.shape
print(json.dumps({"fps": steps / dt, "resets": resets}))
'''


def _run(python: str, kind: str, map_name: str, w: int, h: int, steps: int) -> dict:
    out = subprocess.run([python, "-c", DRIVER, kind, map_name, str(w), str(h), str(steps)],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer-python", required=True,
                    help="the python of an environment with gym-duckietown")
    ap.add_argument("--map", default="loop_empty", help="one of gym-duckietown's maps")
    ap.add_argument("--sizes", default="160x120,640x480")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--renderers", default="tiny,egl", help="dmxshm's renderers to run")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    find = subprocess.run(
        [args.peer_python, "-c", "from duckietown_world.resources import get_resource_path;"
         f"print(get_resource_path('{args.map}.yaml'))"], capture_output=True, text=True,
        timeout=120)
    if find.returncode != 0:
        raise SystemExit(f"gym-duckietown's map {args.map} not found:\n{find.stderr[-1000:]}")
    map_path = find.stdout.strip().splitlines()[-1]
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: map {args.map} "
          f"({map_path}), DuckietownEnv, domain_rand=False, action (0.15, 0.0), "
          f"{args.steps} steps a run, {args.repeats} runs of each, alternating")
    rows = []
    renderers = args.renderers.split(",")
    for size in args.sizes.split(","):
        w, h = (int(v) for v in size.split("x"))
        peer: list[dict] = []
        ours: dict[str, list[dict]] = {r: [] for r in renderers}
        for r in range(args.repeats):
            order = ["peer", *renderers]
            for kind in (order if r % 2 == 0 else order[::-1]):
                if kind == "peer":
                    peer.append(_run(args.peer_python, "peer", args.map, w, h, args.steps))
                else:
                    ours[kind].append(_run(sys.executable, kind, map_path, w, h, args.steps))
        base = statistics.median(p["fps"] for p in peer)
        fps_peer = ", ".join(f"{p['fps']:.1f}" for p in peer)
        print(f"{w}x{h}: gym-duckietown frames/s {fps_peer} (resets "
              f"{sum(p['resets'] for p in peer)})")
        row: dict = {"size": [w, h], "gym_duckietown": peer}
        for name, runs in ours.items():
            ratio = statistics.median(o["fps"] for o in runs) / base
            row[f"dmxshm_{name}"], row[f"ratio_{name}"] = runs, ratio
            fps = ", ".join(f"{o['fps']:.1f}" for o in runs)
            print(f"{w}x{h}: dmxshm ({name}) frames/s {fps} (resets "
                  f"{sum(o['resets'] for o in runs)}); dmxshm / gym-duckietown {ratio:.2f}")
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"map": args.map, "steps": args.steps, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
