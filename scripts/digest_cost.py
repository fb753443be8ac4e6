"""What the full trajectory digest costs: this tree against a checkout with the pose
digest only, in alternating runs of one script.

    git worktree add /tmp/base 1e05a29     # the last commit with the pose digest only
    python scripts/digest_cost.py --base /tmp/base --pairs 5 --json cost.json

Four workloads, each run by both trees in turn (base first in odd pairs, this
tree first in even ones, so that neither side always runs second), each run in
a fresh process from a neutral folder with ``PYTHONPATH`` set to its tree:

- ``gym camera``: ``dmxshm run --robots 4 --steps 600 --agent random`` (160x120);
- ``gym state``: the same with ``--camera 0x0`` and 3000 steps;
- ``make_vec camera``: 8 envs of 64x64 camera observations, 2 workers, 400 steps;
- ``make_vec state``: 8 envs of state observations, 2 workers, 3000 steps.

Prints each pair, and per workload the median rate of each side, the ratio of
the medians (this / base) and the median of the pairs' ratios. The two sides
must run the same trajectory: the network's pose digest and the batch's
observations (hashed here) are compared on every pair.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

BATCH = '''
import hashlib, json, sys, time
import numpy as np
import dmxshm
obs, steps = sys.argv[1], int(sys.argv[2])
kw = {"camera": (64, 64)} if obs == "camera" else {}
envs = dmxshm.make_vec(8, num_workers=2, obs=obs, **kw)
rng = np.random.default_rng(0)
actions = rng.uniform(-1, 1, (steps, 8, 2)).astype(np.float32)
h = hashlib.sha256()
try:
    envs.reset(seed=1)
    for k in range(20):
        envs.step(actions[k])
    t0 = time.perf_counter()
    for k in range(20, steps):
        o, r, *_ = envs.step(actions[k])
    dt = time.perf_counter() - t0
    h.update(np.ascontiguousarray(o).tobytes() + r.tobytes())
finally:
    envs.close()
print(json.dumps({"rate": 8 * (steps - 20) / dt, "digest": h.hexdigest()}))
'''

WORKLOADS = {
    "gym camera": ("run", ["--robots", "4", "--steps", "600", "--agent", "random"]),
    "gym state": ("run", ["--robots", "4", "--steps", "3000", "--agent", "random",
                          "--camera", "0x0"]),
    "make_vec camera": ("batch", ["camera", "400"]),
    "make_vec state": ("batch", ["state", "3000"]),
}


def one(tree: Path, kind: str, args: list[str], folder: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if kind == "run":
        out = os.path.join(folder, "summary.json")
        subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", *args, "--json", out],
                       cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(out) as f:
            s = json.load(f)
        return {"rate": s["steps_per_s"], "digest": s.get("pose_digest", s["trajectory_digest"])}
    done = subprocess.run([sys.executable, "-c", BATCH, *args], cwd=folder, env=env,
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, type=Path, help="the pose-digest checkout")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--only", action="append", choices=list(WORKLOADS),
                    help="run only this workload (repeatable)")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    workloads = {k: v for k, v in WORKLOADS.items() if not a.only or k in a.only}
    rows: dict[str, list[dict]] = {name: [] for name in workloads}
    with tempfile.TemporaryDirectory() as folder:
        for i in range(a.pairs):
            for name, (kind, args) in workloads.items():
                if i % 2 == 0:
                    base = one(a.base, kind, args, folder)
                    this = one(HERE, kind, args, folder)
                else:
                    this = one(HERE, kind, args, folder)
                    base = one(a.base, kind, args, folder)
                if base["digest"] != this["digest"]:
                    print(f"{name}, pair {i + 1}: the trees ran different trajectories",
                          file=sys.stderr)
                    return 1
                rows[name].append({"base": base["rate"], "this": this["rate"]})
                print(f"pair {i + 1} {name:16s} base {base['rate']:8.1f}  this "
                      f"{this['rate']:8.1f}  ratio {this['rate'] / base['rate']:.3f}", flush=True)
    report = {}
    print()
    for name, got in rows.items():
        b = statistics.median(r["base"] for r in got)
        t = statistics.median(r["this"] for r in got)
        pair = statistics.median(r["this"] / r["base"] for r in got)
        report[name] = {"base_median": b, "this_median": t, "ratio_of_medians": t / b,
                        "median_pair_ratio": pair, "pairs": got}
        print(f"{name:16s} base {b:8.1f}  this {t:8.1f}  ratio of medians {t / b:.3f}  "
              f"median pair ratio {pair:.3f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
