"""How fresh realtime samples are: each sensor's rate of samples that read a newer
state than the sample before, this tree against another checkout, in turns.

    git worktree add /tmp/base 1e05a29     # states every dt_s (1/30 s)
    python scripts/fresh_samples.py --base /tmp/base --runs 3 --json fresh.json

Each run is ``dmxshm run --mode realtime --robots 4 --duration 10 --json F``
(default rates: camera 30 Hz at 160x120, IMU 100 Hz, encoders 30 Hz, time of
flight 15 Hz) in a fresh process with ``PYTHONPATH`` set to its tree. Per
sensor: the configured rate, the achieved rate, the fresh and repeated
counts, and the fresh rate (achieved x fresh / (fresh + repeated)), the figure
issue 25 sets (IMU >= 99% of 100 Hz; the others within 5% of their rates).
Without ``--base``, this tree only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SENSORS = ("camera", "imu", "encoders", "tof")


def one(tree: Path, args: list[str], folder: str) -> dict:
    out = os.path.join(folder, "summary.json")
    subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", "--mode", "realtime", *args,
                    "--json", out], cwd=folder, env={**os.environ, "PYTHONPATH": str(tree)},
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        s = json.load(f)
    row = {"late_steps": s["late_steps"], "steps": s["steps"]}
    for name in SENSORS:
        r = s["sensors"][name]
        ticks = r["fresh"] + r["repeated"]
        row[name] = {"configured_hz": r["configured_hz"], "achieved_hz": r["achieved_hz"],
                     "fresh": r["fresh"], "repeated": r["repeated"],
                     "fresh_hz": r["achieved_hz"] * r["fresh"] / max(ticks, 1)}
    return row


def show(label: str, row: dict) -> None:
    cells = "  ".join(f"{n} {row[n]['fresh_hz']:5.1f}/{row[n]['configured_hz']:g} Hz "
                      f"({row[n]['fresh']} fresh, {row[n]['repeated']} rep)" for n in SENSORS)
    print(f"{label:10s} {cells}  late steps {row['late_steps']} of {row['steps']}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="another checkout, run in turns with this one")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--robots", type=int, default=4)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    args = ["--robots", str(a.robots), "--duration", str(a.duration)]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(a.runs):
            row = {}
            if a.base is not None:
                row["base"] = one(a.base, args, folder)
                show(f"{i + 1} base", row["base"])
            row["this"] = one(HERE, args, folder)
            show(f"{i + 1} this", row["this"])
            rows.append(row)
    worst = {n: min(r["this"][n]["fresh_hz"] / r["this"][n]["configured_hz"] for r in rows)
             for n in SENSORS}
    print("\nworst run, fresh rate / configured rate (this tree): "
          + ", ".join(f"{n} {v:.3f}" for n, v in worst.items()))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"args": args, "runs": rows, "worst_fresh_ratio": worst}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
