"""What a network's child process costs to start: this tree against another checkout.

    python scripts/child_startup.py --base /tmp/base --runs 7

For each role module (engine, renderer, agent), a fresh interpreter imports it as a
child does (``sys._dmxshm_child`` set first: the child boot's mark, a no-op where the
tree predates it) from a neutral folder, with ``PYTHONPATH`` set to the tree:
the median and range over ``--runs`` of the wall time of the whole interpreter, and of
``python -X importtime``'s total (every top-level import, the interpreter's own
included). Base and this tree
alternate.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ROLES = ("engine", "renderer", "agent")


def one(tree: Path, role: str, folder: str) -> tuple[float, float]:
    code = f"import sys; sys._dmxshm_child = True; import dmxshm.network.{role}"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, check=True)
    wall = time.perf_counter() - t0
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=folder,
                         env=env, check=True, capture_output=True, text=True).stderr
    # every import of the interpreter: the cumulative times of the top-level ones
    roots = re.findall(r"^import time:\s*\d+ \|\s*(\d+) \| (\S.*)$", out, re.M)
    return wall, sum(int(us) for us, _ in roots) / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} load {load[0]:.2f}; {a.runs} runs each, "
          "base first", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for role in ROLES:
            got: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
            for _ in range(a.runs):
                got["base"].append(one(a.base, role, folder))
                got["this"].append(one(HERE, role, folder))
            line = [f"{role:9}"]
            for side in ("base", "this"):
                wall = [w for w, _ in got[side]]
                imp = [i for _, i in got[side]]
                line.append(f"{side}: start {statistics.median(wall) * 1e3:4.0f} ms "
                            f"({min(wall) * 1e3:.0f}-{max(wall) * 1e3:.0f}), import "
                            f"{statistics.median(imp) * 1e3:4.0f} ms "
                            f"({min(imp) * 1e3:.0f}-{max(imp) * 1e3:.0f})")
            print("  ".join(line), flush=True)
    load = os.getloadavg()
    print(f"load at the end {load[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
