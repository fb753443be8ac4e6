"""Soak: a long realtime run, watched for growth in memory and in /dev/shm.

    python scripts/soak.py                          # 8 robots, 160x120 camera, 10 minutes
    python scripts/soak.py --minutes 2 --json soak.json

Runs realtime mode with the profiler on (one sample a second) and also
samples the run's /dev/shm usage. At the end it reports, per process, the
RSS at the start of the second half and its slope over the second half
(least squares; the first half is warm-up: caches, allocator pools), the
/dev/shm slope, and the drops against what the configured rates allow.
Exits 1 on an error or when a slope exceeds --max-slope-kib-min.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from dmxshm.network import Network, NetworkConfig
from dmxshm.profiling import shm_sizes


def slope_per_min(t_s: list[float], values: list[float]) -> float:
    """Least-squares slope of ``values`` over the second half of the run, per minute."""
    t, v = np.asarray(t_s), np.asarray(values, dtype=np.float64)
    half = t >= t[-1] / 2 if len(t) else t
    if half.sum() < 3:
        return float("nan")
    return float(np.polyfit(t[half], v[half], 1)[0] * 60.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the run [10]")
    parser.add_argument("--robots", type=int, default=8, help="robots [8]")
    parser.add_argument("--camera", default="160x120", help="camera WxH [160x120]")
    parser.add_argument("--renderers", type=int, default=2, help="renderer processes [2]")
    parser.add_argument("--max-slope-kib-min", type=float, default=256.0,
                        help="largest RSS growth per process tolerated, KiB/min [256]")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    w, h = (int(x) for x in args.camera.split("x"))
    config = NetworkConfig(mode="realtime", robots=args.robots, renderers=args.renderers,
                           duration_s=args.minutes * 60.0, camera=(w, h), profile=True,
                           profile_interval_s=1.0, wait_timeout_s=30.0)
    shm_t: list[float] = []
    shm_bytes: list[float] = []
    with Network(config) as net:
        assert net.registry is not None
        registry = net.registry

        t0 = time.monotonic()

        def on_profile(profiler: object) -> None:
            shm_t.append(time.monotonic() - t0)
            shm_bytes.append(sum(shm_sizes(registry.names).values()))
            if len(shm_t) % 60 == 0:
                print(f"  {len(shm_t) / 60:.0f} min", file=sys.stderr, flush=True)

        summary = net.run(on_profile=on_profile)
    timeline = summary.profile.timeline
    rows = []
    for role, series in timeline.items():
        rss = series["rss_bytes"]
        if len(rss) < 6:
            continue
        mid = len(rss) // 2
        rows.append({"role": role, "rss_mib_at_half": rss[mid] / 2**20,
                     "rss_mib_end": rss[-1] / 2**20,
                     "rss_slope_kib_per_min": slope_per_min(series["t_s"], rss) / 1024})
    elapsed = summary.wall_time_s
    sensors = {name: {"configured_hz": r.configured_hz, "achieved_hz": r.achieved_hz}
               for name, r in summary.sensors.items()}
    out = {
        "minutes": args.minutes, "robots": args.robots, "camera": args.camera,
        "steps": summary.steps, "wall_time_s": elapsed, "late_steps": summary.late_steps,
        "max_lag_s": summary.max_lag_s, "drops": summary.drops,
        "missed_sensor_ticks": summary.missed_sensor_ticks, "sensors": sensors,
        "rejected_commands": sum(summary.rejected_commands),
        "expired_commands": sum(summary.expired_commands),
        "processes": rows,
        "shm_bytes_start": shm_bytes[0] if shm_bytes else 0,
        "shm_bytes_end": shm_bytes[-1] if shm_bytes else 0,
        "shm_slope_bytes_per_min": slope_per_min(shm_t, shm_bytes),
        "sampler_cpu_fraction": summary.profile.sampler_cpu_fraction,
    }
    print(f"soak: realtime, {args.robots} robots, camera {args.camera}, "
          f"{elapsed / 60:.1f} min, {summary.steps} engine steps, late steps "
          f"{summary.late_steps} (worst lag {summary.max_lag_s * 1e3:.1f} ms)")
    print(f"{'process':<12} {'RSS MiB at half':>15} {'at end':>8} {'slope KiB/min':>14}")
    for r in rows:
        print(f"{r['role']:<12} {r['rss_mib_at_half']:>15.1f} {r['rss_mib_end']:>8.1f} "
              f"{r['rss_slope_kib_per_min']:>14.1f}")
    print(f"/dev/shm of the run: {out['shm_bytes_start']} -> {out['shm_bytes_end']} bytes "
          f"(slope {out['shm_slope_bytes_per_min']:.1f} B/min)")
    for name, r in sensors.items():
        print(f"sensor {name:<9} configured {r['configured_hz']:6.1f} Hz, achieved "
              f"{r['achieved_hz']:6.1f} Hz, missed ticks {summary.missed_sensor_ticks[name]}")
    print(f"drops: {summary.drops}; rejected commands {out['rejected_commands']}, "
          f"expired {out['expired_commands']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    worst = max((abs(r["rss_slope_kib_per_min"]) for r in rows), default=0.0)
    # A slope of 0 from a least-squares fit is a few 1e-10 either way.
    if worst > args.max_slope_kib_min or abs(out["shm_slope_bytes_per_min"]) > 1.0:
        print(f"GROWTH: worst RSS slope {worst:.1f} KiB/min", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
