"""Inject faults into every mode and role, many times, at random moments; report.

    python scripts/faults.py                      # 5 repetitions of every case
    python scripts/faults.py --reps 20 --json faults.json
    python scripts/faults.py --targets gym,batch --signals SIGKILL

Every case: start the run, wait until the victim process has been up for a
random 0.1-2.0 s, send the signal, then check that the run ended within 2 s
(SIGSTOP: within its 5 s wait timeout plus 2 s) with a non-zero status and an
error naming the process, its pid and the signal, that no process of the run
survived, and that /dev/shm holds nothing of it. Prints one line per case
and a table per target and role; exits 1 if any fault did not end cleanly.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from dmxshm.bench.faults import STOP_TARGETS, TARGETS, inject


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each case [5]")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help=f"comma-separated, of {', '.join(TARGETS)} [all]")
    parser.add_argument("--signals", default="SIGKILL,SIGTERM,SIGSTOP",
                        help="comma-separated [SIGKILL,SIGTERM,SIGSTOP]")
    parser.add_argument("--seed", type=int, default=0, help="seed of the moments [0]")
    parser.add_argument("--json", help="write every outcome to this file")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cases = [(t, role, sig) for t in args.targets.split(",") for role in TARGETS[t].roles
             for sig in args.signals.split(",")
             if sig != "SIGSTOP" or t in STOP_TARGETS]
    outcomes = []
    t0 = time.monotonic()
    for rep in range(args.reps):
        for target, role, sig in cases:
            out = inject(TARGETS[target], role, sig, rng.uniform(0.1, 2.0))
            outcomes.append(out)
            mark = "ok " if out.clean else "BAD"
            print(f"{mark} rep {rep} {target:<14} {role:<11} {sig:<8} after "
                  f"{out.delay_s:4.2f} s: ended in "
                  f"{'-' if out.ended_s is None else f'{out.ended_s:.2f} s'}, exit "
                  f"{out.exit_code}, leaked {len(out.leaked)} | {out.message[:90]}", flush=True)
    print(f"\n{len(outcomes)} faults in {time.monotonic() - t0:.0f} s\n")
    print(f"{'target':<15} {'role':<11} {'signal':<8} {'faults':>6} {'clean':>6} "
          f"{'worst end s':>11} {'leaked':>6}")
    for target, role, sig in cases:
        mine = [o for o in outcomes if (o.target, o.role, o.signal) == (target, role, sig)]
        worst = max((o.ended_s or float("inf")) for o in mine)
        print(f"{target:<15} {role:<11} {sig:<8} {len(mine):>6} "
              f"{sum(o.clean for o in mine):>6} {worst:>11.2f} "
              f"{sum(len(o.leaked) for o in mine):>6}")
    clean = sum(o.clean for o in outcomes)
    print(f"\nclean: {clean} of {len(outcomes)}; leaked entries: "
          f"{sum(len(o.leaked) for o in outcomes)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([o.to_dict() for o in outcomes], fh, indent=1)
    return 0 if clean == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
