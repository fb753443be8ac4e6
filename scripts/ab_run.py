"""Steps/s of one ``dmxshm run`` command, this tree against another checkout, in
alternating runs of one script (the machine's drift hits both alike).

    git worktree add /tmp/base 7636419
    python scripts/ab_run.py --base /tmp/base --pairs 8 -- \
        --robots 4 --camera 0x0 --agent random --steps 3000

Each run is ``python -m dmxshm.cli run ARGS --json F`` with ``PYTHONPATH`` set to
the tree measured, from a neutral folder (so neither tree's folder shadows the
other). Prints each pair, the median steps/s of each side, the ratio of the
medians and the median of the pairs' ratios; checks that both sides ran the same
trajectory (the pose digest, which every version has). ``--json OUT`` keeps the
raw figures.
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


def one_run(tree: Path, args: list[str], folder: str) -> dict:
    out = os.path.join(folder, "summary.json")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", *args, "--json", out],
                   cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
        summary = json.load(f)
    # The pose digest: what both sides have (schema version 1's trajectory_digest).
    return {"steps_per_s": summary["steps_per_s"],
            "digest": summary.get("pose_digest", summary["trajectory_digest"]),
            "timing": summary["timing"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, type=Path, help="the other checkout")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("run_args", nargs=argparse.REMAINDER,
                    help="after --: the arguments of dmxshm run")
    a = ap.parse_args()
    args = [x for x in a.run_args if x != "--"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(a.pairs):
            base = one_run(a.base, args, folder)
            this = one_run(HERE, args, folder)
            if base["digest"] != this["digest"]:
                print(f"pair {i + 1}: the two trees ran different trajectories", file=sys.stderr)
                return 1
            rows.append({"base": base, "this": this})
            print(f"pair {i + 1}: base {base['steps_per_s']:7.1f}  this "
                  f"{this['steps_per_s']:7.1f} steps/s  ratio "
                  f"{this['steps_per_s'] / base['steps_per_s']:.3f}", flush=True)
    b = statistics.median(r["base"]["steps_per_s"] for r in rows)
    t = statistics.median(r["this"]["steps_per_s"] for r in rows)
    pair = statistics.median(r["this"]["steps_per_s"] / r["base"]["steps_per_s"] for r in rows)
    print(f"median steps/s: base {b:.1f}, this {t:.1f}; ratio of medians {t / b:.3f}, "
          f"median of pair ratios {pair:.3f} ({a.pairs} pairs, same digest)")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"args": args, "base": str(a.base), "pairs": rows,
                       "ratio_of_medians": t / b, "median_pair_ratio": pair}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
