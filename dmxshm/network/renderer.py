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
import time
from collections.abc import Sequence

import numpy as np

from dmxshm.errors import RingClosedError, RingTimeoutError
from dmxshm.matrix.obs import NEVER_S
from dmxshm.network.config import NetworkConfig
from dmxshm.network.plan import ObsLink, Plan
from dmxshm.network.results import RendererResult
from dmxshm.network.role import Role, run_role
from dmxshm.network.taps.digest import SampleDigest
from dmxshm.network.taps.log import SampleLog
from dmxshm.network.taps.record import Recorder
from dmxshm.network.taps.view import SampleImages
from dmxshm.shm.ring import Ring
from dmxshm.sim import sensing
from dmxshm.sim.planar import PlanarWorld
from dmxshm.world.renderers import adopt_probe
from dmxshm.world.routes import Routes
from dmxshm.world.world import World

SENSORS = sensing.SENSOR_NAMES
"""The timed sensors (:data:`dmxshm.sim.sensing.SENSOR_NAMES`)."""

_END_POLL_S = 0.01
"""How often a renderer whose sensors have all read the engine's last state looks for
the engine's close (seconds)."""


class _Sensing(sensing.Sensing):
    """Fills observation records of this renderer's robots: the registry's sensors
    (:class:`dmxshm.sim.sensing.Sensing`), timed."""

    def __init__(self, cfg: NetworkConfig, world: World | PlanarWorld) -> None:
        # keyed by robot and step: the same in every process
        noise = cfg.sensor_noise()
        turns = cfg.route_turns
        super().__init__(world, noise, cfg.robot_cameras(noise),
                         Routes.of(world.road_map, cfg.robots, cfg.seed, turns)
                         if turns is not None else None)
        self.render_s = 0.0
        self.produced = dict.fromkeys(SENSORS, 0)
        self._index: dict[tuple[int, ...], np.ndarray] = {}

    def fill(self, obs: np.ndarray, robots: tuple[int, ...], states: np.ndarray,
             step: int, sim_time_s: float, due: Sequence[str],
             rows: np.ndarray | None = None) -> None:
        """Update the ``due`` sensors of ``robots`` in ``obs`` (one record each): each
        sensor for every robot at once, the time it took counted."""
        t0 = time.perf_counter()
        super().fill(obs, robots, states, step, sim_time_s, due,
                     states[self._rows(robots)] if rows is None else rows)
        self.render_s += time.perf_counter() - t0

    def _rows(self, robots: tuple[int, ...]) -> np.ndarray:
        index = self._index.get(robots)
        if index is None:
            index = self._index[robots] = np.array(robots, np.intp)
        return index


def next_tick(due_at: float, now: float, period: float) -> tuple[float, int]:
    """The next tick of a sensor on its fixed grid after one due at ``due_at`` fired
    at ``now``, and how many ticks it missed (past ones are lost, not bunched).

    Example:
        >>> next_tick(1.0, 1.25, 0.1)
        (1.3, 2)
    """
    behind = math.floor((now - due_at) / period)
    return due_at + (behind + 1) * period, behind


class Renderer(Role[RendererResult]):
    """Renderer ``index`` (see the module docstring): its loop makes sensor samples and
    sends them; the log, the live view's feed and recording are its taps."""

    kind = "renderer"

    def attach(self) -> None:
        cfg, plan, index = self.cfg, self.plan, self.index
        # With a camera process (realtime), this renderer draws nothing: no EGL here.
        renders = cfg.camera_wh is not None and not cfg.camera_processes
        if renders:
            adopt_probe(cfg.egl_device)  # the supervisor probed EGL: not again here
        self.world = self.own(cfg.mirror_world(cfg.renderer_used if renders else "tiny"))
        # Without a camera here, the scene serves the time of flight's rays: poses only.
        self.mirror = self.world.set_state if renders else self.world.set_poses
        self.robots = plan.renderer_robots[index]
        self.state_ring = self.port(f"state.renderer.{index}", "reader")
        self.links = plan.links_of_renderer(index)
        self.obs_rings = [self.ring(link.ring, "writer") for link in self.links]
        # Realtime with a camera: the images come from this renderer's camera process.
        self.camera_ring = (self.port(f"camera.{index}", "reader", spin_us=None)
                            if plan.has(f"camera.{index}") else None)
        self.sensing = _Sensing(cfg, self.world)
        self.recorder = Recorder(cfg.record_dir if cfg.camera_wh else None, cfg.record_every,
                                 cfg.camera[0], tuple(r for link in self.links
                                                      for r in link.robots),
                                 "step" if cfg.mode == "gym" else "frame")
        view = f"view.obs.{index}"
        # The sensors whose samples this renderer makes (in realtime the camera
        # process makes the images, and hashes them).
        self.made = sensing.names(camera=renders)
        self.digest = SampleDigest(self.robots, self.made)
        self.tap([self.digest, SampleLog(cfg.log, self.name) if cfg.log else None,
                  SampleImages(plan.ring(view), self.robots, self.name)
                  if plan.has(view) else None,
                  self.recorder])
        self.steps = 0
        self.elapsed_s = 0.0
        self.missed: dict[str, int] = {}
        # Per sensor: ticks whose sample read a new state, and ticks that read the
        # same state as its sample before (in realtime a sensor faster than the
        # engine's states repeats itself).
        self.fresh: dict[str, int] = dict.fromkeys(SENSORS, 0)
        self.repeated: dict[str, int] = dict.fromkeys(SENSORS, 0)
        # Of the repeats, those that came less than two engine states after the
        # sensor's tick before: that tick fired late (this process, not the engine,
        # fell behind), and the grid's next tick read before a new state was due.
        self.repeated_late: dict[str, int] = dict.fromkeys(SENSORS, 0)

    def loop(self) -> RendererResult:
        if self.cfg.mode == "gym":
            self._gym()
        else:
            self._realtime()
        return self._result()

    def partial(self, result: RendererResult | None) -> RendererResult:
        if result is not None:
            return result
        # Stopped in its loop: what it produced (the contact sheet's frames are not kept).
        return RendererResult(steps=min(self.sensing.produced.values()),
                              render_s=self.sensing.render_s, produced=self.sensing.produced,
                              frames={}, recorded=0, elapsed_s=self.elapsed_s,
                              missed=self.missed, fresh=self.fresh, repeated=self.repeated,
                              repeated_late=self.repeated_late,
                              digests=self.digest.hexdigests())

    def finish(self, result: RendererResult) -> RendererResult:
        for ring in self.obs_rings:
            ring.close_writer()
        return result

    def _result(self) -> RendererResult:
        return RendererResult(steps=self.steps, render_s=self.sensing.render_s,
                              produced=self.sensing.produced, frames=self.recorder.frames,
                              recorded=self.recorder.count, elapsed_s=self.elapsed_s,
                              missed=self.missed, fresh=self.fresh, repeated=self.repeated,
                              repeated_late=self.repeated_late,
                              digests=self.digest.hexdigests())

    def _gym(self) -> None:
        cfg, sensing, taps = self.cfg, self.sensing, self.taps
        sources = list(zip(self.links, self.obs_rings, strict=True))
        timeout_s = cfg.barrier_timeout_s  # with external slots: a client may come late
        produced, made = sensing.produced, self.made
        while True:
            try:
                st = self.state_ring.read(timeout_s)
            except RingClosedError:
                break
            states = st["robots"]
            t0 = time.perf_counter()
            self.mirror(states, float(st["sim_time_s"]))
            sensing.render_s += time.perf_counter() - t0
            k = int(st["step"])
            sim_time_s = float(st["sim_time_s"])
            for link, ring in sources:
                with ring.writing(timeout_s) as slot:
                    slot["step"] = k
                    obs = slot["obs"]
                    sensing.fill(obs, link.robots, states, k, sim_time_s, made)
                    taps.samples(k, sim_time_s, link.robots, obs, made)
            for name in SENSORS:
                produced[name] += 1
                self.fresh[name] += 1  # lockstep: every step's state is new
            taps.sent(k, produced, {})
            self.steps += 1

    def _realtime(self) -> None:
        cfg, state_ring, camera_ring = self.cfg, self.state_ring, self.camera_ring
        # The sensors this loop times and makes itself; with a camera process the
        # camera's images arrive ready, each new one sent at once.
        sensors = list(sensing.names(camera=bool(cfg.camera_wh) and camera_ring is None))
        where = {r: j for j, r in enumerate(self.robots)}
        period = {s: 1.0 / cfg.sensor_rates_hz[s] for s in sensors}
        obs = [np.zeros((), ring.dtype) for ring in self.obs_rings]  # newest of every sensor
        for o in obs:
            for sensor in sensing.timed():
                if sensor.time_field in o.dtype["obs"].base.names:
                    o["obs"][sensor.time_field] = NEVER_S
        sources = list(zip(obs, self.links, self.obs_rings, strict=True))
        self.missed = missed = dict.fromkeys(sensors, 0)
        if camera_ring is not None:
            missed["camera"] = 0
        try:
            st = state_ring.read(cfg.wait_timeout_s)  # the engine's first state starts the clocks
        except RingClosedError:
            return
        t0 = time.monotonic()
        due_at = dict.fromkeys(sensors, t0)
        try:
            self._sense(t0, st, due_at, sensors, period, sources, where)
        finally:  # the sensors' rates count from the first state, stopped or not
            self.elapsed_s = time.monotonic() - t0

    def _sense(self, t0: float, st: np.ndarray, due_at: dict[str, float], sensors: list[str],
               period: dict[str, float], sources: list[tuple[np.ndarray, ObsLink, Ring]],
               where: dict[int, int]) -> None:
        """Realtime: each sensor at its own rate, from the newest state, until the end."""
        sensing, taps = self.sensing, self.taps
        state_ring, camera_ring = self.state_ring, self.camera_ring
        produced, missed = sensing.produced, self.missed
        fresh, repeated, repeated_late = self.fresh, self.repeated, self.repeated_late
        read_at: dict[str, float] = {}  # per sensor: the simulated time of its last state
        fired_at: dict[str, float] = {}  # per sensor: the wall-clock time of its last tick
        close_s = 2.0 * self.cfg.state_dt_s
        # The engine's last state (without a spine, whose frames set the steps): each
        # sensor reads it once. A tick that would read it again is past the end of the
        # simulation (no state comes after it; the engine is ending) and is not made.
        last = self.cfg.planned_steps - 1 if not self.cfg.spine else -1
        while True:
            newer = state_ring.try_read(newest=True)
            if newer is not None:
                st = newer
            elif state_ring.closed:
                break
            now = time.monotonic()
            due = tuple(s for s in sensors if due_at[s] <= now)
            if due and int(st["step"]) == last:
                ended = float(st["sim_time_s"])
                for s in due:
                    if read_at.get(s) == ended:
                        due_at[s] = math.inf
                due = tuple(s for s in due if due_at[s] <= now)
            frame = camera_ring.try_read(newest=True) if camera_ring is not None else None
            if not due and frame is None:
                wait_s = max(min(due_at.values()) - now, 0.0)
                if wait_s == math.inf:  # every sensor past the end: poll for the close
                    wait_s = _END_POLL_S
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
                self.mirror(states, float(st["sim_time_s"]))
            k = int(st["step"])
            sim_time_s = float(st["sim_time_s"])
            for o, link, ring in sources:
                o["step"] = k
                sensing.fill(o["obs"], link.robots, states, k, sim_time_s, due)
                if frame is not None:  # the camera process's newest images
                    for j, robot in enumerate(link.robots):
                        o["obs"]["camera"][j] = frame["camera"][where[robot]]
                        o["obs"]["camera_time_s"][j] = frame["sim_time_s"]
                ring.write(o)
                # (a camera process logs and records its own frames: not due here)
                taps.samples(k, sim_time_s, link.robots, o["obs"], due)
            if frame is not None:  # forwarded; the camera process counts its frames
                produced["camera"] += 1
                missed["camera"] = int(frame["missed"])
            for s in due:
                produced[s] += 1
                if read_at.get(s) == sim_time_s:
                    repeated[s] += 1
                    repeated_late[s] += now - fired_at[s] < close_s
                else:
                    fresh[s] += 1
                read_at[s], fired_at[s] = sim_time_s, now
                due_at[s], behind = next_tick(due_at[s], now, period[s])
                missed[s] += behind
            taps.sent(k, produced, missed)
            self.steps += 1


def run_renderer(plan: Plan, index: int) -> RendererResult:
    """Main function of renderer ``index``; returns its part of the summary."""
    return run_role(Renderer(plan, index))
