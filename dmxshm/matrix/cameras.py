"""The cameras of a run's robots: one camera model, each robot's own copy of it.

A network's renderer, its camera process and a realtime replay all make a robot's
image the same way: that robot's camera (the run's model, moved, tilted and with
the focal length and light its domain randomisation drew) in the scene coloured
with its shades of road, markings and grass, then its appearance (brightness,
contrast, the light's colour: one lookup table), then the sensor's noise
(:class:`~dmxshm.matrix.noise.Noise`, keyed by robot and step).
:class:`RobotCameras` is that sequence, written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dmxshm.matrix.camera import Camera
from dmxshm.matrix.noise import Noise
from dmxshm.world import randomize as rand
from dmxshm.world.scene import tint


class RobotCameras:
    """Each robot's camera, appearance and noise.

    Args:
        base: the run's camera (model, size, renderer).
        noise: the run's sensor noise, or None for exact images.
        params: each robot's domain randomisation draw
            (:func:`~dmxshm.world.randomize.robot_draws`), or None: every robot
            has ``base`` and no appearance change.

    A robot's camera is built when first asked for (a jittered lens camera builds its
    own remap tables): a process makes only its own robots'.

    Example:
        >>> import numpy as np
        >>> from dmxshm.world.world import World
        >>> with World("loop", 2, seed=0) as world:
        ...     cams = RobotCameras(Camera(16, 12), None, None)
        ...     out = np.zeros((2, 12, 16, 3), np.uint8)
        ...     _ = cams.render(world, world.state(), (0, 1), 0, out)
        >>> out.shape, bool(out.any())
        ((2, 12, 16, 3), True)
    """

    def __init__(self, base: Camera, noise: Noise | None,
                 params: Sequence[Mapping[str, float]] | None) -> None:
        self.base = base
        self.noise = noise
        self.params = list(params) if params is not None else None
        self._cameras: dict[int, Camera] = {}
        self._luts: dict[int, np.ndarray | None] = {}
        self._shades: dict[int, dict[str, float] | None] = {}

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(height, width, 3)`` of every image."""
        return self.base.shape

    def camera(self, robot: int) -> Camera:
        """``robot``'s camera."""
        cam = self._cameras.get(robot)
        if cam is None:
            p = self.params[robot] if self.params is not None else None
            cam = self.base if p is None else self.base.jittered(
                p["camera_height_m"], p["camera_tilt_deg"], p["camera_focal_scale"],
                p["light_azimuth_deg"])
            self._cameras[robot] = cam
            self._luts[robot] = rand.appearance_lut(p) if p is not None else None
            self._shades[robot] = rand.shades(p)
        return cam

    def render(self, world: Any, states: np.ndarray, robots: Sequence[int], step: int,
               out: np.ndarray, sim_time_s: float = 0.0) -> np.ndarray:
        """The images of ``robots`` (in ``states``, all robots of the run) of state
        ``step`` at ``sim_time_s`` into ``out`` (``(len(robots), h, w, 3)`` uint8), drawn
        in ``world`` (tiny, EGL: robot by robot, the scene coloured with each robot's
        shades first; batch: all at once, each with its shades)."""
        cams = [self.camera(r) for r in robots]
        if self.base.renderer == "batch":
            from dmxshm.matrix.batch_render import renderer_of

            rows = list(robots)
            renderer_of(world, self.base.look).render(
                cams, states[rows], sim_time_s, out, seen=states, owners=rows,
                shades=[self._shades[r] for r in rows])
        else:
            for j, (robot, cam) in enumerate(zip(robots, cams, strict=True)):
                tint(world.scene, world.client, self._shades[robot])
                cam.render(world.client, states[robot], out=out[j])
        for j, robot in enumerate(robots):
            lut = self._luts[robot]
            if lut is not None:  # the light's colour, brightness, contrast
                rand.apply_lut(out[j], lut)
            if self.noise is not None:  # then the sensor's own noise
                self.noise.camera(robot, step, out[j])
        return out
