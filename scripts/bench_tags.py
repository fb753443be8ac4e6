"""Duckietown's AprilTag detector on the Duckietown look: detection rate and pose error
over random poses facing a sign, by distance, with the detector's own floor beside.

Each frame: a robot whose camera is ``d`` from a stop sign's tag (horizontally), seen
from up to 25 degrees off the sign's normal, the robot turned up to 12 degrees off
the sign, all drawn from ``--seed``. The batch renderer draws the 640x480 lens frame;
it is rectified and read as Duckietown's AprilTag node does (``getOptimalNewCameraMatrix``
alpha 0, grey, dt-core's detector settings: quad_decimate 2, decode_sharpening 0.25,
refine_edges; tag size 6.5 cm). The pose found is compared with the true one
(:func:`dmxshm.matrix.tag_pose.tag_pose`).

The reference, ``ideal``: the same detector on an ideal rectified frame of the same
pose, the tag drawn straight into it from the true pose with 8x8 samples a pixel
(no lens, no remap, no renderer). What it gets wrong is the detector's own error at
that distance (its pose from four corners of a tag a few tens of pixels across),
which no renderer can remove.

Usage: python scripts/bench_tags.py [--frames 100] [--distances 0.3,0.45,0.6,0.8,1.0]
       [--seed 0] [--decimate 2.0] [--json FILE]
Needs dt-apriltags (pip install dt-apriltags; Linux wheels only).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dmxshm.matrix.batch_render import BatchRenderer  # noqa: E402
from dmxshm.matrix.camera import Camera  # noqa: E402
from dmxshm.matrix.tag_pose import pose_error, rectifier, robot_facing, tag_pose  # noqa: E402
from dmxshm.world import sign_faces, tag36h11  # noqa: E402
from dmxshm.world.world import World  # noqa: E402

TAG_ID = 1  # Duckietown's stop sign's id (apriltagsDB.yaml)
OFF_NORMAL_DEG = 25.0
TURN_DEG = 12.0


def grey(img: np.ndarray) -> np.ndarray:
    return (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).astype(np.uint8)


def face_levels(rect: np.ndarray, det: Any) -> tuple[float, float, float]:
    """The grey levels of the tag's white and black as the renderer drew them (inside
    the tag found in ``rect``), and the frame's median for the background."""
    tags = det.detect(rect)
    if not tags:
        return 242.0, 8.0, float(np.median(rect))
    c = np.asarray(tags[0].corners)
    box = rect[int(c[:, 1].min()):int(c[:, 1].max()) + 1,
               int(c[:, 0].min()):int(c[:, 0].max()) + 1]
    return float(np.percentile(box, 95)), float(np.percentile(box, 5)), float(np.median(rect))


def ideal(t: np.ndarray, R: np.ndarray, k: tuple[float, ...], shape: tuple[int, int],
          levels: tuple[float, float, float], ss: int = 8) -> np.ndarray:
    """A grey rectified frame of the tag at pose ``(t, R)`` (camera frame) seen by a
    pinhole camera of intrinsics ``k`` (pixel centres at ``i + 0.5``): the face's ten
    cells across (white ring, black border, code), the plate beyond it, a plain
    background; each pixel the mean of ``ss`` x ``ss`` samples."""
    white, black, back = levels
    h, w = shape
    K = np.array(k).reshape(3, 3)
    H = K @ np.column_stack([R[:, 0], R[:, 1], t])  # the tag's plane (a, b, 1) -> pixel
    Hinv = np.linalg.inv(H)
    cells = tag36h11.cells(TAG_ID).astype(np.float64)  # 10x10, 1 white
    cell = sign_faces.CELL_M
    out = np.full((h, w), back)
    corners = H @ np.array([[-6 * cell, -6 * cell, 1], [6 * cell, -6 * cell, 1],
                            [6 * cell, 6 * cell, 1], [-6 * cell, 6 * cell, 1]]).T
    cu, cv = corners[0] / corners[2], corners[1] / corners[2]
    c0, c1 = max(int(cu.min()) - 2, 0), min(int(cu.max()) + 3, w)
    r0, r1 = max(int(cv.min()) - 2, 0), min(int(cv.max()) + 3, h)
    off = (np.arange(ss) + 0.5) / ss
    u = (np.arange(c0, c1)[:, None] + off[None, :]).ravel()
    v = (np.arange(r0, r1)[:, None] + off[None, :]).ravel()
    uu, vv = np.meshgrid(u, v)
    p = Hinv @ np.stack([uu.ravel(), vv.ravel(), np.ones(uu.size)])
    a, b = p[0] / p[2], p[1] / p[2]  # on the tag's plane: right, down from its centre
    col = np.floor(a / cell + 5).astype(np.int64)
    row = np.floor(b / cell + 5).astype(np.int64)
    inside = (col >= 0) & (col < 10) & (row >= 0) & (row < 10)
    level = np.full(a.shape, back)
    level[(np.abs(a) <= sign_faces.FACE_W_M / 2) & ~inside] = white  # the plate
    level[inside] = np.where(cells[row[inside], col[inside]] == 1, white, black)
    block = level.reshape(r1 - r0, ss, c1 - c0, ss).mean(axis=(1, 3))
    out[r0:r1, c0:c1] = block
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=100, help="frames a distance (100)")
    ap.add_argument("--distances", default="0.3,0.45,0.6,0.8,1.0",
                    help="camera-to-tag distances, m (0.3,0.45,0.6,0.8,1.0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--decimate", type=float, default=2.0,
                    help="the detector's quad_decimate (dt-core's default: 2.0)")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args(argv)
    try:
        from dt_apriltags import Detector
    except ImportError:
        sys.exit("bench_tags needs dt-apriltags: pip install dt-apriltags")
    det = Detector(families="tag36h11", nthreads=1, quad_decimate=args.decimate,
                   quad_sigma=0.0, refine_edges=1, decode_sharpening=0.25)
    cam = Camera.duckiebot(640, 480, renderer="batch")
    remap, params = rectifier(cam)
    k_rect = (params[0], 0.0, params[2], 0.0, params[1], params[3], 0.0, 0.0, 1.0)
    rng = np.random.default_rng(args.seed)
    rows = []
    with World("big-loop", 1, seed=0, renderer="batch") as w:
        sx, sy = 1.2, 0.9  # the sign: on the floor inside the loop, facing +x
        sign = w.add_object("sign_stop", sx, sy, 0.0, tag_id=TAG_ID)
        r = BatchRenderer.of_world(w, look="duckietown")
        states = w.state()
        img = np.zeros((1, *cam.shape), np.uint8)
        levels = None
        for d in (float(x) for x in args.distances.split(",")):
            errs, found_n, ideal_errs, ideal_n = [], 0, [], 0
            t0 = time.perf_counter()
            for _ in range(args.frames):
                off = math.radians(rng.uniform(-OFF_NORMAL_DEG, OFF_NORMAL_DEG))
                turn = math.radians(rng.uniform(-TURN_DEG, TURN_DEG))
                x, y, yaw = robot_facing(sign, cam, d, off, turn)
                states["pos_m"][0, :2] = (x, y)
                states["quat_xyzw"][0] = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
                r.render([cam], states, 0.0, img, seen=states, owners=[0])
                t, R = tag_pose(sign, states[0], cam)
                rect = grey(remap(img[0]))
                got = [f for f in det.detect(rect, True, params, sign_faces.TAG_SIZE_M)
                       if f.tag_id == TAG_ID]
                if got:
                    found_n += 1
                    errs.append(pose_error(t, R, got[0].pose_t, got[0].pose_R))
                if levels is None:
                    levels = face_levels(rect, det)
                perfect = ideal(t, R, k_rect, rect.shape, levels)
                got = [f for f in det.detect(perfect, True, params, sign_faces.TAG_SIZE_M)
                       if f.tag_id == TAG_ID]
                if got:
                    ideal_n += 1
                    ideal_errs.append(pose_error(t, R, got[0].pose_t, got[0].pose_R))
            row = {"distance_m": d, "frames": args.frames,
                   "detected": found_n / args.frames, "ideal_detected": ideal_n / args.frames,
                   "seconds": round(time.perf_counter() - t0, 1)}
            for name, e in (("", errs), ("ideal_", ideal_errs)):
                a = np.array(e) if e else np.full((1, 2), np.nan)
                row[f"{name}pos_cm_median"] = float(np.median(a[:, 0]) * 100)
                row[f"{name}pos_cm_p95"] = float(np.percentile(a[:, 0], 95) * 100)
                row[f"{name}deg_median"] = float(np.median(a[:, 1]))
                row[f"{name}deg_p95"] = float(np.percentile(a[:, 1], 95))
                row[f"{name}within_2cm_3deg"] = float(np.mean((a[:, 0] <= 0.02)
                                                             & (a[:, 1] <= 3.0)))
            rows.append(row)
            print(f"{d:4.2f} m  detected {row['detected']:5.0%}"
                  f" (ideal {row['ideal_detected']:4.0%})"
                  f"  position {row['pos_cm_median']:5.2f} cm (p95 {row['pos_cm_p95']:5.2f};"
                  f" ideal {row['ideal_pos_cm_median']:5.2f})"
                  f"  angle {row['deg_median']:5.2f} deg (p95 {row['deg_p95']:5.2f};"
                  f" ideal {row['ideal_deg_median']:5.2f}, p95 {row['ideal_deg_p95']:5.2f})"
                  f"  within 2 cm and 3 deg {row['within_2cm_3deg']:4.0%}"
                  f" (ideal {row['ideal_within_2cm_3deg']:4.0%})", flush=True)
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "command": "python scripts/bench_tags.py " + " ".join(argv or sys.argv[1:]),
           "decimate": args.decimate, "seed": args.seed, "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
