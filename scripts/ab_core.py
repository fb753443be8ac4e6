"""CPU time per step of the front-ends, this tree against another checkout, in
alternated runs of one script (the machine's drift hits both alike): the figures of
issue 43 (one simulation core must not cost the front-ends more than 5%).

    git worktree add /tmp/base b6adf68       # the commit before the work
    python scripts/ab_core.py --base /tmp/base --pairs 5 --json ab.json

Cases (each a fresh interpreter with ``PYTHONPATH`` set to the tree measured, from a
neutral folder):

- ``vector-state``: ``dmxshm.make_vec(16)`` (DuckieLane-v0) (state), 2 workers,
  random actions, 300 steps of the 16 envs;
- ``vector-camera64``: the same with a 64x64 camera (``bench vector``'s camera64,
  the tiny renderer), 100 steps;
- ``parallel``: ``dmxshm.parallel_env(robots=4)`` (state, the grid), 600 steps with
  resets;
- ``network``: ``dmxshm bench network --quick`` (its fixed steps).

The figure is the CPU time (user + system) of the process and its workers over the
stepping loop alone (start-up and imports left out: read with psutil before and after
the loop), per env-step; ``network``: the whole command's, and its children's, per
run of the command (fixed work). Each pair runs the base first, then this tree; the
table gives each side's median and range and the ratio of the medians (this / base:
below 1.05 is the target, 1.0 equal).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

SNIPPETS = {
    "vector-state": ("""
import time, numpy as np, dmxshm
{cpu}
env = dmxshm.make_vec(16, num_workers=2)
env.reset(seed=0)
rng = np.random.default_rng(0)
c0, t0 = cpu(), time.perf_counter()
for _ in range({steps}):
    env.step(rng.uniform(-0.2, 1.0, (16, 2)).astype(np.float32))
wall, used = time.perf_counter() - t0, cpu() - c0
env.close()
print(wall, used)
""", 300 * 16),
    "vector-camera64": ("""
import time, numpy as np, dmxshm
{cpu}
env = dmxshm.make_vec(16, num_workers=2, obs="camera",
                      camera=(64, 64))
env.reset(seed=0)
rng = np.random.default_rng(0)
c0, t0 = cpu(), time.perf_counter()
for _ in range({steps}):
    env.step(rng.uniform(-0.2, 1.0, (16, 2)).astype(np.float32))
wall, used = time.perf_counter() - t0, cpu() - c0
env.close()
print(wall, used)
""", 100 * 16),
    "parallel": ("""
import time, numpy as np, dmxshm
{cpu}
env = dmxshm.parallel_env(robots=4)
env.reset(seed=0)
rng = np.random.default_rng(0)
episode = 0
c0, t0 = cpu(), time.perf_counter()
for _ in range({steps}):
    if not env.agents:
        episode += 1
        env.reset(seed=episode)
    env.step({{a: rng.uniform(-0.2, 1.0, 2).astype(np.float32) for a in env.agents}})
wall, used = time.perf_counter() - t0, cpu() - c0
env.close()
print(wall, used)
""", 600),
}
STEPS = {"vector-state": 300, "vector-camera64": 100, "parallel": 600}
CPU = """
import psutil
me = psutil.Process()
def cpu():
    # this process and its workers: the CPU the steps cost, start-up left out
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total
"""


def _cpu_of(argv: list[str], tree: Path, folder: str) -> tuple[float, str]:
    """Run ``argv``; the CPU seconds it and its waited-for children used, its output."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... in {tree} failed ({proc.returncode})")
    return usage.ru_utime + usage.ru_stime, out


def one(case: str, tree: Path, folder: str) -> dict[str, float]:
    if case == "network":
        cpu, _ = _cpu_of([sys.executable, "-m", "dmxshm.cli", "bench", "network", "--quick"],
                         tree, folder)
        return {"cpu_per_step_us": cpu * 1e6, "rate": float("nan")}
    code, env_steps = SNIPPETS[case]
    _, out = _cpu_of([sys.executable, "-c", code.format(steps=STEPS[case], cpu=CPU)], tree,
                     folder)
    wall, cpu = (float(v) for v in out.strip().splitlines()[-1].split())
    return {"cpu_per_step_us": cpu / env_steps * 1e6, "rate": env_steps / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, type=Path, help="the other checkout")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--case", action="append", choices=[*SNIPPETS, "network"],
                    help="cases to run (repeatable; default: all)")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    cases = a.case or [*SNIPPETS, "network"]
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} load {load[0]:.2f} {load[1]:.2f}; base "
          f"{a.base}, this {HERE}; {a.pairs} pairs, base first in each", flush=True)
    raw: dict[str, dict[str, list[dict[str, float]]]] = {c: {"base": [], "this": []}
                                                           for c in cases}
    with tempfile.TemporaryDirectory() as folder:
        for i in range(a.pairs):
            for case in cases:
                base = one(case, a.base, folder)
                this = one(case, HERE, folder)
                raw[case]["base"].append(base)
                raw[case]["this"].append(this)
                print(f"pair {i + 1} {case:16} CPU/step base {base['cpu_per_step_us']:9.1f} us"
                      f"  this {this['cpu_per_step_us']:9.1f} us"
                      f"  ({this['cpu_per_step_us'] / base['cpu_per_step_us']:.3f})",
                      flush=True)
    print("\ncase              CPU/step base: median (range)       this: median (range)"
          "        this/base")
    for case in cases:
        b = [r["cpu_per_step_us"] for r in raw[case]["base"]]
        t = [r["cpu_per_step_us"] for r in raw[case]["this"]]
        ratio = statistics.median(t) / statistics.median(b)
        print(f"{case:16}  {statistics.median(b):9.1f} us ({min(b):.1f}-{max(b):.1f})"
              f"  {statistics.median(t):9.1f} us ({min(t):.1f}-{max(t):.1f})  {ratio:.3f}")
    load = os.getloadavg()
    print(f"load at the end {load[0]:.2f} {load[1]:.2f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(raw, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
