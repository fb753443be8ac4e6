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
from dmxshm.logs import LogPart
from dmxshm.matrix.camera import Camera
from dmxshm.network.plan import Plan
from dmxshm.network.renderer import Recorder, next_tick
from dmxshm.network.results import CameraResult
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.ring import Ring
from dmxshm.world.renderers import adopt_probe
from dmxshm.world.world import World

END_CHECK_S = 0.05
"""The longest the camera sleeps without looking whether the run ended."""


def camera_slot_dtype(robots: int, camera_wh: tuple[int, int]) -> np.dtype:
    """One camera tick of a renderer's robots: the images and when they were made."""
    w, h = camera_wh
    return np.dtype([("step", "<u8"), ("sim_time_s", "<f8"), ("frame", "<i8"),
                     ("missed", "<i8"), ("camera", "u1", (robots, h, w, 3))])


def run_camera(plan: Plan, index: int) -> CameraResult:
    """Main loop of camera process ``index`` (the camera of renderer ``index``)."""
    cfg = plan.config
    role = f"camera-{index}"
    assert cfg.camera_wh is not None
    adopt_probe(cfg.egl_device)  # the supervisor probed EGL: not again here
    world = World(cfg.map, cfg.robots, seed=cfg.seed, dt_s=cfg.dt_s, substeps=cfg.substeps,
                  renderer=cfg.renderer_used)
    robots = plan.renderer_robots[index]
    state_ring = Ring.attach(plan.ring(f"state.camera.{index}"), side="reader", role=role,
                             spin_us=plan.spin_us)
    out = Ring.attach(plan.ring(f"camera.{index}"), side="writer", role=role)
    camera = Camera(cfg.camera_wh[0], cfg.camera_wh[1], renderer=cfg.renderer_used)
    slot = np.zeros((), out.dtype)
    done = CameraResult(frames=0, render_s=0.0, missed=0, elapsed_s=0.0)
    # Its frames are logged and recorded here, not in the renderer's loop: a PNG
    # of 640x480 takes tens of ms, which would hold the renderer's sensors back.
    part = LogPart(cfg.log, role) if cfg.log else None
    recorder = Recorder(cfg, robots, "frame")
    record = np.zeros(len(robots), [("camera", "u1", slot["camera"].shape[1:]),
                                   ("step", "<u8"), ("camera_time_s", "<f8")])
    t0 = time.monotonic()
    try:
        plan.wait_for_start("camera", index)
        try:
            st = state_ring.read(cfg.wait_timeout_s)  # the engine's first state starts the clock
        except RingClosedError:
            return done
        period = 1.0 / cfg.sensor_rates_hz["camera"]
        t0 = due_at = time.monotonic()
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
            world.set_state(states)
            for j, robot in enumerate(robots):
                camera.render(world.client, states[robot], out=slot["camera"][j])
            done.render_s += time.perf_counter() - t_render
            due_at, behind = next_tick(due_at, now, period)
            done.missed += behind
            done.frames += 1
            slot["step"], slot["sim_time_s"] = st["step"], st["sim_time_s"]
            slot["frame"], slot["missed"] = done.frames, done.missed
            out.write(slot)
            sim_time_s = float(st["sim_time_s"])
            if part is not None:
                part.images(robots, slot["camera"], sim_time_s, time.time_ns())
            if recorder.dir and done.frames % recorder.every == 0:
                record["camera"], record["step"] = slot["camera"], st["step"]
                record["camera_time_s"] = sim_time_s
                recorder.maybe(done.frames, robots, record)
                recorder.flush()
        done.elapsed_s = time.monotonic() - t0
        out.close_writer()
        done.kept, done.recorded = recorder.frames, recorder.count
        return done
    except Terminated as exc:  # stopped: what it made still reaches the summary
        done.elapsed_s = time.monotonic() - t0
        exc.partial = done
        raise
    finally:
        if part is not None:
            part.close()
        state_ring.close()
        out.close()
        world.close()
