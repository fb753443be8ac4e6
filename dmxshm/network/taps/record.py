"""Recording camera frames (``--record``), as a tap of a renderer or camera process."""

from __future__ import annotations

import os

import numpy as np

from dmxshm.network.recording import frame_name
from dmxshm.network.taps import Tap
from dmxshm.pngio import write_png

CONTACT_FRAMES = 8  # frames per robot kept for the contact sheet
CONTACT_WIDTH_PX = 160


class Recorder(Tap):
    """Writes camera frames as PNG (:func:`~dmxshm.network.recording.frame_name`) and
    keeps a few for the contact sheet.

    Each tick with a camera sample counts (from 0: in gym mode, the step); every
    ``record_every``-th is written. In a camera process each frame counts (from
    1). The frames are copied while their slot is held and written at ``sent``.

    Args:
        folder: where the PNGs go (None: keep nothing, write nothing).
        every: write every n-th frame.
        width_px: the camera's width (the contact sheet's frames are at most
            :data:`CONTACT_WIDTH_PX` wide).
        robots: the robots whose frames come here.
        unit: ``"step"`` (gym) or ``"frame"`` (realtime) in the file names.
    """

    def __init__(self, folder: str | None, every: int, width_px: int,
                 robots: tuple[int, ...], unit: str) -> None:
        self.dir = folder
        self.every = every
        self.unit = unit
        # Per robot: (small frame, engine step, simulated time), for the contact sheet.
        self.frames: dict[int, list[tuple[np.ndarray, int, float]]] = {r: [] for r in robots}
        self.pending: list[tuple[str, np.ndarray]] = []
        self.count = 0
        self.ticks = 0  # ticks with a camera sample so far
        self._camera_tick = False
        self.stride = max(1, -(-width_px // CONTACT_WIDTH_PX))
        if self.dir:
            os.makedirs(self.dir, exist_ok=True)

    def samples(self, step: int, sim_time_s: float, robots: tuple[int, ...],
                obs: np.ndarray, due: tuple[str, ...]) -> None:
        if "camera" in due:
            self._camera_tick = True
            self.maybe(self.ticks, robots, obs)

    def sent(self, step: int, produced: dict[str, int], missed: dict[str, int]) -> None:
        if self._camera_tick:
            self.ticks += 1
            self._camera_tick = False
        self.flush()

    def images(self, frame: int, step: int, sim_time_s: float, robots: tuple[int, ...],
               images: np.ndarray) -> None:
        if not self.dir or frame % self.every:
            return
        for j, robot in enumerate(robots):
            self._keep(robot, frame, images[j], step, sim_time_s)
        self.flush()

    def maybe(self, k: int, robots: tuple[int, ...], obs: np.ndarray) -> None:
        """Copy the frames of tick ``k`` from ``obs`` records if it is one to record."""
        if not self.dir or k % self.every or "camera" not in (obs.dtype.names or ()):
            return
        for j, robot in enumerate(robots):
            self._keep(robot, k, obs["camera"][j], int(obs["step"][j]),
                       float(obs["camera_time_s"][j]))

    def _keep(self, robot: int, k: int, image: np.ndarray, step: int,
              sim_time_s: float) -> None:
        frame = image.copy()
        self.pending.append((frame_name(robot, self.unit, k), frame))
        kept = self.frames[robot]
        kept.append((frame[::self.stride, ::self.stride].copy(), step, sim_time_s))
        if len(kept) > CONTACT_FRAMES:  # keep frames spread over the whole run
            del kept[1::2]

    def flush(self) -> None:
        """Encode and write the copied frames (after the slots are released)."""
        for name, frame in self.pending:
            write_png(os.path.join(self.dir or ".", name), frame)
            self.count += 1
        self.pending.clear()
