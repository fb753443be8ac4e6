"""The renderer process: mirrors the world and produces observations.

Each renderer keeps its own pybullet client with the same scene, serves a
block of robots, and writes one observation slot per step to each agent
that drives some of them.

*Gym mode*: it waits for state k, sets its scene to it, renders every sensor
of its robots and writes the observations; it cannot run ahead, since state
k+1 only exists once the engine has every command k.

*Realtime mode*: each sensor fires at its own rate against the wall clock
from the newest state there is, whether or not anyone reads; an observation
slot goes out whenever a sensor fires, carrying the newest value of every
sensor and the time each was made.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import numpy as np

from dmxshm.errors import RingClosedError, RingTimeoutError
from dmxshm.logs import LogPart
from dmxshm.matrix.camera import Camera
from dmxshm.matrix.sensors import TimeOfFlight, encoders, imu
from dmxshm.network.plan import ObsLink, Plan
from dmxshm.network.results import RendererResult
from dmxshm.pngio import write_png
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.ring import Ring
from dmxshm.view.rings import OBS_HZ, Throttle
from dmxshm.world.state import yaw_of
from dmxshm.world.renderers import adopt_probe
from dmxshm.world.world import World

SENSORS = ("camera", "imu", "encoders", "tof")
CONTACT_FRAMES = 8  # frames per robot kept for the contact sheet
CONTACT_WIDTH_PX = 160


class _Sensing:
    """Fills observation records of this renderer's robots."""

    def __init__(self, cfg: Any, world: World) -> None:
        self.world = world
        wh = cfg.camera_wh
        self.camera = Camera(wh[0], wh[1], renderer=cfg.renderer_used) if wh else None
        self.tof = TimeOfFlight()
        self.render_s = 0.0
        self.produced = dict.fromkeys(SENSORS, 0)

    def fill(self, obs: np.ndarray, robots: tuple[int, ...], states: np.ndarray,
             step: int, sim_time_s: float, due: tuple[str, ...]) -> None:
        """Update the ``due`` sensors of ``robots`` in ``obs`` (one record each)."""
        t0 = time.perf_counter()
        client = self.world.client
        obs["step"] = step
        obs["sim_time_s"] = sim_time_s
        has_lane = "lane" in (obs.dtype.names or ())
        for j, robot in enumerate(robots):
            row = states[robot]
            if "camera" in due and self.camera is not None:
                self.camera.render(client, row, out=obs["camera"][j])
                obs["camera_time_s"][j] = sim_time_s
            if "imu" in due:
                acc, gyro = imu(row)
                obs["imu"][j, :3] = acc
                obs["imu"][j, 3:] = gyro
                obs["imu_time_s"][j] = sim_time_s
            if "encoders" in due:
                obs["encoders"][j] = encoders(row)
                obs["encoders_time_s"][j] = sim_time_s
            if "tof" in due:
                obs["tof_m"][j] = self.tof.measure(client, row)
                obs["tof_time_s"][j] = sim_time_s
            if has_lane:
                x, y = row["pos_m"][:2]
                lane = self.world.road_map.lane_pose(float(x), float(y),
                                                     float(yaw_of(row["quat_xyzw"])))
                obs["lane"][j] = (lane.offset_m, lane.heading_err_rad, float(lane.on_road))
        self.render_s += time.perf_counter() - t0


def next_tick(due_at: float, now: float, period: float) -> tuple[float, int]:
    """The next tick of a sensor on its fixed grid after one due at ``due_at`` fired
    at ``now``, and how many ticks it missed (past ones are lost, not bunched).

    Example:
        >>> next_tick(1.0, 1.25, 0.1)
        (1.3, 2)
    """
    behind = math.floor((now - due_at) / period)
    return due_at + (behind + 1) * period, behind


class ViewObs:
    """A renderer's side of the live view: its robots' newest images and its sensor
    counts, a few times a second, in an overwrite ring nobody waits on."""

    def __init__(self, plan: Plan, index: int, role: str) -> None:
        port = f"view.obs.{index}"
        self.ring = (Ring.attach(plan.ring(port), side="writer", role=role)
                     if plan.has(port) else None)
        self.throttle = Throttle(OBS_HZ)
        self.slot = np.zeros((), self.ring.dtype) if self.ring is not None else None
        robots = plan.renderer_robots[index]
        self.where = {r: j for j, r in enumerate(robots)}
        if self.slot is not None:
            self.slot["robots"] = robots
        self.due = False

    def start(self) -> bool:
        """Whether this tick is one to show (then :meth:`take` its links, :meth:`send`)."""
        self.due = self.ring is not None and self.throttle.due()
        return self.due

    def take(self, link_robots: tuple[int, ...], obs: np.ndarray) -> None:
        if self.due and "camera" in (obs.dtype.names or ()):
            assert self.slot is not None
            for j, robot in enumerate(link_robots):
                self.slot["camera"][self.where[robot]] = obs["camera"][j]

    def send(self, step: int, produced: dict[str, int], missed: dict[str, int]) -> None:
        if not self.due:
            return
        slot = self.slot
        assert slot is not None and self.ring is not None
        slot["wall_time_s"], slot["step"] = time.time(), step
        slot["produced"] = [produced.get(s, 0) for s in SENSORS]
        slot["missed"] = [missed.get(s, 0) for s in SENSORS]
        self.ring.write(slot)
        self.due = False

    def close(self) -> None:
        if self.ring is not None:
            self.ring.close_writer()
            self.ring.close()


def run_renderer(plan: Plan, index: int) -> RendererResult:
    """Main loop of renderer ``index``; returns its part of the summary."""
    cfg = plan.config
    role = f"renderer-{index}"
    # With a camera process (realtime), this renderer draws nothing: no EGL here.
    renders = cfg.camera_wh is not None and not cfg.camera_processes
    if renders:
        adopt_probe(cfg.egl_device)  # the supervisor probed EGL: not again here
    world = World(cfg.map, cfg.robots, seed=cfg.seed, dt_s=cfg.dt_s, substeps=cfg.substeps,
                  renderer=cfg.renderer_used if renders else "tiny")
    state_ring = Ring.attach(plan.ring(f"state.renderer.{index}"), side="reader", role=role,
                             spin_us=plan.spin_us)
    links = plan.links_of_renderer(index)
    obs_rings = [Ring.attach(link.ring, side="writer", role=role, spin_us=plan.spin_us)
                 for link in links]
    sensing = _Sensing(cfg, world)
    part = LogPart(cfg.log, role) if cfg.log else None
    view = ViewObs(plan, index, role)
    # Realtime with a camera: the images come from this renderer's camera process.
    camera_ring = (Ring.attach(plan.ring(f"camera.{index}"), side="reader", role=role)
                   if plan.has(f"camera.{index}") else None)
    try:
        plan.wait_for_start("renderer", index)
        started = time.monotonic()
        try:
            if cfg.mode == "gym":
                result = _gym_loop(cfg, world, state_ring, links, obs_rings, sensing, part, view)
            else:
                result = _realtime_loop(cfg, world, state_ring, links, obs_rings, sensing, part,
                                        view, camera_ring, plan.renderer_robots[index])
        except Terminated as exc:  # stopped: what it produced still reaches the summary
            exc.partial = RendererResult(
                steps=min(sensing.produced.values()), render_s=sensing.render_s,
                produced=sensing.produced, frames={}, recorded=0,
                elapsed_s=time.monotonic() - started)
            raise
        for ring in obs_rings:
            ring.close_writer()
        return RendererResult(render_s=sensing.render_s, produced=sensing.produced, **result)
    finally:
        if part is not None:
            part.close()
        view.close()
        for ring in (state_ring, *obs_rings, *([camera_ring] if camera_ring else [])):
            ring.close()
        world.close()


class Recorder:
    """Writes camera frames as PNG and keeps a few for the contact sheet."""

    def __init__(self, cfg: Any, robots: tuple[int, ...], unit: str) -> None:
        self.dir = cfg.record_dir if cfg.camera_wh else None
        self.every = cfg.record_every
        self.unit = unit  # "step" (gym) or "frame" (realtime: camera frames)
        # Per robot: (small frame, engine step, simulated time), for the contact sheet.
        self.frames: dict[int, list[tuple[np.ndarray, int, float]]] = {r: [] for r in robots}
        self.pending: list[tuple[str, np.ndarray]] = []
        self.count = 0
        # Frames on the contact sheet are at most this wide (every n-th pixel).
        self.stride = max(1, -(-cfg.camera[0] // CONTACT_WIDTH_PX))
        if self.dir:
            os.makedirs(self.dir, exist_ok=True)

    def maybe(self, k: int, link_robots: tuple[int, ...], obs: np.ndarray) -> None:
        """Copy the frames of tick ``k`` if it is one to record (cheap)."""
        if not self.dir or k % self.every:
            return
        for j, robot in enumerate(link_robots):
            frame = obs["camera"][j].copy()
            self.pending.append((f"robot{robot:02d}_{self.unit}{k:06d}.png", frame))
            kept = self.frames[robot]
            kept.append((frame[::self.stride, ::self.stride].copy(), int(obs["step"][j]),
                         float(obs["camera_time_s"][j])))
            if len(kept) > CONTACT_FRAMES:  # keep frames spread over the whole run
                del kept[1::2]

    def flush(self) -> None:
        """Encode and write the copied frames (after the slots are released)."""
        for name, frame in self.pending:
            write_png(os.path.join(self.dir or ".", name), frame)
            self.count += 1
        self.pending.clear()


def _gym_loop(cfg: Any, world: World, state_ring: Ring, links: list[ObsLink],
              obs_rings: list[Ring], sensing: _Sensing,
              part: LogPart | None = None, view: ViewObs | None = None) -> dict[str, Any]:
    recorder = Recorder(cfg, tuple(r for link in links for r in link.robots), "step")
    logged: list[tuple[tuple[int, ...], np.ndarray]] = []
    steps = 0
    while True:
        try:
            st = state_ring.read(cfg.wait_timeout_s)
        except RingClosedError:
            break
        states = st["robots"]
        t0 = time.perf_counter()
        world.set_state(states)
        sensing.render_s += time.perf_counter() - t0
        k = int(st["step"])
        show = view is not None and view.start()
        for link, ring in zip(links, obs_rings, strict=True):
            with ring.writing(cfg.wait_timeout_s) as slot:
                slot["step"] = k
                sensing.fill(slot["obs"], link.robots, states, k, float(st["sim_time_s"]),
                             SENSORS)
                recorder.maybe(k, link.robots, slot["obs"])
                if part is not None:  # logged once the slot is released
                    logged.append((link.robots, slot["obs"].copy()))
                if show:
                    view.take(link.robots, slot["obs"])  # type: ignore[union-attr]
        recorder.flush()
        if part is not None:
            wall_ns = time.time_ns()
            for robots, obs in logged:
                part.sensors(robots, obs, SENSORS, wall_ns)
            logged.clear()
        for name in SENSORS:
            sensing.produced[name] += 1
        if show:
            view.send(k, sensing.produced, {})  # type: ignore[union-attr]
        steps += 1
    return {"steps": steps, "frames": recorder.frames, "recorded": recorder.count}


def _realtime_loop(cfg: Any, world: World, state_ring: Ring, links: list[ObsLink],
                   obs_rings: list[Ring], sensing: _Sensing,
                   part: LogPart | None = None, view: ViewObs | None = None,
                   camera_ring: Ring | None = None,
                   robots: tuple[int, ...] = ()) -> dict[str, Any]:
    recorder = Recorder(cfg, tuple(r for link in links for r in link.robots), "frame")
    # The sensors this loop times and makes itself; with a camera process the
    # camera's images arrive ready, each new one sent at once.
    sensors = [s for s in SENSORS if s != "camera" or (cfg.camera_wh and camera_ring is None)]
    where = {r: j for j, r in enumerate(robots)}
    camera_missed = 0
    period = {s: 1.0 / cfg.sensor_rates_hz[s] for s in sensors}
    obs = [np.zeros((), ring.dtype) for ring in obs_rings]  # newest value of every sensor
    for o in obs:
        for s in SENSORS:
            if f"{s}_time_s" in o.dtype["obs"].base.names:
                o["obs"][f"{s}_time_s"] = -1.0
    try:
        st = state_ring.read(cfg.wait_timeout_s)  # the engine's first state starts the clocks
    except RingClosedError:
        return {"steps": 0, "frames": recorder.frames, "recorded": 0, "elapsed_s": 0.0}
    t0 = time.monotonic()
    due_at = dict.fromkeys(sensors, t0)
    missed = dict.fromkeys(sensors, 0)
    events = 0
    while True:
        newer = state_ring.try_read(newest=True)
        if newer is not None:
            st = newer
        elif state_ring.closed:
            break
        now = time.monotonic()
        due = tuple(s for s in sensors if due_at[s] <= now)
        frame = camera_ring.try_read(newest=True) if camera_ring is not None else None
        if not due and frame is None:
            wait_s = max(min(due_at.values()) - now, 0.0)
            if camera_ring is not None and not camera_ring.closed:
                # Wake for the next sensor tick or a new image, whichever comes first:
                # each image goes out as soon as it is made.
                try:
                    frame = camera_ring.read(wait_s, newest=True)
                except (RingTimeoutError, RingClosedError):
                    continue
            else:
                time.sleep(wait_s)
                continue
        states = st["robots"]
        if due:
            world.set_state(states)
        k = int(st["step"])
        for o, link, ring in zip(obs, links, obs_rings, strict=True):
            o["step"] = k
            sensing.fill(o["obs"], link.robots, states, k, float(st["sim_time_s"]), due)
            if frame is not None:  # the camera process's newest images
                for j, robot in enumerate(link.robots):
                    o["obs"]["camera"][j] = frame["camera"][where[robot]]
                    o["obs"]["camera_time_s"][j] = frame["sim_time_s"]
            ring.write(o)
            if "camera" in due:  # (a camera process records its own frames)
                recorder.maybe(sensing.produced["camera"], link.robots, o["obs"])
        recorder.flush()
        if frame is not None:  # forwarded; the camera process logs and counts its frames
            sensing.produced["camera"] += 1
            camera_missed = int(frame["missed"])
        if part is not None:
            wall_ns = time.time_ns()
            for o, link in zip(obs, links, strict=True):
                part.sensors(link.robots, o["obs"], due, wall_ns)
        for s in due:
            sensing.produced[s] += 1
            due_at[s], behind = next_tick(due_at[s], now, period[s])
            missed[s] += behind
        if view is not None and view.start():  # the newest of every sensor, a few times a second
            for o, link in zip(obs, links, strict=True):
                view.take(link.robots, o["obs"])
            view.send(k, sensing.produced, missed | ({"camera": camera_missed}
                                                     if camera_ring is not None else {}))
        events += 1
    elapsed = time.monotonic() - t0
    if camera_ring is not None:
        missed["camera"] = camera_missed
    return {"steps": events, "frames": recorder.frames, "recorded": recorder.count,
            "elapsed_s": elapsed, "missed": missed}
