"""A ring under bounded load: a writer at full speed, a reader far slower, for a minute.

    python scripts/ring_load.py                 # 60 s, the reader reads once per 100 us
    python scripts/ring_load.py --seconds 600 --read-every-us 1000

Overwrite discipline (realtime mode's): the writer never waits, the reader
takes the oldest slot still there. Reports writes, reads, drops as the ring
counted them against the holes the reader saw in the sequence (they must be
equal), torn reads (must be 0), and the RSS of both sides over time (the
slope must be flat). Exits 1 if any of that fails.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from dmxshm.bench.faults import ring_load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length [60]")
    parser.add_argument("--read-every-us", type=float, default=100.0,
                        help="the reader's pace, us per read [100]")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    out = ring_load(args.seconds, args.read_every_us * 1e-6)
    slopes = {}
    for side, rss in out["rss"].items():
        t = np.arange(len(rss), dtype=np.float64)
        half = t >= len(t) / 2
        slopes[side] = (float(np.polyfit(t[half], np.asarray(rss, np.float64)[half], 1)[0] * 60)
                        if half.sum() >= 3 else float("nan"))
    out["rss_slope_bytes_per_min"] = slopes
    rate = out["writes"] / out["seconds"]
    print(f"{out['seconds']:.0f} s: writes {out['writes']} ({rate:,.0f}/s), reads "
          f"{out['reads']} ({out['reads'] / out['seconds']:,.0f}/s), drops counted "
          f"{out['drops']}, holes seen {out['gaps']}, reads out of order {out['backwards']}, "
          f"torn reads {out['torn']}")
    for side, rss in out["rss"].items():
        print(f"RSS {side}: {rss[0] / 2**20:.1f} -> {rss[-1] / 2**20:.1f} MiB, slope over the "
              f"second half {slopes[side] / 1024:.1f} KiB/min")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({k: v for k, v in out.items() if k != "rss"} | {"rss_first_last": {
                s: (r[0], r[-1]) for s, r in out["rss"].items()}}, fh, indent=1)
    ok = (out["torn"] == 0 and out["backwards"] == 0 and out["drops"] == out["gaps"]
          and out["drops"] + out["reads"] == out["writes"] and out["writer_exit"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
