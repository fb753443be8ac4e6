"""Draw docs/looks.png and docs/objects.png: the flat look beside the Duckietown look.

    python scripts/draw_looks.py [--out docs/objects.png] [--signs docs/looks.png]

objects.png: each object kind at its default height, on the big loop, turned a little,
seen by a Duckiebot's lens camera (240x180, the batch renderer) from a distance that
fits it; two images a kind (flat, then Duckietown), three kinds a row. looks.png: a
stop sign with tag 7 0.6 m ahead in a 640x480 lens frame, flat and Duckietown, drawn
at half size.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dmxshm.matrix.batch_render import BatchRenderer  # noqa: E402
from dmxshm.matrix.camera import Camera  # noqa: E402
from dmxshm.pngio import contact_sheet, write_png  # noqa: E402
from dmxshm.world.objects import DEFAULT_HEIGHT_M  # noqa: E402
from dmxshm.world.state import yaw_of  # noqa: E402
from dmxshm.world.world import World  # noqa: E402

KINDS = ("duckie", "cone", "barrier", "trafficlight", "house", "building", "tree", "bus",
         "truck", "duckiebot", "sign_stop", "sign_yield")


def view(kind: str, look: str, size: tuple[int, int]) -> np.ndarray:
    h = DEFAULT_HEIGHT_M[kind]
    distance = max(0.25, 3.2 * h)
    cam = Camera.duckiebot(*size, renderer="batch")
    with World("big-loop", 1, seed=0, renderer="batch") as w:
        x, y, _ = (float(v) for v in w.state()[0]["pos_m"])
        yaw = float(yaw_of(w.state()[0]["quat_xyzw"]))
        ahead = (x + distance * math.cos(yaw) - 0.3 * h * math.sin(yaw),
                 y + distance * math.sin(yaw) + 0.3 * h * math.cos(yaw))
        w.add_object(kind, *ahead, yaw + math.radians(200),
                     tag_id=1 if kind.startswith("sign_") else None)
        states = w.state()
        r = BatchRenderer.of_world(w, look=look)
        return r.render([cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8),
                        seen=states, owners=[0])[0]


def sign(look: str) -> np.ndarray:
    cam = Camera.duckiebot(640, 480, renderer="batch")
    with World("big-loop", 1, seed=0, renderer="batch") as w:
        x, y, _ = (float(v) for v in w.state()[0]["pos_m"])
        yaw = float(yaw_of(w.state()[0]["quat_xyzw"]))
        w.add_object("sign_stop", *robot_ahead(x, y, yaw, cam.mount_m[0] + 0.6), yaw + math.pi,
                     tag_id=7)
        states = w.state()
        img = BatchRenderer.of_world(w, look=look).render(
            [cam], states, 0.0, np.zeros((1, *cam.shape), np.uint8), seen=states,
            owners=[0])[0]
    return img.reshape(240, 2, 320, 2, 3).mean(axis=(1, 3)).astype(np.uint8)


def robot_ahead(x: float, y: float, yaw: float, d: float) -> tuple[float, float]:
    return x + d * math.cos(yaw), y + d * math.sin(yaw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/objects.png")
    ap.add_argument("--signs", default="docs/looks.png")
    args = ap.parse_args()
    write_png(args.signs, np.concatenate([sign("flat"), sign("duckietown")], axis=1))
    print(f"wrote {args.signs}")
    images = [[view(k, look, (240, 180)) for look in ("flat", "duckietown")] for k in KINDS]
    rows = [sum(images[i:i + 3], []) for i in range(0, len(images), 3)]
    write_png(args.out, contact_sheet(rows))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
