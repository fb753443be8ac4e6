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
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.matrix.camera import Camera
from dmxshm.world.renderers import egl_device
from dmxshm.world.world import World

DEFAULT_SIZES = ((64, 64), (160, 120), (640, 480))
WARMUP = 3
BIG_DIFFERENCE = 32


@dataclass(frozen=True)
class RenderRow:
    """One renderer at one image size: its time per frame, over ``frames`` renders;
    ``camera`` ``pinhole`` or ``duckiebot`` (the lens camera: a wider pinhole image
    remapped through the lens, :mod:`dmxshm.matrix.lens`)."""

    renderer: str
    size: str
    ms_per_frame_p50: float
    ms_per_frame_mean: float
    frames_per_s: float
    frames: int
    camera: str = "pinhole"


@dataclass(frozen=True)
class ImageDifference:
    """How the two renderers' images of the same view differ at one size.

    Attributes:
        size: ``WxH``.
        mean_abs_difference: over all pixels and channels, 0-255.
        pixels_differing: the share of pixels that differ at all.
        pixels_differing_over_32: the share that differ by more than 32 levels in
            some channel.
    """

    size: str
    mean_abs_difference: float
    pixels_differing: float
    pixels_differing_over_32: float


@dataclass(frozen=True)
class RenderResult:
    """What ``dmxshm bench render`` measured.

    Attributes:
        rows: each renderer at each size, renderer by renderer.
        differences: per size, how the two renderers' images differ (empty
            unless both ran).
        unavailable: the renderers that could not load here, and why.
        egl_device: the OpenGL renderer EGL drew with (None: EGL did not run).
        robots, map_name: the scene.
        egl_over_tiny: EGL's frames/s over tiny's, per size where both ran.
        lens_cost: with ``lens``, each renderer's lens frame time over its pinhole
            frame time at the same size (``"tiny 640x480": 2.6``).
        images: robot 0's view, by renderer and size (not in the JSON).
    """

    rows: list[RenderRow]
    differences: list[ImageDifference]
    unavailable: dict[str, str]
    egl_device: str | None
    robots: int
    map_name: str
    egl_over_tiny: dict[str, float]
    lens_cost: dict[str, float] = field(default_factory=dict)
    images: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """``dmxshm bench render --json``: the figures, without the images."""
        return {"rows": [asdict(r) for r in self.rows],
                "differences": [asdict(d) for d in self.differences],
                "unavailable": dict(self.unavailable), "egl_device": self.egl_device,
                "robots": self.robots, "map": self.map_name,
                "egl_over_tiny": dict(self.egl_over_tiny), "lens_cost": dict(self.lens_cost)}


def run(sizes: tuple[tuple[int, int], ...] = DEFAULT_SIZES, renderers: tuple[str, ...] = (
        "tiny", "egl"), frames: int = 30, robots: int = 2, map_name: str = "loop",
        seed: int = 0, progress: Callable[[str], None] | None = None,
        lens: bool = False) -> RenderResult:
    """Time every renderer at every size; compare their images.

    Args:
        sizes: image sizes, (width, height).
        renderers: the renderers to measure, in order (a third is not compared).
        frames: timed renders per renderer and size.
        robots: robots in the scene; the renders take their views in turn.
        map_name: the scene's map.
        seed: the robots' start poses.
        progress: called with ``"RENDERER WxH"`` after each measurement.
        lens: also time the Duckiebot's lens camera at each size.
    """
    rows: list[RenderRow] = []
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
                models = ("pinhole", "duckiebot") if lens else ("pinhole",)
                for model in models:
                    cam = Camera.of_model(model, w, h, renderer=renderer)
                    for i in range(WARMUP):
                        cam.render(world.client, states[i % robots])
                    out = np.empty(cam.shape, np.uint8)
                    times = []
                    for i in range(frames):
                        t0 = time.perf_counter()
                        cam.render(world.client, states[i % robots], out=out)
                        times.append(time.perf_counter() - t0)
                    key = f"{w}x{h}" if model == "pinhole" else f"{w}x{h}-{model}"
                    images[renderer][key] = cam.render(world.client, states[0])
                    mean = statistics.fmean(times)
                    rows.append(RenderRow(renderer=renderer, size=f"{w}x{h}",
                                          ms_per_frame_p50=statistics.median(times) * 1e3,
                                          ms_per_frame_mean=mean * 1e3,
                                          frames_per_s=1.0 / mean, frames=frames,
                                          camera=model))
                    if progress is not None:
                        progress(f"{renderer} {w}x{h}" + ("" if model == "pinhole"
                                                          else f" {model}"))
        finally:
            world.close()
    differences = []
    if len(images) == 2:
        a, b = (images[r] for r in renderers if r in images)
        for size in (k for k in a if "-" not in k):  # the pinhole images
            d = np.abs(a[size].astype(np.int16) - b[size].astype(np.int16))
            differences.append(ImageDifference(
                size=size, mean_abs_difference=float(d.mean()),
                pixels_differing=float((d.max(axis=2) > 0).mean()),
                pixels_differing_over_32=float((d.max(axis=2) > BIG_DIFFERENCE).mean())))
    return RenderResult(rows=rows, differences=differences, unavailable=unavailable,
                        egl_device=egl_device() if "egl" in images else None, robots=robots,
                        map_name=map_name, egl_over_tiny=speedups(rows),
                        lens_cost=lens_costs(rows), images=images)


def speedups(rows: list[RenderRow]) -> dict[str, float]:
    """EGL's frames/s over tiny's, per size (where both ran).

    Example:
        >>> row = lambda name, fps: RenderRow(name, "64x64", 1e3 / fps, 1e3 / fps, fps, 1)
        >>> speedups([row("tiny", 100.0), row("egl", 250.0)])
        {'64x64': 2.5}
    """
    by = {(r.renderer, r.size): r.frames_per_s for r in rows if r.camera == "pinhole"}
    return {size: by[("egl", size)] / by[("tiny", size)] for (name, size) in by
            if name == "tiny" and ("egl", size) in by}


def lens_costs(rows: list[RenderRow]) -> dict[str, float]:
    """Each renderer's lens frame time over its pinhole frame time, per size.

    Example:
        >>> row = lambda cam, ms: RenderRow("tiny", "64x64", ms, ms, 1e3 / ms, 1, cam)
        >>> lens_costs([row("pinhole", 2.0), row("duckiebot", 5.0)])
        {'tiny 64x64': 2.5}
    """
    pin = {(r.renderer, r.size): r.ms_per_frame_mean for r in rows if r.camera == "pinhole"}
    return {f"{r.renderer} {r.size}": r.ms_per_frame_mean / pin[(r.renderer, r.size)]
            for r in rows if r.camera != "pinhole" and (r.renderer, r.size) in pin}
