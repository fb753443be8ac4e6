"""What a digest over everything a run produces would cost per step, by hash.

Issue 25 asks for a digest over every published state in full, every sensor
sample (images included) and every applied command. This measures, for the
bytes one gym step produces (``--robots`` robots, a ``--camera`` W x H camera
or none), the time to feed them to sha256 (today's pose digest), blake2b
(stdlib) and xxh3-128 (the ``xxhash`` package, if installed), in one
``update`` per array, as a tap would. Prints us per step and the bytes;
``--json OUT`` keeps them.

    python scripts/hash_cost.py --robots 4 --camera 160x120
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np

from dmxshm.matrix.obs import obs_dtype
from dmxshm.world.state import ROBOT_STATE_DTYPE


def hashers() -> dict[str, object]:
    out: dict[str, object] = {"sha256": hashlib.sha256, "blake2b": hashlib.blake2b}
    try:
        import xxhash

        out["xxh3_128"] = xxhash.xxh3_128
    except ImportError:
        pass
    return out


def step_arrays(robots: int, camera: tuple[int, int] | None) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    states = np.zeros(robots, ROBOT_STATE_DTYPE)
    states.view(np.uint8)[:] = rng.integers(0, 256, states.nbytes, dtype=np.uint8)
    obs = np.zeros(robots, obs_dtype(camera))
    obs.view(np.uint8)[:] = rng.integers(0, 256, obs.nbytes, dtype=np.uint8)
    commands = rng.uniform(-5, 5, (robots, 2))
    return [states, obs, commands]


def cost_us(make: object, arrays: list[np.ndarray], steps: int = 2000, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        h = make()  # type: ignore[operator]
        t0 = time.process_time()
        for _ in range(steps):
            for a in arrays:
                h.update(a.data)
        best = min(best, (time.process_time() - t0) / steps * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", type=int, default=4)
    ap.add_argument("--camera", default="0x0", help="W x H, 0x0: none")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    w, h = (int(v) for v in a.camera.lower().split("x"))
    arrays = step_arrays(a.robots, (w, h) if w and h else None)
    nbytes = sum(x.nbytes for x in arrays)
    rows = {name: cost_us(make, arrays) for name, make in hashers().items()}
    pose = np.zeros((a.robots, 3))
    rows["sha256 poses only (today)"] = cost_us(hashlib.sha256, [pose])
    print(f"{a.robots} robot(s), camera {a.camera}: {nbytes} bytes a step "
          f"(states {arrays[0].nbytes}, samples {arrays[1].nbytes}, commands {arrays[2].nbytes})")
    for name, us in rows.items():
        print(f"  {name:<26} {us:8.2f} us a step")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"robots": a.robots, "camera": a.camera, "bytes": nbytes, "us": rows}, f)


if __name__ == "__main__":
    main()
