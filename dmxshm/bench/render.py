"""``dmxshm bench render``: the camera renderers side by side, on the same scene.

For each renderer (``tiny``, ``egl``) and image size, one process renders
the same robots' views of the same map: ms per frame (median and mean over
``frames`` renders, after a few warm-up renders) and the frames per second
one process makes. Then, per size, how the two renderers' images of the same
view differ: the mean absolute difference (0-255, over all channels), the
share of pixels that differ at all and the share that differ by more than
32 levels in some channel.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.matrix.camera import Camera
from dmxshm.world.renderers import egl_device
from dmxshm.world.world import World

DEFAULT_SIZES = ((64, 64), (160, 120), (640, 480))
WARMUP = 3
BIG_DIFFERENCE = 32


def run(sizes: tuple[tuple[int, int], ...] = DEFAULT_SIZES, renderers: tuple[str, ...] = (
        "tiny", "egl"), frames: int = 30, robots: int = 2, map_name: str = "loop",
        seed: int = 0, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Time every renderer at every size; compare their images.

    Returns:
        ``{"rows": [...], "differences": [...], "unavailable": {renderer: why}}``
        and the images (``images[renderer][size]``, robot 0's view).
    """
    rows: list[dict[str, Any]] = []
    images: dict[str, dict[str, np.ndarray]] = {}
    unavailable: dict[str, str] = {}
    for renderer in renderers:
        try:
            world = World(map_name, robots, seed=seed, renderer=renderer)
        except DmxError as exc:
            unavailable[renderer] = str(exc)
            continue
        try:
            states = world.state()
            images[renderer] = {}
            for w, h in sizes:
                cam = Camera(w, h, renderer=renderer)
                for i in range(WARMUP):
                    cam.render(world.client, states[i % robots])
                out = np.empty(cam.shape, np.uint8)
                times = []
                for i in range(frames):
                    t0 = time.perf_counter()
                    cam.render(world.client, states[i % robots], out=out)
                    times.append(time.perf_counter() - t0)
                images[renderer][f"{w}x{h}"] = cam.render(world.client, states[0])
                mean = statistics.fmean(times)
                rows.append({"renderer": renderer, "size": f"{w}x{h}",
                             "ms_per_frame_p50": statistics.median(times) * 1e3,
                             "ms_per_frame_mean": mean * 1e3, "frames_per_s": 1.0 / mean,
                             "frames": frames})
                if progress is not None:
                    progress(f"{renderer} {w}x{h}")
        finally:
            world.close()
    differences = []
    if len(images) == 2:
        a, b = (images[r] for r in renderers if r in images)
        for size in a:
            d = np.abs(a[size].astype(np.int16) - b[size].astype(np.int16))
            differences.append({"size": size, "mean_abs_difference": float(d.mean()),
                                "pixels_differing": float((d.max(axis=2) > 0).mean()),
                                "pixels_differing_over_32": float(
                                    (d.max(axis=2) > BIG_DIFFERENCE).mean())})
    return {"rows": rows, "differences": differences, "unavailable": unavailable,
            "egl_device": egl_device() if "egl" in images else None,
            "images": images, "robots": robots, "map": map_name}


def speedups(result: dict[str, Any]) -> dict[str, float]:
    """EGL's frames/s over tiny's, per size (where both ran)."""
    by = {(r["renderer"], r["size"]): r["frames_per_s"] for r in result["rows"]}
    return {size: by[("egl", size)] / by[("tiny", size)] for (name, size) in by
            if name == "tiny" and ("egl", size) in by}
