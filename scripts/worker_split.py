"""Where one DuckieLane env-step goes in a batch worker, and what batching its
arithmetic with numpy would save.

Issue 13, item 4 asks for a worker that computes lane pose, sensors, reward
and termination for all its worlds in one numpy pass. Before building it,
this measures on the machine at hand:

1. the split of one ``step_wheels`` (``obs="state"``): physics (Bullet
   substeps), reading the state back, the measurement (lane pose, time of
   flight, the arithmetic), and the rest;
2. the part numpy could batch: the rotation matrix, the speed, the IMU and
   gyro in the robot frame, the state vector and its clip, and the reward,
   per world with plain floats (today's path) against one numpy pass over
   ``k`` worlds, on states of real stepped worlds, and checks that both give
   the same bits (math's atan2 and cos per element in both: numpy's differ
   from math's in the last bit on some CPUs).

Usage: ``python scripts/worker_split.py`` (a few seconds).
"""

from __future__ import annotations

import math
import timeit
from functools import partial

import numpy as np
import pybullet as pb

from dmxshm.batch.env import STATE_HIGH, STATE_LOW, DuckieLaneEnv
from dmxshm.matrix.camera import quat_matrix
from dmxshm.world.world import GRAVITY_M_S2

N = 2000
DT, PENALTY = 1.0 / 30.0, 2.0


def per_us(fn, number: int = N) -> float:  # noqa: ANN001
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def per_world(s: list[float], lane: tuple[float, float], tof: float
              ) -> tuple[np.ndarray, float]:
    """Today's arithmetic of DuckieLaneEnv._measure and step_wheels, plain floats."""
    (px, py, pz, qx, qy, qz, qw, vx, vy, vz, wx, wy, wz, ax, ay, az) = s
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_matrix((qx, qy, qz, qw))
    offset, heading = lane
    speed = r00 * vx + r10 * vy + r20 * vz
    az += GRAVITY_M_S2
    row = [offset, heading, speed, wz,
           r00 * ax + r10 * ay + r20 * az, r01 * ax + r11 * ay + r21 * az,
           r02 * ax + r12 * ay + r22 * az,
           r00 * wx + r10 * wy + r20 * wz, r01 * wx + r11 * wy + r21 * wz,
           r02 * wx + r12 * wy + r22 * wz, tof]
    vector = np.array(row, dtype=np.float32)
    obs = np.minimum(np.maximum(vector, STATE_LOW, out=vector), STATE_HIGH, out=vector)
    progress = speed * math.cos(heading) * DT
    return obs, progress - PENALTY * abs(offset) * DT


def batched(states: np.ndarray, lanes: np.ndarray, tofs: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The same arithmetic for k worlds in one numpy pass, same operation order."""
    px, py, pz, qx, qy, qz, qw, vx, vy, vz, wx, wy, wz, ax, ay, az = states.T
    r00, r01, r02 = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)
    r10, r11, r12 = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)
    r20, r21, r22 = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)
    offset, heading = lanes[:, 0], lanes[:, 1]
    speed = r00 * vx + r10 * vy + r20 * vz
    az = az + GRAVITY_M_S2
    rows = np.column_stack([
        offset, heading, speed, wz,
        r00 * ax + r10 * ay + r20 * az, r01 * ax + r11 * ay + r21 * az,
        r02 * ax + r12 * ay + r22 * az,
        r00 * wx + r10 * wy + r20 * wz, r01 * wx + r11 * wy + r21 * wz,
        r02 * wx + r12 * wy + r22 * wz, tofs])
    obs = np.clip(rows.astype(np.float32), STATE_LOW, STATE_HIGH)
    cos = np.array([math.cos(h) for h in heading.tolist()])
    return obs, speed * cos * DT - PENALTY * np.abs(offset) * DT


def _each(args: list[tuple[list[float], tuple[float, float], float]]) -> None:
    for row, lane, tof in args:
        per_world(row, lane, tof)


def main() -> None:
    env = DuckieLaneEnv(obs="state")
    env.reset(seed=0)
    world = env.world
    for _ in range(100):
        env.step_wheels(0.5, 0.55)
    state = world.state(copy=False)
    step = per_us(lambda: env.step_wheels(0.5, 0.55))
    substep = per_us(lambda: pb.stepSimulation(physicsClientId=world.client))
    read = per_us(lambda: world._read_state(None))
    measure = per_us(lambda: env._measure(state))
    lane = per_us(lambda: world.road_map.lane_pose(1.0, 0.3, 0.1))
    physics = substep * world.substeps
    print(f"one step_wheels, obs='state': {step:.1f} us")
    print(f"  physics ({world.substeps} Bullet substeps)  {physics:6.1f} us  "
          f"{physics / step:5.1%}")
    print(f"  reading the state back         {read:6.1f} us  {read / step:5.1%}")
    print(f"  measurement (lane pose {lane:.1f} us, ToF, arithmetic)  {measure:6.1f} us  "
          f"{measure / step:5.1%}")
    rest = step - physics - read - measure
    print(f"  the rest (wheel command, reward, bookkeeping)  {rest:6.1f} us  {rest / step:5.1%}")

    rng = np.random.default_rng(0)
    pool = []  # states of real worlds, stepped with random wheels
    for _ in range(64):
        _, _, ended, cut, _ = env.step_wheels(*rng.uniform(-1, 1, 2).tolist())
        if ended or cut:
            env.reset()
        pool.append(world.state(copy=False).view(np.float64)[:16].tolist())
    print("\nthe arithmetic numpy could batch, per world and env-step:")
    for k in (1, 8, 32):
        rows = pool[:k]
        lanes = rng.uniform(-0.1, 0.1, (k, 2))
        tofs = rng.uniform(0.0, 1.2, k)
        lane_list, tof_list = [tuple(x) for x in lanes.tolist()], tofs.tolist()
        obs_b, reward_b = batched(np.array(rows), lanes, tofs)
        same = all(np.array_equal(per_world(r, ln, t)[0], obs_b[i])
                   and per_world(r, ln, t)[1] == reward_b[i]
                   for i, (r, ln, t) in enumerate(zip(rows, lane_list, tof_list, strict=True)))
        args = list(zip(rows, lane_list, tof_list, strict=True))
        a = per_us(partial(_each, args), N // k) / k
        b = per_us(partial(batched, np.array(rows), lanes, tofs), N // k) / k
        print(f"  k={k:>2} worlds: plain floats {a:5.2f} us, numpy pass {b:5.2f} us; "
              f"saves {a - b:5.2f} us ({(a - b) / step:+.1%} of a step); same bits: {same}")
    env.close()


if __name__ == "__main__":
    main()
