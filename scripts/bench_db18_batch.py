"""The DB18 batch's figures (issue 44), peers in the same run, alternated.

    python scripts/bench_db18_batch.py [--runs 5] [--seconds 5] [--json FILE]

Every rate is env-steps/s of ``step()`` with random actions (the same stream for every
way), DuckieLane-v1 with state observations, the median of five equal windows after a
warm-up; each figure is the median and range of ``--runs`` runs, the ways of a figure
alternated within each run (A B, B A, ...):

* ``large``: ``make_vec(256, physics="db18")`` in this process (0 workers) and on one
  worker per core, against ``make_vec(16, physics="bullet")`` on one worker per core
  (Bullet's rate per core does not grow with more envs); the per-core rate divides by
  the cores a batch runs on (its workers, or 1 in-process);
* ``sync``: ``make_vec(16, physics="db18")`` (``num_workers="auto"``: what it picks)
  against gymnasium's ``SyncVectorEnv`` of the same 16 DB18 envs, quiet and beside
  ``--load`` CPU-bound processes (``dmxshm.bench.load``);
* ``camera``: ``make_vec(16, obs="camera", camera=(64, 64), renderer="batch")`` under
  DB18 against the same under Bullet, one worker per core;
* ``digest``: the trajectory digest's share of a step, 256 DB18 envs in this process:
  the CPU time per env-step with the digest, and with the array shard's digest
  replaced by nothing (for this measurement only), alternated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timezone
from typing import Any

import gymnasium
import numpy as np

import dmxshm
from dmxshm.bench.load import background_load
from dmxshm.proc.cpus import usable_cpus

WINDOWS, WARMUP_STEPS = 5, 20


def timed(envs: Any, n: int, seconds: float) -> tuple[float, float]:
    """Median env-steps/s of ``WINDOWS`` windows of ``envs.step`` (random actions), and
    this process's CPU time per env-step over them (us)."""
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (64, n, 2)).astype(np.float32)
    envs.reset(seed=0)
    for k in range(WARMUP_STEPS):
        envs.step(actions[k % 64])
    rates, steps, c0 = [], 0, time.process_time()
    for _ in range(WINDOWS):
        k, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / WINDOWS:
            envs.step(actions[k % 64])
            k += 1
        rates.append(k * n / (time.perf_counter() - t0))
        steps += k * n
    return float(statistics.median(rates)), (time.process_time() - c0) / steps * 1e6


def rate(envs: Any, n: int, seconds: float) -> float:
    return timed(envs, n, seconds)[0]


def measure(make: Any, n: int, seconds: float) -> tuple[float, int]:
    """The rate of the batch ``make()`` builds, and its workers (0: in-process)."""
    envs = make()
    try:
        return rate(envs, n, seconds), int(getattr(envs, "num_workers", 0))
    finally:
        envs.close()


def sync_of(n: int, **kwargs: Any) -> Any:
    return gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make("dmxshm/DuckieLane-v1", **kwargs)] * n)


def spread(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": values}


def show(name: str, values: list[float], unit: str = "env-steps/s") -> None:
    s = spread(values)
    fmt = ",.2f" if unit.startswith("us") else ",.0f"
    print(f"  {name:34s} {s['median']:>12{fmt}} ({s['min']:{fmt}}-{s['max']:{fmt}}) {unit}",
          flush=True)


def ratio(name: str, a: list[float], b: list[float], target: float) -> dict[str, Any]:
    r = [x / y for x, y in zip(a, b, strict=True)]
    s = spread(r)
    print(f"  {name:34s} {s['median']:>12.2f} ({s['min']:.2f}-{s['max']:.2f})  target >= "
          f"{target:g}: {'met' if s['median'] >= target else 'MISSED'}", flush=True)
    return s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--load", type=int, default=2, help="CPU-bound processes beside "
                        "the loaded sync comparison")
    parser.add_argument("--parts", default="large,sync,camera,digest")
    parser.add_argument("--json")
    args = parser.parse_args()
    cores = len(usable_cpus())
    parts = args.parts.split(",")
    out: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "cpus": os.cpu_count(), "usable_cpus": cores, "args": vars(args)}
    secs = args.seconds
    v1 = {"version": "v1"}
    if "large" in parts:
        ways = {
            "db18 x256 in-process": lambda: dmxshm.make_vec(256, 0, physics="db18", **v1),
            "db18 x256 workers": lambda: dmxshm.make_vec(256, None, physics="db18", **v1),
            "bullet x16 workers": lambda: dmxshm.make_vec(16, None, physics="bullet", **v1),
        }
        sizes = {"db18 x256 in-process": 256, "db18 x256 workers": 256,
                 "bullet x16 workers": 16}
        got: dict[str, list[float]] = {k: [] for k in ways}
        procs: dict[str, int] = {}
        print("large: 256 DB18 envs against 16 Bullet envs", flush=True)
        for r in range(args.runs):
            for name in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
                value, procs[name] = measure(ways[name], sizes[name], secs)
                got[name].append(value)
        for name, values in got.items():
            show(f"{name} ({procs[name]} workers)", values)
        per_core = {name: [v / max(procs[name], 1) for v in values]
                    for name, values in got.items()}
        for name in ("db18 x256 in-process", "db18 x256 workers"):
            show(f"{name} per core", per_core[name])
        out["large"] = {"rates": {k: spread(v) for k, v in got.items()}, "workers": procs,
                        "per_core": {k: spread(v) for k, v in per_core.items()},
                        "in_process_vs_bullet16": ratio(
                            "db18 x256 in-process / bullet x16", got["db18 x256 in-process"],
                            got["bullet x16 workers"], 30),
                        "workers_vs_bullet16": ratio(
                            "db18 x256 workers / bullet x16", got["db18 x256 workers"],
                            got["bullet x16 workers"], 30)}
        for name in ("db18 x256 in-process", "db18 x256 workers"):
            s = spread(per_core[name])
            print(f"  {name} per core >= 100,000: "
                  f"{'met' if s['median'] >= 100_000 else 'MISSED'}", flush=True)
    if "sync" in parts:
        out["sync"] = {}
        for load in (0, args.load):
            got = {"make_vec": [], "sync": []}
            picked = set()
            print(f"sync: 16 DB18 envs, beside {load} CPU-bound processes", flush=True)
            with background_load(load):
                for r in range(args.runs):
                    for name in (["make_vec", "sync"] if r % 2 == 0 else ["sync", "make_vec"]):
                        if name == "make_vec":
                            value, w = measure(lambda: dmxshm.make_vec(16, physics="db18",
                                                                       **v1), 16, secs)
                            picked.add(w)
                        else:
                            value, _ = measure(lambda: sync_of(16, physics="db18"), 16, secs)
                        got[name].append(value)
            show(f"make_vec(16) (workers picked: {sorted(picked)})", got["make_vec"])
            show("SyncVectorEnv(16)", got["sync"])
            out["sync"][f"load{load}"] = {
                "rates": {k: spread(v) for k, v in got.items()}, "picked": sorted(picked),
                "ratio": ratio("make_vec / Sync", got["make_vec"], got["sync"], 1.5)}
    if "camera" in parts:
        got = {"db18": [], "bullet": []}
        print("camera: 16 envs, 64x64, the batch renderer, one worker per core", flush=True)
        for r in range(args.runs):
            for name in (["db18", "bullet"] if r % 2 == 0 else ["bullet", "db18"]):
                value, _ = measure(lambda name=name: dmxshm.make_vec(
                    16, None, obs="camera", camera=(64, 64), renderer="batch",
                    physics=name, **v1), 16, secs)
                got[name].append(value)
        show("db18", got["db18"])
        show("bullet", got["bullet"])
        out["camera"] = {"rates": {k: spread(v) for k, v in got.items()},
                         "ratio": ratio("camera db18 / bullet", got["db18"], got["bullet"], 2)}
    if "digest" in parts:
        from dmxshm.batch import array_shard

        kept = array_shard.ArrayShard._digest
        got = {"on": [], "off": []}
        print("digest: 256 DB18 envs in this process, CPU us per env-step", flush=True)
        for r in range(args.runs):
            for name in (["on", "off"] if r % 2 == 0 else ["off", "on"]):
                array_shard.ArrayShard._digest = (  # type: ignore[method-assign]
                    kept if name == "on" else (lambda *a: None))
                try:
                    envs = dmxshm.make_vec(256, 0, physics="db18", **v1)
                    got[name].append(timed(envs, 256, secs)[1])
                    envs.close()
                finally:
                    array_shard.ArrayShard._digest = kept  # type: ignore[method-assign]
        show("with the digest", got["on"], "us CPU/env-step")
        show("without", got["off"], "us CPU/env-step")
        share = [(a - b) / a for a, b in zip(got["on"], got["off"], strict=True)]
        s = spread(share)
        print(f"  the digest's share of a step {s['median']:.1%} ({s['min']:.1%}-"
              f"{s['max']:.1%})  target <= 10%: {'met' if s['median'] <= 0.10 else 'MISSED'}",
              flush=True)
        out["digest"] = {"cpu_us": {k: spread(v) for k, v in got.items()}, "share": s}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
