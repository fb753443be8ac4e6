"""The summary of a run: what the CLI prints and ``--json`` writes."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from dmxshm.errors import DmxError
from dmxshm.logs import LogInfo
from dmxshm.network.plan import Plan
from dmxshm.network.recording import CONTACT_SHEET
from dmxshm.network.results import AgentResult, EngineResult, RendererResult

if TYPE_CHECKING:
    from dmxshm.network.config import NetworkConfig
from dmxshm.matrix.noise import DUCKIEBOT as DUCKIEBOT_NOISE
from dmxshm.network.taps.digest import combine
from dmxshm.pngio import contact_sheet, write_png
from dmxshm.profiling import ProcessRow, ProfileReport
from dmxshm.settings import JSON_SCHEMA_VERSION
from dmxshm.sim import sensing
from dmxshm.spine.network_spine import NetworkSpineResult
from dmxshm.spine.report import no_nan
from dmxshm.world.renderers import egl_device

SCHEMA_VERSION = JSON_SCHEMA_VERSION
"""Version of the ``--json`` schema (docs/json.md; defined in :mod:`dmxshm.settings`)."""


@dataclass
class StepTiming:
    """A run's time per step, in seconds (means over its steps).

    ``physics_s`` the engine's stepping, ``rendering_s`` the slowest renderer's
    (or camera process's) sensor work, ``agents_s`` the slowest agent's policy
    calls, ``metrics_s`` the engine's lane bookkeeping, ``step_s`` the wall time
    of a step; in gym mode, where the parts run one after another,
    ``framework_s`` is the rest of the step (handoffs, copies, waiting) and
    ``framework_fraction`` its share (None in realtime: processes overlap).
    """

    step_s: float
    physics_s: float
    rendering_s: float
    agents_s: float
    metrics_s: float
    framework_s: float | None = None
    framework_fraction: float | None = None

    def to_dict(self) -> dict[str, float]:
        """The JSON's ``timing`` (a realtime run has no framework keys)."""
        return _measured(self)


@dataclass
class SensorRate:
    """A sensor's rate in a run, Hz: what was asked, what was made (the slowest
    renderer's), and with camera processes what reached the agents; and how many
    of its ticks (over every renderer, or camera process) read a state newer than
    the tick before (``fresh``) or the same one again (``repeated``; of those,
    ``repeated_late`` came less than two engine states after a late tick before)."""

    configured_hz: float
    achieved_hz: float
    forwarded_hz: float | None = None
    fresh: int | None = None
    repeated: int | None = None
    repeated_late: int | None = None

    def to_dict(self) -> dict[str, float]:
        return _measured(self)


@dataclass
class Summary:
    """Figures of one run (all times in seconds, rates in Hz).

    ``timing`` is the time per step (:class:`StepTiming`), ``sensors`` each
    sensor's rate (:class:`SensorRate`), ``spine`` the network spine's result
    (:class:`~dmxshm.spine.network_spine.NetworkSpineResult`, None without a
    spine), ``log`` the merged log's :class:`~dmxshm.logs.LogInfo` (None without
    ``--log``). :meth:`to_dict` writes them under docs/json.md's names.

    ``shm_bytes`` is the shared memory the run created (rings, barrier,
    semaphores), counted once. With profiling on, ``processes`` holds one
    row per process (see :meth:`dmxshm.profiling.Profiler.processes`) and
    ``profile`` the sampling itself: interval, CPU% timeline per process,
    the shared-memory objects and the sampler's own cost. ``taps`` is what
    the taps the network was given report in the engine, by name (``dmxshm
    bench network``: ``{"floor": seconds per round}``; empty in a plain run;
    the JSON's ``start_hook``, null when empty).
    ``received_commands`` counts the commands that reached each robot, and
    ``first_rejections`` describes each robot's first rejected one.
    ``busy_us`` is each process's own work per step, in microseconds (the
    engine's physics and lane bookkeeping, each renderer's sensing, each
    agent's policy calls); the rest of a step is that process's idle time.
    ``busy_fraction`` is the same work as a share of the run's wall time, per
    process (in realtime, where processes overlap, the figure to read: a
    renderer at 0.9 is busy 90% of the run).
    ``expired_commands``, ``late_steps`` and ``max_lag_s`` are None where
    nothing measures them: gym mode has no command timeout and no schedule;
    with a realtime spine the spine expires the agents' commands (its count is
    ``expired_commands``) and no engine step has a deadline.
    ``trajectory_digest`` covers everything the run produced (every published
    state in full, every applied command, every sensor sample with the state it
    read; :mod:`dmxshm.network.taps.digest`), ``digests`` its streams by name
    (``states``, ``commands``, ``robot03/imu``...: where two runs differ), and
    ``pose_digest`` the pose-only digest of schema version 1's
    ``trajectory_digest``.
    ``renderer`` is the camera renderer used (``tiny``, ``egl`` or ``batch``), and
    ``renderer_device`` EGL's OpenGL renderer (``llvmpipe ...`` on Mesa).
    ``physics`` is the physics backend (``bullet`` or ``db18``), ``physics_dt_s`` its
    integration step, and ``start_poses`` each robot's ``[x, y, yaw]`` at the start
    (as ``final_poses``). ``look`` is how the cameras drew the world (``flat`` or
    ``duckietown``).
    ``sensor_ticks`` counts each sensor's readings per renderer (each of its
    robots got one a tick). ``log`` is :func:`dmxshm.logs.info` of the run's MCAP log (``--log``).
    ``interrupted`` marks the summary of a run stopped by Ctrl-C or SIGTERM:
    the figures of the steps done until then.
    ``slots`` has one row per external agent slot (:class:`~dmxshm.network.results.SlotResult`
    as a dict: its robots, who held it and when, the commands it passed on and rejected);
    ``command_latency`` (realtime) each agent's command age when the engine applied it,
    from its making (``count``, ``p50_s``, ``p99_s``, ``max_s``); None in gym mode and
    with a realtime spine. ``camera`` is the camera's ``model`` (``pinhole`` or
    ``duckiebot``), ``width``, ``height`` and, for a lens, ``calibration``
    (``{model, K, D, width, height, source}``; :mod:`dmxshm.matrix.lens`); empty
    without a camera. ``noise`` is the sensor noise model's parameters
    (:mod:`dmxshm.matrix.noise`: ``imu``, ``encoders``, ``tof``, ``camera``); empty
    with ``--no-noise``. ``motor`` is a PWM run's motor model (``gain``, ``trim``,
    ``k``, ``limit``, ``lag_s``, ``dead_band``; :mod:`dmxshm.world.motor`); empty in
    a wheel-speed run. ``randomization`` is a randomised run's ``config`` (the ranges
    drawn from) and ``robots`` (each robot's parameters, drawn or nominal;
    :mod:`dmxshm.world.randomize`); empty without ``--randomize``.
    ``episodes`` (``--episodes``): the slots' robots' episodes ``ended`` and the
    ``resets`` their slots asked for (:mod:`dmxshm.network.episodes`); empty without.
    """

    mode: str
    robots: int
    seed: int
    map: str
    steps: int
    sim_time_s: float
    wall_time_s: float
    steps_per_s: float
    final_poses: list[list[float]]
    trajectory_digest: str
    sensors: dict[str, SensorRate]
    drops: dict[str, int]
    rejected_commands: list[int]
    expired_commands: list[int] | None
    timing: StepTiming
    lane: dict[str, Any] = field(default_factory=dict)
    late_steps: int | None = 0
    max_lag_s: float | None = 0.0
    missed_sensor_ticks: dict[str, int] = field(default_factory=dict)
    spine: NetworkSpineResult | None = None
    log: LogInfo | None = None
    sensor_ticks: dict[str, list[int]] = field(default_factory=dict)
    renderer: str = "tiny"
    renderer_device: str | None = None
    physics: str = "bullet"
    physics_dt_s: float = 0.0
    look: str = "flat"
    start_poses: list[list[float]] = field(default_factory=list)
    recorded_frames: int = 0
    unfinished: list[str] = field(default_factory=list)
    contact_sheet: str | None = None
    shm_bytes: int = 0
    processes: list[ProcessRow] = field(default_factory=list)
    profile: ProfileReport | None = None
    taps: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    busy_us: dict[str, float] = field(default_factory=dict)
    received_commands: list[int] = field(default_factory=list)
    first_rejections: dict[int, str] = field(default_factory=dict)
    busy_fraction: dict[str, float] = field(default_factory=dict)
    pose_digest: str = ""
    digests: dict[str, str] = field(default_factory=dict)
    slots: list[dict[str, Any]] = field(default_factory=list)
    command_latency: dict[str, dict[str, float]] | None = None
    camera: dict[str, Any] = field(default_factory=dict)
    noise: dict[str, Any] = field(default_factory=dict)
    motor: dict[str, Any] = field(default_factory=dict)
    randomization: dict[str, Any] = field(default_factory=dict)
    episodes: dict[str, int] = field(default_factory=dict)

    def held(self) -> list[str]:
        """One line for each robot that stood still longer than
        :data:`~dmxshm.sim.scoring.HELD_S`, with what held it at the end of that
        standstill (``lane.held_by``): ``robot 3 still 14.2 s: robot 5 ahead 0.12 m``.

        Example:
            >>> s = Summary.__new__(Summary)
            >>> s.lane = {"max_still_s": [2.0, 14.2], "held_by": [None, "robot 0 ahead 0.12 m"]}
            >>> s.held()
            ['robot 1 still 14.2 s: robot 0 ahead 0.12 m']
        """
        if "held_by" not in self.lane:  # a run without lane figures
            return []
        return [f"robot {r} still {still_s:.1f} s: {why}" for r, (still_s, why)
                in enumerate(zip(self.lane["max_still_s"], self.lane["held_by"], strict=True))
                if why is not None]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``--json`` schema of docs/json.md), with its ``schema_version``."""
        # NaN (a figure without data) as null: the file is valid JSON for any reader.
        # The given taps' reports keep the schema's name of version 1, start_hook.
        typed = {"timing": self.timing.to_dict(),
                 "sensors": {name: rate.to_dict() for name, rate in self.sensors.items()},
                 "spine": self.spine.to_dict() if self.spine is not None else {},
                 "log": ({k: v for k, v in self.log.as_dict().items()
                          if k not in ("config", "summary")} if self.log is not None else {}),
                 "processes": [row.to_dict() for row in self.processes],
                 "profile": (self.profile.to_dict(with_processes=False)
                             if self.profile is not None else {}),
                 "start_hook": self.taps or None}
        fields = {}
        for f in dataclasses.fields(self):
            key = "start_hook" if f.name == "taps" else f.name
            value = getattr(self, f.name)
            fields[key] = typed[key] if key in typed else _plain(value)
        return no_nan({"schema_version": SCHEMA_VERSION, **fields})


def _measured(figures: Any) -> dict[str, Any]:
    """A dataclass of figures as JSON, leaving out those not measured (None)."""
    return {k: v for k, v in asdict(figures).items() if v is not None}


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data (dataclasses inside it as dicts)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def summarize(plan: Plan, results: dict[str, Any]) -> Summary:
    """Assemble the processes' results (by name: ``engine``, ``renderer-0``...) into a
    :class:`Summary`.

    Raises:
        DmxError: the engine or every renderer sent nothing (nothing to summarise).
    """
    cfg = plan.config
    eng: EngineResult = results["engine"]
    # A realtime agent hung in its policy sends no report; the run still counts.
    renderers: list[RendererResult] = [results[name] for name in cfg.roles()
                                       if name.startswith("renderer-") and name in results]
    agents: list[AgentResult] = [results[name] for name in cfg.roles()
                                 if name.startswith("agent-") and name in results]
    if not renderers:
        raise DmxError("no renderer reported: the run has no observations to summarise")
    cameras = {name: results[name] for name in cfg.roles()
               if name.startswith("camera-") and name in results}
    steps = max(eng.steps, 1)
    timing = StepTiming(
        step_s=eng.wall_time_s / steps, physics_s=eng.physics_s / steps,
        rendering_s=max(r.render_s for r in (*renderers, *cameras.values())) / steps,
        agents_s=max((a.busy_s for a in agents), default=0.0) / steps,
        metrics_s=eng.metrics_s / steps)
    if cfg.mode == "gym":
        work = timing.physics_s + timing.rendering_s + timing.agents_s + timing.metrics_s
        timing.framework_s = max(timing.step_s - work, 0.0)
        timing.framework_fraction = timing.framework_s / timing.step_s
    sensors: dict[str, SensorRate] = {}
    names = sensing.names(camera=bool(cfg.camera_wh))
    for name in names:
        if cfg.mode == "gym":  # once a step: a step of dt_s, or of 1 / spine_hz with a spine
            configured = cfg.spine_hz if cfg.spine else 1.0 / cfg.dt_s
            # The readings of the steps physics did: a run stopped between a state's
            # readings and its step has one more reading than steps.
            achieved = (min(min(r.produced[name] for r in renderers), eng.steps)
                        / max(eng.sim_time_s, 1e-9))
        elif name == "camera" and cameras:  # the camera processes' own frames
            configured = cfg.sensor_rates_hz[name]
            achieved = min(c.frames / max(c.elapsed_s, 1e-9) for c in cameras.values())
            sensors[name] = SensorRate(
                configured, achieved, fresh=sum(c.fresh for c in cameras.values()),
                repeated=sum(c.repeated for c in cameras.values()),
                # what reached the agents (a frame overwritten first is not)
                forwarded_hz=min(r.produced[name] / max(r.elapsed_s, 1e-9) for r in renderers))
            continue
        else:
            configured = cfg.sensor_rates_hz[name]
            achieved = min(r.produced[name] / max(r.elapsed_s, 1e-9) for r in renderers)
        sensors[name] = SensorRate(configured, achieved,
                                   fresh=sum(r.fresh.get(name, 0) for r in renderers),
                                   repeated=sum(r.repeated.get(name, 0) for r in renderers),
                                   repeated_late=sum(r.repeated_late.get(name, 0)
                                                     for r in renderers))
    ticks = {name: [int(r.produced[name]) for r in renderers] for name in names}
    missed = {name: sum(int(r.missed.get(name, 0)) for r in renderers) for name in names}
    if cameras:  # made (and logged) by the camera processes, in renderer order
        ticks["camera"] = [c.frames for c in cameras.values()]
        missed["camera"] = sum(c.missed for c in cameras.values())
    drops = {
        "commands": eng.cmd_drops,
        "observations": int(sum(a.obs_drops for a in agents)),
        "states": eng.state_drops,
    }
    sheet = None
    recorded = sum(r.recorded for r in renderers) + sum(c.recorded for c in cameras.values())
    if cfg.record_dir and recorded:
        frames: dict[int, Any] = {}
        for r in renderers:
            frames.update({k: v for k, v in r.frames.items() if v})
        for c in cameras.values():
            frames.update({k: v for k, v in c.kept.items() if v})
        sheet = os.path.join(cfg.record_dir, CONTACT_SHEET)
        robots = [k for k in sorted(frames) if frames[k]]
        write_png(sheet, contact_sheet(
            [[f for f, _, _ in frames[k]] for k in robots],
            labels=[[f"r{k} s{step} t{t:.1f}" for _, step, t in frames[k]] for k in robots]))
    streams: dict[str, str] = {}  # every robot's sample streams, whoever made them
    for made in (*renderers, *cameras.values()):
        streams.update(made.digests)
    spine = results.get("spine")
    busy_s = {"engine": eng.physics_s + eng.metrics_s,
              **{name: r.render_s for name, r in results.items()
                 if name.startswith("renderer-")},
              **{name: a.busy_s for name, a in results.items() if name.startswith("agent-")},
              **{name: c.render_s for name, c in cameras.items()}}
    return Summary(
        mode=cfg.mode, robots=cfg.robots, seed=cfg.seed, map=cfg.map, steps=eng.steps,
        sim_time_s=float(eng.sim_time_s), wall_time_s=float(eng.wall_time_s),
        steps_per_s=eng.steps / max(eng.wall_time_s, 1e-9),
        final_poses=eng.final_poses, trajectory_digest=combine(
            eng.digests["states"], eng.digests["commands"], streams),
        pose_digest=eng.pose_digest, digests={**eng.digests, **dict(sorted(streams.items()))},
        sensors=sensors, drops=drops, rejected_commands=eng.rejected_commands,
        expired_commands=spine.expired_commands if spine is not None else eng.expired_commands,
        timing=timing,
        lane=eng.lane, recorded_frames=recorded, contact_sheet=sheet,
        spine=spine,
        late_steps=eng.late_steps,
        max_lag_s=float(eng.max_lag_s) if eng.max_lag_s is not None else None,
        missed_sensor_ticks=missed,
        sensor_ticks=ticks,
        renderer=cfg.renderer_used,
        renderer_device=egl_device() if cfg.renderer_used == "egl" else None,
        physics=cfg.physics, physics_dt_s=cfg.physics_dt_s, look=cfg.look,
        start_poses=eng.start_poses,
        taps=eng.taps, received_commands=eng.received_commands,
        busy_us={name: b / steps * 1e6 for name, b in busy_s.items()},
        busy_fraction={name: b / max(eng.wall_time_s, 1e-9) for name, b in busy_s.items()},
        first_rejections=eng.first_rejections,
        slots=[asdict(results[name]) for name in cfg.roles()
               if name.startswith("slot-") and name in results],
        command_latency=eng.command_latency,
        camera=_camera(cfg),
        noise=DUCKIEBOT_NOISE.to_dict() if cfg.noise else {},
        motor=cfg.motor.to_dict() if cfg.action == "pwm" else {},
        randomization=randomization(cfg),
        episodes=eng.episodes or {},
    )


def randomization(cfg: NetworkConfig) -> dict[str, Any]:
    """The summary's (and the log's) ``randomization``: the config and each robot's
    draw; ``{}`` without one."""
    if cfg.robot_params is None:
        return {}
    return {"config": cfg.randomize, "robots": cfg.robot_params}


def _camera(cfg: NetworkConfig) -> dict[str, Any]:
    """The summary's ``camera``: model, size and, for a lens, its calibration."""
    if cfg.camera_wh is None:
        return {}
    w, h = cfg.camera_wh
    out: dict[str, Any] = {"model": cfg.camera_model, "width": w, "height": h}
    if cfg.calibration is not None:
        out["calibration"] = cfg.calibration
    return out
