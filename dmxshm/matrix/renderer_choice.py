"""Which renderer draws a run's cameras: one named, or ``auto``'s measurement.

``auto`` renders the same small scene (:data:`AUTO_MAP` with :data:`AUTO_ROBOTS`
robots, each robot's view) with every renderer that runs here, at the camera's size
and model, and takes the one with the least time per frame: ``tiny`` always,
``batch`` where numba is installed, ``egl`` where a GPU is present and EGL starts on a
hardware renderer (Mesa's software EGL is slower than both). The measurement is made
once per process for each size and model; a process that starts others (a network,
a batch) resolves ``auto`` itself and hands them the renderer it chose, so that every
process of a run draws with the same one. The choice depends on the machine: a run
that must be bit-identical across machines names its renderer.
"""

from __future__ import annotations

import time

import numpy as np

from dmxshm.world.renderers import RendererError, batch_available, hardware_egl
from dmxshm.world.renderers import resolve as resolve_name

AUTO_MAP = "loop"
AUTO_ROBOTS = 4
AUTO_REPEATS = 2
"""``auto``'s scene and how many times each renderer's frames are timed (the least
counts)."""

_chosen: dict[tuple[int, int, str], tuple[str, dict[str, float]]] = {}


def resolve(name: str, camera_wh: tuple[int, int] | None = None,
            camera_model: str = "pinhole", look: str = "flat") -> str:
    """The renderer ``name`` names: ``tiny``, ``egl`` or ``batch`` as they are (checked),
    ``auto`` by :func:`measure` for a camera of ``camera_wh`` (``tiny`` without a
    camera: nothing is drawn), or ``batch`` for a ``look`` other than ``flat`` (the
    batch renderer alone draws it).

    Raises:
        RendererError: an unknown name, ``batch`` without numba, or a look the
            renderer named does not draw.
    """
    if look != "flat" and camera_wh is not None:
        if name not in ("auto", "batch"):
            raise RendererError(
                f"the {look} look is drawn by the batch renderer only (tiny and EGL draw "
                f"the flat look): renderer 'batch' or 'auto', not {name!r}")
        return resolve_name("batch")
    if name != "auto":
        return resolve_name(name)
    if camera_wh is None:
        return "tiny"
    return choose(camera_wh, camera_model)[0]


def choose(camera_wh: tuple[int, int], camera_model: str = "pinhole"
           ) -> tuple[str, dict[str, float]]:
    """``auto``'s choice for a camera of ``camera_wh`` and ``camera_model``, and the
    seconds per frame each candidate took (measured once per process)."""
    key = (int(camera_wh[0]), int(camera_wh[1]), camera_model)
    got = _chosen.get(key)
    if got is None:
        candidates = ["tiny"]
        if batch_available():
            candidates.append("batch")
        if hardware_egl():
            candidates.append("egl")
        times = {r: measure(r, camera_wh, camera_model) for r in candidates}
        got = _chosen[key] = (min(times, key=lambda r: times[r]), times)
    return got


def measure(renderer: str, camera_wh: tuple[int, int], camera_model: str = "pinhole",
            robots: int = AUTO_ROBOTS, repeats: int = AUTO_REPEATS) -> float:
    """Seconds per frame ``renderer`` takes to draw each of ``robots`` robots' views of
    :data:`AUTO_MAP` (after one warm-up round; the least of ``repeats`` rounds)."""
    from dmxshm.matrix.camera import Camera
    from dmxshm.world.world import World

    with World(AUTO_MAP, robots, seed=0, renderer=renderer) as world:
        states = world.state()
        camera = Camera.of_model(camera_model, *camera_wh, renderer=renderer)
        out = np.zeros((robots, camera.height, camera.width, 3), np.uint8)
        if renderer == "batch":
            from dmxshm.matrix.batch_render import renderer_of

            batch = renderer_of(world)

            def draw() -> None:
                batch.render([camera] * robots, states, 0.0, out, seen=states,
                             owners=list(range(robots)))
        else:
            def draw() -> None:
                for r in range(robots):
                    camera.render(world.client, states[r], out=out[r])
        draw()  # warm-up (loads the batch renderer's compiled code)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            draw()
            best = min(best, time.perf_counter() - t0)
    return best / robots
