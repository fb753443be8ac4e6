"""Draw docs/maps.md's pictures of the Duckietown formats and the Duckiebot's camera,
and write the layered copy of the example map.

- examples/maps/town-layered/: examples/maps/town.yaml (gym-duckietown's format)
  written as a Duckiematrix layered folder (dmxshm.duckiematrix.layers.write_folder);
- docs/map-town.png: both from above, side by side, as dmxshm's renderer draws them
  (8 robots at the start poses of seed 0): the same map read from either format;
- docs/camera-town.png: what a robot at the 4-way's stop line sees: dmxshm's
  60-degree pinhole camera, the Duckiebot's lens camera (--camera duckiebot), and that
  lens image undistorted with its published calibration (straight edges straight).

Run: python scripts/draw_maps.py   (needs matplotlib)
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dmxshm.duckiematrix.layers import write_folder  # noqa: E402
from dmxshm.matrix.camera import Camera, top_view  # noqa: E402
from dmxshm.matrix.lens import undistorter  # noqa: E402
from dmxshm.world.maps import load_map  # noqa: E402
from dmxshm.world.world import World  # noqa: E402

TOWN = ROOT / "examples" / "maps" / "town.yaml"
LAYERED = ROOT / "examples" / "maps" / "town-layered"


def main() -> int:
    town = load_map(TOWN)
    if LAYERED.exists():
        shutil.rmtree(LAYERED)
    write_folder(town, LAYERED)
    layered = load_map(LAYERED)
    assert layered.tiles == town.tiles and len(layered.objects) == len(town.objects)

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.2))
    for ax, m, title in ((axes[0], town, "examples/maps/town.yaml (gym-duckietown YAML)"),
                         (axes[1], layered, "examples/maps/town-layered/ (layered folder)")):
        ax.imshow(top_view(m, 480, robots=8))
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "map-town.png", dpi=100)
    plt.close(fig)

    # A robot in the right lane of the 4-way's south arm, at its stop line, facing north.
    ts = town.tile_size_m
    cx, cy = town.tile_center(4, 3)
    pose = (cx + town.lane_offset_m, cy + 0.1, math.pi / 2)
    pinhole, lens = Camera(640, 480), Camera.duckiebot()
    with World(town, 1) as w:
        w.replace_robots([pose])
        row = w.state()[0]
        a, b = pinhole.render(w.client, row), lens.render(w.client, row)
    assert lens.lens is not None
    c = undistorter(lens.lens)(b)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, img, title in ((axes[0], a, "pinhole, 60 degrees (--camera 640x480)"),
                           (axes[1], b, "Duckiebot lens (--camera duckiebot)"),
                           (axes[2], c, "the lens image undistorted with its calibration")):
        ax.imshow(img)
        ax.set_title(title, fontsize=10)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "camera-town.png", dpi=90)
    plt.close(fig)
    print(f"wrote {LAYERED}, docs/map-town.png, docs/camera-town.png (tile {ts} m)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
