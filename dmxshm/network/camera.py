"""The camera process of a realtime renderer: its robots' images, at the camera's rate.

A camera frame costs far more than every other sensor (pybullet's CPU
renderer: about 55 ms at 640x480 against microseconds for the IMU). Rendered
in the renderer's loop, one slow frame held the IMU, encoders and
time-of-flight of the same robots to the camera's rate. In realtime mode
each renderer therefore has a camera process beside it: it takes the newest
state from the engine at each camera tick (a fixed grid at the configured
rate; ticks it cannot keep are counted as missed, not bunched), renders the
renderer's robots, and writes the images to an overwrite ring; the renderer
puts the newest images into the observations it sends, while its cheap
sensors keep their own rates. Gym mode renders every sensor in the renderer
(lockstep, reproducible), and needs none of this.
"""

from __future__ import annotations

import time

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.network.plan import Plan
from dmxshm.network.renderer import next_tick
from dmxshm.network.results import CameraResult
from dmxshm.network.role import Role, run_role
from dmxshm.network.taps.digest import SampleDigest
from dmxshm.network.taps.log import ImageLog
from dmxshm.network.taps.record import Recorder
from dmxshm.world.renderers import adopt_probe

END_CHECK_S = 0.05
"""The longest the camera sleeps without looking whether the run ended."""


def camera_slot_dtype(robots: int, camera_wh: tuple[int, int]) -> np.dtype:
    """One camera tick of a renderer's robots: the images and when they were made."""
    w, h = camera_wh
    return np.dtype([("step", "<u8"), ("sim_time_s", "<f8"), ("frame", "<i8"),
                     ("missed", "<i8"), ("camera", "u1", (robots, h, w, 3))])


class CameraProcess(Role[CameraResult]):
    """Camera process ``index`` (see the module docstring): its loop renders its
    robots at the camera's rate; the log and recording are its taps (here, not in
    the renderer's loop: a PNG of 640x480 takes tens of ms, which would hold the
    renderer's sensors back)."""

    kind = "camera"

    def attach(self) -> None:
        cfg, plan, index = self.cfg, self.plan, self.index
        assert cfg.camera_wh is not None
        adopt_probe(cfg.egl_device)  # the supervisor probed EGL: not again here
        self.world = self.own(cfg.mirror_world(cfg.renderer_used))
        self.robots = plan.renderer_robots[index]
        self.state_ring = self.port(f"state.camera.{index}", "reader")
        self.out = self.port(f"camera.{index}", "writer", spin_us=None)
        cameras = cfg.robot_cameras(cfg.sensor_noise())
        assert cameras is not None
        self.cameras = cameras
        self.done = CameraResult(frames=0, render_s=0.0, missed=0, elapsed_s=0.0)
        self.recorder = Recorder(cfg.record_dir, cfg.record_every, cfg.camera[0],
                                 self.robots, "frame")
        self.digest = SampleDigest(self.robots, ("camera",))
        self.tap([self.digest, ImageLog(cfg.log, self.name) if cfg.log else None,
                  self.recorder])

    def loop(self) -> CameraResult:
        cfg, done = self.cfg, self.done
        try:
            st = self.state_ring.read(cfg.wait_timeout_s)  # the first state starts the clock
        except RingClosedError:
            return done
        t0 = time.monotonic()
        try:
            self._render(st, t0)
        finally:
            done.elapsed_s = time.monotonic() - t0
        return done

    def partial(self, result: CameraResult | None) -> CameraResult:
        self.done.digests = self.digest.hexdigests()
        return self.done  # what it made so far

    def finish(self, result: CameraResult) -> CameraResult:
        self.out.close_writer()
        result.kept, result.recorded = self.recorder.frames, self.recorder.count
        result.digests = self.digest.hexdigests()
        return result

    def _render(self, st: np.ndarray, t0: float) -> None:
        """Render at each tick of the camera's grid from the newest state, until the end."""
        world, cameras, done, taps = self.world, self.cameras, self.done, self.taps
        robots, state_ring, out = self.robots, self.state_ring, self.out
        slot = np.zeros((), out.dtype)
        period = 1.0 / self.cfg.sensor_rates_hz["camera"]
        due_at = t0
        read_at: float | None = None  # the simulated time of the last frame's state
        while True:
            newer = state_ring.try_read(newest=True)
            if newer is not None:
                st = newer
            elif state_ring.closed:
                break
            now = time.monotonic()
            if now < due_at:
                # Wake for the tick, and at least every END_CHECK_S for the end of
                # the run (the engine's last state closes the ring).
                time.sleep(min(due_at - now, END_CHECK_S))
                continue
            states = st["robots"]
            t_render = time.perf_counter()
            world.set_state(states, float(st["sim_time_s"]))
            # (noise keyed by the state's step, as the renderer's)
            cameras.render(world, states, robots, int(st["step"]), slot["camera"],
                           float(st["sim_time_s"]))
            done.render_s += time.perf_counter() - t_render
            due_at, behind = next_tick(due_at, now, period)
            done.missed += behind
            done.frames += 1
            if float(st["sim_time_s"]) == read_at:
                done.repeated += 1
            else:
                done.fresh += 1
            read_at = float(st["sim_time_s"])
            slot["step"], slot["sim_time_s"] = st["step"], st["sim_time_s"]
            slot["frame"], slot["missed"] = done.frames, done.missed
            out.write(slot)
            taps.images(done.frames, int(st["step"]), float(st["sim_time_s"]), robots,
                        slot["camera"])


def run_camera(plan: Plan, index: int) -> CameraResult:
    """Main function of camera process ``index`` (the camera of renderer ``index``)."""
    return run_role(CameraProcess(plan, index))
