"""gym-duckietown's camera frame beside the drop-in's, flat and Duckietown, from the
same pose on the same map: docs/gym-duckietown-looks.png, and how far each look is
from gym-duckietown's frame.

    python scripts/draw_gym_duckietown.py --peer-python gdvenv/bin/python \\
        [--maps udem1,loop_obstacles] [--out docs/gym-duckietown-looks.png] [--json F]

gym-duckietown runs in its own interpreter (set it up as ``scripts/bench_dropin.py``
says; it draws headless through pyglet's EGL). For each map: its ``Simulator``
(``domain_rand=False``, seeded, 640x480, no lens) is reset and its camera image taken
at the start pose it chose; the drop-in's ``Simulator`` on the same map file is put at
that pose and its image taken in the flat look and in the Duckietown look. Each row:
gym-duckietown, flat, Duckietown (at half size). Printed per map and look: the mean
absolute difference to gym-duckietown's frame (0-255, all channels), and the same of
the lower half alone (the road in front of the robot).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PEER = r'''
import json, sys, os
spec = json.loads(sys.stdin.read())
import numpy as np
from gym_duckietown.simulator import Simulator
import duckietown_world
maps = os.path.join(os.path.dirname(duckietown_world.__file__), "data", "gd1", "maps")
env = Simulator(map_name=spec["map"], domain_rand=False, dynamics_rand=False,
                camera_width=640, camera_height=480, seed=spec["seed"], max_steps=10**6)
env.reset()
np.save(spec["out"], env.render_obs())
print(json.dumps({"maps": maps, "height": env.grid_height * env.road_tile_size,
                  "pose": [float(env.cur_pos[0]), float(env.cur_pos[2]),
                           float(env.cur_angle)]}))
env.close()
'''


def peer(python: str, map_name: str, seed: int, out: str) -> Any:
    got = subprocess.run([python, "-c", PEER], input=json.dumps(
        {"map": map_name, "seed": seed, "out": out}), capture_output=True, text=True,
        timeout=600)
    if got.returncode != 0:
        raise SystemExit(f"gym-duckietown failed on {map_name}:\n{got.stderr[-3000:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def ours(map_path: str, pose: list[float], height: float, look: str) -> np.ndarray:
    from compare_gym_duckietown import dropin_at  # (this folder's: scripts/)

    with dropin_at(map_path, pose, height, (640, 480), look=look) as env:
        return env.render_obs()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer-python", required=True)
    ap.add_argument("--maps", default="udem1,loop_obstacles")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", default="docs/gym-duckietown-looks.png")
    ap.add_argument("--json")
    args = ap.parse_args()
    from dmxshm.pngio import contact_sheet, write_png

    rows, report = [], {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        "maps": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.maps.split(","):
            theirs = peer(args.peer_python, name, args.seed, f"{tmp}/{name}.npy")
            frame = np.load(f"{tmp}/{name}.npy")
            path = f"{theirs['maps']}/{name}.yaml"
            row, report["maps"][name] = [frame], {"pose": theirs["pose"]}
            for look in ("flat", "duckietown"):
                img = ours(path, theirs["pose"], theirs["height"], look)
                d = np.abs(img.astype(np.int16) - frame.astype(np.int16))
                report["maps"][name][look] = {"mean_abs_difference": float(d.mean()),
                                              "lower_half": float(d[240:].mean())}
                print(f"{name} {look}: mean absolute difference to gym-duckietown's frame "
                      f"{d.mean():.1f} of 255 (lower half {d[240:].mean():.1f})", flush=True)
                row.append(img)
            rows.append([r.reshape(240, 2, 320, 2, 3).mean(axis=(1, 3)).astype(np.uint8)
                         for r in row])
    write_png(args.out, contact_sheet(rows))
    print(f"wrote {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
