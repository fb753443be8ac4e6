"""Draw docs/renderers.png: the same views by tiny, batch and EGL, side by side.

    python scripts/draw_renderers.py [--out docs/renderers.png]

One robot's view on the town map (the scene of ``dmxshm bench render``: 16 robots at
seed 1's start poses), 320x240, pinhole and the Duckiebot's lens, one row per renderer
(EGL where it loads here), each labelled. Needs the plot extra (matplotlib).
"""

from __future__ import annotations

import argparse

import numpy as np

from dmxshm.bench.render import _time
from dmxshm.errors import DmxError
from dmxshm.world.world import World


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/renderers.png")
    ap.add_argument("--map", default="town")
    ap.add_argument("--robot", type=int, default=0, help="whose view")
    args = ap.parse_args()
    from dmxshm.bench.plot import _pyplot, _save

    plt = _pyplot()
    rows: list[tuple[str, list[np.ndarray]]] = []
    for renderer in ("tiny", "batch", "egl"):
        try:
            world = World(args.map, 16, seed=1, renderer=renderer)
        except DmxError as exc:
            print(f"{renderer}: not drawn: {exc}")
            continue
        with world:
            views = [_time(world, renderer, model, (320, 240), args.robot + 1, 0.0)[1][-1]
                     for model in ("pinhole", "duckiebot")]
        rows.append((renderer, views))
    fig, axes = plt.subplots(len(rows), 2, figsize=(8, 3 * len(rows)), squeeze=False)
    for (renderer, views), row in zip(rows, axes, strict=True):
        for image, ax, model in zip(views, row, ("pinhole", "the Duckiebot's lens"),
                                    strict=True):
            ax.imshow(image)
            ax.set_title(f"{renderer}, {model}", fontsize=10)
            ax.axis("off")
    fig.suptitle(f"map {args.map}, robot {args.robot}'s camera, 320x240")
    _save(plt, fig, args.out, rect=(0, 0, 1, 0.97))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
