"""The DB18 physics against Bullet's, and against lib-dt-modeling, in one run.

    python scripts/bench_db18.py [--runs 3] [--seconds 3] [--json FILE]

Prints, each as the median and range of ``--runs`` runs alternated between the two
physics (so that both see the same machine):

* ``env``: one ``dmxshm/DuckieLane-v1`` (state observations, random PWM actions)
  stepped in this process, steps/s;
* ``network``: ``dmxshm run`` in gym mode, 8 robots, no camera, 300 steps, steps/s;

and the equality figure: the largest difference, over 10,000 random-PWM steps of
four robots (trims -0.1 to 0.1, delays 0 and 0.15 s at 30 Hz), between dmxshm's
DB18 and lib-dt-modeling's own integration (positions in m, headings and wheel
angles in rad). Needs lib-dt-modeling for that figure (``pip install lib-dt-modeling``).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from typing import Any

import numpy as np


def env_rate(physics: str, seconds: float) -> float:
    import gymnasium

    import dmxshm  # noqa: F401  (registers the envs)

    env = gymnasium.make("dmxshm/DuckieLane-v1", physics=physics).unwrapped
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (1000, 2)).tolist()
    env.reset(seed=0)
    try:
        for k in range(200):  # warm-up: caches, compiled code
            env.step_wheels(*actions[k])
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            _, _, terminated, truncated, _ = env.step_wheels(*actions[n % 1000])
            n += 1
            if terminated or truncated:
                env.reset()
        return n / (time.perf_counter() - t0)
    finally:
        env.close()


def network_rate(physics: str) -> float:
    from dmxshm.network import Network, NetworkConfig

    cfg = NetworkConfig(robots=8, steps=300, camera=(0, 0), physics=physics, agent="random")
    with Network(cfg) as net:
        return net.run().steps_per_s


def equality(steps: int = 10_000) -> dict[str, float] | None:
    try:
        from dt_modeling.dynamics import pwm_dynamics as pwm
    except ImportError:
        return None
    from dmxshm.sim.db18 import DB18, DB18Params

    dt = 1 / 30
    robots = [(-0.1, 0.0), (0.05, 0.15), (0.1, 0.15), (0.0, 0.0)]  # (trim, delay)
    rng = np.random.default_rng(3)
    duties = rng.uniform(-1, 1, (len(robots), steps, 2))
    poses = rng.uniform([0, 0, -math.pi], [3, 3, math.pi], (len(robots), 3))
    ours = DB18([DB18Params.uncalibrated(d, t) for t, d in robots],
                [tuple(p) for p in poses])
    worst = {"position_m": 0.0, "heading_rad": 0.0, "wheel_angle_rad": 0.0}
    states = []
    for r, (trim, delay) in enumerate(robots):
        x, y, yaw = poses[r]
        q0 = np.array([[math.cos(yaw), -math.sin(yaw), x], [math.sin(yaw), math.cos(yaw), y],
                       [0, 0, 1.0]])
        states.append(pwm.get_DB18_uncalibrated(delay, trim).initialize(
            c0=(q0, np.zeros((3, 3))), t0=0))
    for k in range(steps):
        ours.step(dt, duties[:, k])
        for r, (_, delay) in enumerate(robots):
            left, right = duties[r, k]
            states[r] = states[r].integrate(dt, pwm.PWMCommands(motor_left=float(left),
                                                                motor_right=float(right)))
            m = states[r].state if delay > 0 else states[r]
            q = m.q0
            worst["position_m"] = max(worst["position_m"], math.hypot(
                q[0, 2] - ours.x[r], q[1, 2] - ours.y[r]))
            d = math.atan2(q[1, 0], q[0, 0]) - float(ours.yaw[r])
            worst["heading_rad"] = max(worst["heading_rad"],
                                       abs((d + math.pi) % (2 * math.pi) - math.pi))
            worst["wheel_angle_rad"] = max(worst["wheel_angle_rad"],
                                           abs(m.axis_left_rad - ours.axis_l[r]),
                                           abs(m.axis_right_rad - ours.axis_r[r]))
    return worst


def spread(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for what, measure in (("env", lambda p: env_rate(p, args.seconds)),
                          ("network", network_rate)):
        got: dict[str, list[float]] = {"bullet": [], "db18": []}
        for _ in range(args.runs):
            for physics in got:  # alternated
                got[physics].append(measure(physics))
        out[what] = {p: spread(v) for p, v in got.items()}
        b, d = out[what]["bullet"]["median"], out[what]["db18"]["median"]
        print(f"{what:8s} steps/s  bullet {b:10.1f} ({min(got['bullet']):.1f}-"
              f"{max(got['bullet']):.1f})  db18 {d:10.1f} ({min(got['db18']):.1f}-"
              f"{max(got['db18']):.1f})  db18/bullet {d / b:.2f}")
    out["equality"] = equality()
    print("equality with lib-dt-modeling over 10,000 steps:",
          out["equality"] if out["equality"] is not None else "skipped (no lib-dt-modeling)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
