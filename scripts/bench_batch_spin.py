"""The batch's spin (``BATCH_SPIN_US``) measured: ``make_vec`` with its workers polling
for the next command before they sleep, against sleeping at once (``spin_us=0``).

    python scripts/bench_batch_spin.py                     # 5 alternated pairs, 16 envs
    python scripts/bench_batch_spin.py --pairs 7 --seconds 4 --json spin.json
    python scripts/bench_batch_spin.py --background-load 2  # beside 2 CPU-bound processes

Each run steps ``make_vec(16, obs="state")`` with random actions for ``--seconds``
after a warm-up, and reports env-steps/s and the CPU of the whole batch (the caller and
its workers, from psutil) per env-step. The two settings alternate (ABBA), so a
machine's drift falls on both; prints the median and range of each and their ratios.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time

import numpy as np
import psutil

import dmxshm


def _burn(stop: object) -> None:
    while not stop.is_set():  # type: ignore[attr-defined]
        sum(range(10_000))


def one(spin_us: float, n: int, seconds: float) -> dict[str, float]:
    envs = dmxshm.make_vec(n, obs="state", seed=0, spin_us=spin_us)
    try:
        rng = np.random.default_rng(0)
        envs.reset(seed=0)
        me = psutil.Process()
        workers = [psutil.Process(p) for p in envs.worker_pids()] \
            if hasattr(envs, "worker_pids") else me.children()

        def cpu() -> float:
            return sum(sum(p.cpu_times()[:2]) for p in [me, *workers])

        end = time.monotonic() + 0.5
        while time.monotonic() < end:  # warm-up
            envs.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32))
        steps, c0, t0 = 0, cpu(), time.monotonic()
        while time.monotonic() - t0 < seconds:
            envs.step(rng.uniform(-1, 1, (n, 2)).astype(np.float32))
            steps += 1
        wall, used = time.monotonic() - t0, cpu() - c0
    finally:
        envs.close()
    return {"env_steps_per_s": steps * n / wall, "cpu_us_per_env_step": used / (steps * n) * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--spin-us", type=float, default=1000.0,
                        help="the polling compared with 0 [1000: BATCH_SPIN_US before]")
    parser.add_argument("--background-load", type=int, default=0,
                        help="CPU-bound processes running beside it")
    parser.add_argument("--json")
    args = parser.parse_args()
    stop = mp.Event()
    burners = [mp.Process(target=_burn, args=(stop,), daemon=True)
               for _ in range(args.background_load)]
    for b in burners:
        b.start()
    runs: dict[str, list[dict[str, float]]] = {"spin": [], "sleep": []}
    try:
        for i in range(args.pairs):
            order = ("spin", "sleep") if i % 2 == 0 else ("sleep", "spin")
            for name in order:
                r = one(args.spin_us if name == "spin" else 0.0, args.num_envs, args.seconds)
                runs[name].append(r)
                print(f"pair {i} {name:<5} {r['env_steps_per_s']:8.0f} env-steps/s "
                      f"{r['cpu_us_per_env_step']:7.1f} us CPU/env-step", flush=True)
    finally:
        stop.set()
        for b in burners:
            b.join(5)
    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv),
           "load_avg": psutil.getloadavg(), "cores": psutil.cpu_count(), "runs": runs}
    for key in ("env_steps_per_s", "cpu_us_per_env_step"):
        for name in runs:
            v = [r[key] for r in runs[name]]
            print(f"{name:<5} {key}: median {statistics.median(v):.1f} "
                  f"range {min(v):.1f}-{max(v):.1f}")
        ratios = [a[key] / b[key] for a, b in zip(runs["spin"], runs["sleep"], strict=True)]
        print(f"spin / sleep {key}: median {statistics.median(ratios):.3f} "
              f"range {min(ratios):.3f}-{max(ratios):.3f}")
        out[f"ratio_{key}"] = ratios
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
