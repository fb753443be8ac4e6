"""A network run's configuration: every user choice, checked up front.

:class:`NetworkConfig` holds what a run is made of; impossible values raise
:class:`ConfigError` with a message that says which and what to do, before
any process starts.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmxshm import settings
from dmxshm.errors import DmxError
from dmxshm.matrix.camera import LOOKS, Camera
from dmxshm.matrix.cameras import RobotCameras
from dmxshm.matrix.noise import Noise
from dmxshm.matrix.renderer_choice import resolve as resolve_renderer
from dmxshm.network.runs import NAME_RE, check_name
from dmxshm.policies import AgentError, agent_spec, resolve
from dmxshm.proc.cpus import auto_pins, usable_cpus
from dmxshm.sim.db18 import DB18Params, drawn
from dmxshm.sim.planar import PlanarWorld
from dmxshm.sim.robots import RobotMake, apply_physics, robot_makes
from dmxshm.sim.sensing import DEFAULT_RATES_HZ
from dmxshm.sim.spec import NETWORK, PHYSICS, SimSpec
from dmxshm.world import randomize as rand
from dmxshm.world.maps import load_map
from dmxshm.world.motor import ACTIONS, DUCKIEBOT, MotorModel
from dmxshm.world.renderers import EGL_MAX_WH, RENDERERS, RendererError
from dmxshm.world.routes import RouteError, parse_route
from dmxshm.world.world import World

MODES = ("gym", "realtime")
MAX_CAMERA_PIXELS = 1920 * 1080

LENS_RENDER_GROWTH = 1.46
"""How much wider and taller the pinhole image a ``duckiebot`` camera draws is than
its own image (931x698 for 640x480: :class:`~dmxshm.matrix.lens.LensMap`)."""
MAX_ROBOTS = 64
DEFAULT_SENSOR_RATES_HZ = DEFAULT_RATES_HZ
"""Each sensor's realtime rate unless set (defined once, in :mod:`dmxshm.matrix.sensors`)."""
STATE_RATE_FACTOR = 2
"""Realtime mode: states are published at least this many times as fast as the fastest
sensor samples them, so that two consecutive samples of a sensor read two states
(equal rates alias into repeats); docs/sensors.md."""
DEFAULT_SPINE_REPLY_AT_S = 200e-6
"""T_o of a realtime spine unless set: the engine's reply to a frame 200 us after its
send (a ring handoff each way and one physics step of a few robots; docs/spine.md)."""


def role_name(role: str, index: int) -> str:
    """``engine``, ``spine``, ``renderer-0``, ``agent-1``..."""
    return role if role in ("engine", "spine") else f"{role}-{index}"


class ConfigError(DmxError, ValueError):
    """A network configuration value is impossible; the message says which."""


@dataclass(frozen=True)
class NetworkConfig:
    """Everything a run is made of. Defaults are those of ``dmxshm run``.

    Attributes:
        mode: ``"gym"`` (lockstep, reproducible) or ``"realtime"``.
        robots: number of robots in the world.
        renderers: renderer processes (robots are split between them).
        agents: agent processes (robots are split between them).
        agent: built-in agent name, ``module:callable``,
            ``path/to/file.py:callable``, or the callable itself (a
            module-level function or class); kept as the string an agent
            process resolves (:func:`dmxshm.network.policies.agent_spec`).
        steps: gym mode: steps to run.
        duration_s: realtime mode: seconds to run.
        camera: ``(width, height)``; ``(0, 0)`` disables the camera.
        route: None (robots drive straight through intersections where they can,
            as before routes), ``"seed"`` (each robot's turn at each intersection
            drawn by the seed) or turns like ``"left,straight,right"`` (cycled per
            robot); with a route the observations gain ``route`` (the turn ahead and
            ``may_go``) and robots yield at stop lines (:mod:`dmxshm.world.routes`).
        noise: True (the default): every sensor reads with the noise of the
            Duckiebot's part (:mod:`dmxshm.matrix.noise`, seeded by ``seed``, the same
            whatever the process split); False: exact readings (``--no-noise``).
        motor_dynamics: in a PWM run (``action="pwm"``), True (the default): each
            wheel follows its duty through the motor model's first-order lag and dead
            band (:class:`dmxshm.world.motor.Motors`); False: at once
            (``--no-motor-dynamics``). Wheel-speed commands are always applied at once.
        camera_model: ``"pinhole"`` (dmxshm's 60-degree camera) or ``"duckiebot"``
            (the Duckiebot's wide-angle lens, its calibration scaled to ``camera``;
            :mod:`dmxshm.matrix.lens`; ``--camera duckiebot``).
        look: how the cameras draw the world (``--look``): ``"flat"`` (every
            renderer's) or ``"duckietown"`` (the batch renderer's; docs/renderers.md).
        seed: seed of the world and of the agents.
        map: bundled map name or path of a map file.
        dt_s: simulated time per engine step.
        substeps: physics substeps per step.
        sensor_rates_hz: realtime mode: rate of each sensor; a sensor not named
            keeps its default (:data:`DEFAULT_SENSOR_RATES_HZ`).
        command_timeout_s: realtime mode: a wheel command older than this
            is dropped and the robot stops.
        wait_timeout_s: the longest any process waits for another.
        pin: role name (``engine``, ``renderer-0``, ``agent-1``, ``spine``)
            to CPU, or ``"auto"`` for :func:`auto_pins`.
        record_dir: write camera frames as PNG here (None: do not).
        record_every: record every this many steps (gym) / frames.
        spine: realtime mode: put a pinned spine between the agents and the
            engine (pin it with ``pin={"spine": cpu}``; default: last CPU).
            Gym mode: the engine steps through the spine's pipeline in lockstep,
            one physics step of ``1 / spine_hz`` a step, the observation two
            cycles old (:class:`~dmxshm.spine.simulation.SimulationSpine`).
        spine_hz: the spine's frequency.
        spine_reply_at_s: realtime spine: the instant after a frame's send at
            which the engine's reply counts as the observation (T_o of the
            latency law, :func:`dmxshm.spine.network_spine.predicted_send_minus_obs_s`);
            a configuration, never measured: the report sets the measured
            latency beside the law's prediction from it.
        spin_us: how long a ring wait polls before it sleeps. None: the
            environment variable ``DMXSHM_SPIN_US`` if set, else the ring's
            default when every process has a core of its own, and
            :data:`dmxshm.settings.SHARED_CORES_SPIN_US` of polling that yields the core at
            every turn when there are more processes than cores (a plain
            poll would steal the core of the process being waited for).
        profile: sample every process with psutil (:mod:`dmxshm.profiling`);
            the summary gains ``processes`` and ``profile``.
        profile_interval_s: time between two samples.
        log: record the run to this MCAP file (:mod:`dmxshm.logs`; needs the
            ``log`` extra); None: do not.
        renderer: the camera renderer, ``"tiny"`` (pybullet's CPU renderer),
            ``"egl"`` (its EGL plugin; refused where it cannot load), ``"batch"``
            (dmxshm's own: every camera of a process in one call,
            :mod:`dmxshm.matrix.batch_render`) or ``"auto"`` (the fastest here for the
            camera, measured: :mod:`dmxshm.matrix.renderer_choice`); resolved when the
            configuration is made (:attr:`renderer_used`), so every process of the
            run draws with the same. Default ``"batch"``, chosen by measurement: a
            default run (2 robots, 160x120) made 1.2-3.2x the steps/s with it than
            with tiny (3 alternated pairs, 2026-12-03, 2-core machine at load 4-5);
            10-25x tiny's frames/s per core in ``dmxshm bench render``. Not
            ``"auto"``: a choice measured on each machine would make the run's
            images, and so its digest, depend on the machine. Runs before this
            default drew with tiny (``--renderer tiny`` repeats them).
        name: the run's name, listed by ``dmxshm ps`` (:mod:`dmxshm.network.runs`);
            two running networks of one user never share one (refused at start).
            None: unnamed.
        external_agents: agent slots that programs the network did not start take
            (:func:`dmxshm.connect`, docs/abi.md); the robots are split among the
            ``agents`` built-in agents and these, built-in first.
        connect_timeout_s: gym mode with ``external_agents``: how long a slot may stay
            unclaimed (at the start, or after its client left) before the run fails.
        action: the units of every agent's commands, built-in agents and slots alike:
            ``"wheel-speed"`` (rad/s, within the motors' +-27) or ``"pwm"`` (each
            motor's duty cycle in [-1, 1], turned into wheel speed by the
            Duckiebot's motor model, :mod:`dmxshm.world.motor`). Built-in policies
            keep answering in rad/s: their agents convert with the same model.
        randomize: domain randomisation of each robot (``--randomize``;
            :mod:`dmxshm.world.randomize`): None (the default: every robot is the
            nominal Duckiebot), True (every parameter's default range), a dict of
            ranges, or the path of a YAML/JSON file of them; held as the parsed
            config (``{group: {parameter: [low, high]}}``). Each robot's parameters
            are drawn once, at the start, keyed by (``seed``, robot, parameter)
            (:attr:`robot_params`), so every process and a replay compute the same.
            The motor's parameters apply to PWM runs: with wheel speeds, True leaves
            them out and a config that names them is refused.
        episodes: gym mode with ``external_agents``: the engine scores the slots'
            robots as episodes, as :class:`~dmxshm.batch.lanes.MultiLane` scores its
            robots (``--episodes``; :mod:`dmxshm.network.episodes`): each step a
            reward, a termination (off the road, a collision) and a truncation per
            robot, in the reserved fields of the slot's observation (docs/abi.md); a
            robot whose episode ended stands still until its slot asks for a reset
            (the reset word, reserved in gym mode without episodes), which puts the
            slot's robots back at their start poses and starts their episodes over.
            What :func:`dmxshm.connect_parallel` drives.
        episode_steps: with ``episodes``: steps after which a robot's episode is
            truncated (0: never).
    """

    mode: str = "gym"
    robots: int = NETWORK.robots
    renderers: int = 1
    agents: int = 1
    agent: str | Callable[..., Any] = "lane-follow"
    steps: int = 1000
    duration_s: float = 10.0
    camera: tuple[int, int] = NETWORK.camera
    camera_model: str = NETWORK.camera_model
    route: str | None = NETWORK.route
    noise: bool = NETWORK.noise
    motor_dynamics: bool = NETWORK.motor_dynamics
    seed: int = NETWORK.seed
    map: str = NETWORK.map
    dt_s: float = NETWORK.dt_s
    substeps: int = NETWORK.substeps
    sensor_rates_hz: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_SENSOR_RATES_HZ))
    command_timeout_s: float = 0.5
    wait_timeout_s: float = settings.WAIT_TIMEOUT_S
    pin: dict[str, int] | str = field(default_factory=dict)
    record_dir: str | None = None
    record_every: int = 10
    spin_us: float | None = None
    spine: bool = False
    spine_hz: float = 1000.0
    spine_reply_at_s: float = DEFAULT_SPINE_REPLY_AT_S
    profile: bool = False
    profile_interval_s: float = 0.5
    log: str | None = None
    renderer: str = NETWORK.renderer
    name: str | None = None
    external_agents: int = 0
    connect_timeout_s: float = 60.0
    action: str = NETWORK.action
    randomize: Any = NETWORK.randomize
    episodes: bool = False
    episode_steps: int = settings.EPISODE_STEPS
    physics: str = NETWORK.physics
    look: str = NETWORK.look
    _pins: dict[str, int] = field(init=False, repr=False, compare=False, default_factory=dict)
    _renderer: str = field(init=False, repr=False, compare=False, default="tiny")
    _egl_device: str | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "agent", agent_spec(self.agent))
        except AgentError as exc:
            raise ConfigError(str(exc)) from None
        _check(self.mode in MODES, f"mode must be one of {MODES}, not {self.mode!r}")
        _check(1 <= self.robots <= MAX_ROBOTS,
               f"robots must be between 1 and {MAX_ROBOTS}, not {self.robots}")
        _check(1 <= self.renderers <= self.robots,
               f"renderers must be between 1 and the number of robots ({self.robots}), "
               f"not {self.renderers}")
        _check(self.external_agents >= 0,
               f"external agents must be 0 or more, not {self.external_agents}")
        _check(self.agents >= (0 if self.external_agents else 1),
               f"agents must be at least {0 if self.external_agents else 1}, not {self.agents}")
        _check(self.total_agents <= self.robots,
               f"{self.agents} built-in and {self.external_agents} external agents are "
               f"{self.total_agents} agents for {self.robots} robots: every agent needs a robot "
               "(give more --robots, or fewer agents)" if self.external_agents else
               f"agents must be between 1 and the number of robots ({self.robots}), "
               f"not {self.agents}")
        # How long a person may take to start a client: up to a run's longest duration.
        _check(_within(self.connect_timeout_s, settings.MIN_TIMEOUT_S,
                       settings.MAX_DURATION_S),
               f"connect timeout must be "
               f"{_span_s(settings.MIN_TIMEOUT_S, settings.MAX_DURATION_S)}, not "
               f"{self.connect_timeout_s}")
        _check(self.action in ACTIONS,
               f"action must be one of {', '.join(ACTIONS)}, not {self.action!r}")
        _check(self.action == "wheel-speed" or not self.spine,
               "--action pwm with --spine is not supported: the spine's CAN frames and its "
               "per-cycle records carry wheel speeds; use --action wheel-speed with --spine")
        object.__setattr__(self, "randomize", self._randomization())
        _check(not self.episodes or (self.mode == "gym" and self.external_agents > 0),
               "--episodes scores the robots of outside agents' slots in a gym run: give "
               "--mode gym and --external-agents N")
        _check(not (self.episodes and self.spine),
               "--episodes with --spine is not supported: a spine's robots are observed two "
               "cycles late, which an episode's reward would have to follow")
        _check(not (self.episodes and self.log),
               "--episodes with --log is not supported yet: the log does not record the "
               "resets the slots ask for, so its replay would not be exact")
        _check(isinstance(self.episode_steps, int)
               and 0 <= self.episode_steps <= settings.MAX_STEPS,
               f"episode steps must be 0 (never truncate) to {settings.MAX_STEPS}, not "
               f"{self.episode_steps!r}")
        _check(isinstance(self.steps, int) and 1 <= self.steps <= settings.MAX_STEPS,
               f"steps must be 1 to {settings.MAX_STEPS}, not {self.steps}")
        _check(_within(self.duration_s, settings.MIN_TIMEOUT_S, settings.MAX_DURATION_S),
               f"duration must be {_span_s(settings.MIN_TIMEOUT_S, settings.MAX_DURATION_S)}, "
               f"not {self.duration_s}")
        _check(isinstance(self.seed, int) and 0 <= self.seed <= settings.MAX_SEED,
               f"seed must be 0 to 2^64-1, not {self.seed}")
        try:
            parse_route(self.route)
        except RouteError as exc:
            raise ConfigError(str(exc)) from None
        _check(self.camera_model in ("pinhole", "duckiebot"),
               f"camera model must be 'pinhole' or 'duckiebot', not {self.camera_model!r}")
        w, h = self.camera
        _check(w >= 0 and h >= 0 and (w == 0) == (h == 0),
               f"camera must be WxH with both positive, or 0x0 to disable it; got {w}x{h}")
        _check(w * h <= MAX_CAMERA_PIXELS,
               f"camera {w}x{h} is larger than {MAX_CAMERA_PIXELS} pixels; "
               "ER_TINY_RENDERER would take seconds a frame")
        _check(self.dt_s > 0, f"dt must be positive, not {self.dt_s}")
        _check(self.substeps >= 1, f"substeps must be at least 1, not {self.substeps}")
        _check(isinstance(self.sensor_rates_hz, dict),
               f"sensor_rates_hz must be a dict SENSOR -> Hz, not {self.sensor_rates_hz!r}")
        for name, hz in self.sensor_rates_hz.items():
            _check(name in DEFAULT_SENSOR_RATES_HZ,
                   f"unknown sensor {name!r}; sensors are {sorted(DEFAULT_SENSOR_RATES_HZ)}")
            _check(isinstance(hz, (int, float)) and math.isfinite(hz)
                   and 0 < hz <= settings.MAX_RATE_HZ,
                   f"sensor rate of {name} must be above 0 and at most "
                   f"{settings.MAX_RATE_HZ:g} Hz, not {hz!r}")
        # A sensor not named keeps its default: every process reads every sensor's rate.
        object.__setattr__(self, "sensor_rates_hz",
                           {**DEFAULT_SENSOR_RATES_HZ, **self.sensor_rates_hz})
        _check(_within(self.command_timeout_s, settings.MIN_TIMEOUT_S, settings.MAX_TIMEOUT_S),
               f"command timeout must be "
               f"{_span_s(settings.MIN_TIMEOUT_S, settings.MAX_TIMEOUT_S)}, not "
               f"{self.command_timeout_s}")
        _check(_within(self.wait_timeout_s, settings.MIN_TIMEOUT_S, settings.MAX_TIMEOUT_S),
               f"wait timeout must be {_span_s(settings.MIN_TIMEOUT_S, settings.MAX_TIMEOUT_S)}"
               f", not {self.wait_timeout_s}")
        _check(self.record_every >= 1, "record_every must be at least 1")
        _check(self.record_dir is None or self.camera != (0, 0),
               "recording writes camera frames, and a 0x0 camera turns the camera off: give a "
               "camera size (e.g. --camera 160x120) or do not record")
        _check(math.isfinite(self.spine_hz) and 0 < self.spine_hz <= settings.MAX_RATE_HZ,
               f"spine frequency must be above 0 and at most {settings.MAX_RATE_HZ:g} Hz, "
               f"not {self.spine_hz}")
        _check(math.isfinite(self.spine_reply_at_s) and self.spine_reply_at_s >= 0,
               f"spine reply instant must be 0 s or more, not {self.spine_reply_at_s}")
        _check(self.renderer in RENDERERS,
               f"renderer must be one of {', '.join(RENDERERS)}, not {self.renderer!r}")
        _check(self.physics in PHYSICS,
               f"physics must be one of {', '.join(PHYSICS)}, not {self.physics!r}")
        _check(self.physics == "bullet" or self.camera_wh is None
               or self.renderer in ("batch", "auto"),
               f"--physics {self.physics} draws cameras with the batch renderer, not "
               f"{self.renderer} (tiny and EGL draw Bullet's scene): use --renderer batch")
        _check(self.look in LOOKS, f"look must be one of {', '.join(LOOKS)}, not {self.look!r}")
        try:
            object.__setattr__(self, "_renderer", "batch" if (
                self.physics != "bullet" and self.camera_wh is not None) else resolve_renderer(
                self.renderer, self.camera_wh, self.camera_model, self.look))
        except RendererError as exc:
            raise ConfigError(str(exc)) from None
        # A lens camera draws a wider pinhole image, about 1.46 times its own size.
        grow = LENS_RENDER_GROWTH if self.camera_model == "duckiebot" else 1.0
        _check(self._renderer != "egl" or self.camera_wh is None
               or (w * grow <= EGL_MAX_WH[0] and h * grow <= EGL_MAX_WH[1]),
               f"camera {w}x{h} is larger than the EGL renderer's {EGL_MAX_WH[0]}x"
               f"{EGL_MAX_WH[1]} buffer (it would be drawn smaller and stretched; a "
               "duckiebot camera draws a pinhole image 1.46 times its size); use a "
               "smaller camera or --renderer tiny")
        _check(self.profile_interval_s > 0, "profile interval must be positive")
        _check(self.name is None
               or (isinstance(self.name, str) and bool(NAME_RE.fullmatch(self.name))),
               f"name must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter "
               f"or digit, not {self.name!r}")
        _check(self.pin == "auto" or isinstance(self.pin, dict),
               f"pin must be a dict ROLE -> CPU or 'auto', not {self.pin!r}")
        pins = (auto_pins(self.roles(), self.spine_process) if self.pin == "auto"
                else dict(self.pin))  # type: ignore[arg-type]
        object.__setattr__(self, "_pins", pins)
        cpus = usable_cpus()
        roles = set(self.roles())
        for role, cpu in self.pins.items():
            _check(role in roles, f"cannot pin {role!r}: the roles of this run are "
                                  f"{', '.join(sorted(roles))}")
            _check(cpu in cpus, f"cannot pin {role} to CPU {cpu}: this process may use "
                                f"CPUs {_ranges(cpus)}")

    def _randomization(self) -> dict[str, dict[str, list[float]]] | None:
        """``randomize`` parsed and checked (a config, as JSON holds it), or None."""
        try:
            config = rand.parse(self.randomize)
        except rand.RandomizeError as exc:
            raise ConfigError(str(exc)) from None
        if config is None:
            return None
        motor = [n for n in rand.named(config) if n in rand.MOTOR_PARAMETERS]
        if motor and self.action != "pwm":
            _check(self.randomize is True,
                   f"randomize names {', '.join(motor)}, the motor model's parameters, but "
                   "this run's commands are wheel speeds, which no motor model turns: give "
                   "--action pwm, or leave them out of the config")
            config = rand.without(config, rand.MOTOR_PARAMETERS)
        return {g: {n: [lo, hi] for n, (lo, hi) in p.items()} for g, p in config.items()}

    @functools.cached_property
    def robot_params(self) -> list[dict[str, float]] | None:
        """Each robot's domain randomisation draw (every parameter, drawn or nominal;
        :func:`~dmxshm.world.randomize.robot_draws`), or None without ``randomize``."""
        if self.randomize is None:
            return None
        return rand.robot_draws(self.randomize, self.seed, self.robots)

    @property
    def sim_spec(self) -> SimSpec:
        """What this run simulates, as every front-end describes it."""
        return SimSpec(map=self.map, robots=self.robots, dt_s=self.dt_s,
                       substeps=self.substeps, seed=self.seed, action=self.action,
                       motor_dynamics=self.motor_dynamics, noise=self.noise,
                       camera=self.camera, camera_model=self.camera_model,
                       renderer=self.renderer, randomize=self.randomize, route=self.route,
                       physics=self.physics, look=self.look)

    @functools.cached_property
    def robot_makes(self) -> list[RobotMake]:
        """Each robot as its draw makes it (:func:`dmxshm.sim.robots.robot_make`: its
        motor model, noise model and physics; nominal without ``randomize``)."""
        return robot_makes(self.robot_params, self.robots, self.motor)

    @property
    def motor_models(self) -> list[MotorModel] | MotorModel:
        """The motor model of each robot (randomised), or the one of every robot."""
        if self.robot_params is None or self.action != "pwm":
            return self.motor
        return [make.motor for make in self.robot_makes]

    def engine_world(self) -> World | PlanarWorld:
        """The world that steps the run's physics, its robots given their physics: the
        engine's, and a realtime replay's (the same world, so the replay steps what the
        engine stepped). The caller closes it."""
        dt_s, substeps = self.engine_world_steps
        if self.physics == "db18":
            return PlanarWorld(self.map, self.robots, seed=self.seed, dt_s=dt_s,
                               substeps=substeps, params=self.db18_params)
        world = World(self.map, self.robots, seed=self.seed, dt_s=dt_s, substeps=substeps)
        try:
            self.set_robot_physics(world)  # each robot's randomised friction, mass, wheels
        except BaseException:
            world.close()
            raise
        return world

    @property
    def db18_params(self) -> list[DB18Params]:
        """Each robot's DB18 model: the nominal DB18 (no delay, no trim: the Duckiematrix
        engine's defaults), its gain, trim and model parameters drawn where randomised
        (:func:`~dmxshm.sim.db18.drawn`)."""
        nominal = DB18Params.nominal()
        if self.robot_params is None:
            return [nominal] * self.robots
        return [drawn(nominal, p) for p in self.robot_params]

    def mirror_world(self, renderer: str = "tiny") -> World | PlanarWorld:
        """A world that mirrors the engine's states, for a renderer's time of flight
        and drawings (``renderer``: what draws it): Bullet's scene, or under DB18 the
        plane's footprints (drawn by the batch renderer). The caller closes it."""
        if self.physics == "db18":
            return PlanarWorld(self.map, self.robots, seed=self.seed, dt_s=self.dt_s,
                               substeps=self.substeps)
        return World(self.map, self.robots, seed=self.seed, dt_s=self.dt_s,
                     substeps=self.substeps, renderer=renderer)

    def set_robot_physics(self, world: World | PlanarWorld) -> None:
        """Give ``world``'s robots their randomised friction, mass and wheel radius
        (an engine's world, a replay's: every world that steps physics); nominal
        robots keep the world's own."""
        if self.robot_params is not None:
            apply_physics(world, range(self.robots), self.robot_makes)

    def sensor_noise(self) -> Noise | None:
        """The run's sensor noise (each robot's ``noise_scale`` drawn where randomised),
        or None with ``noise`` off."""
        if not self.noise:
            return None
        return Noise(self.seed, robot_models=None if self.robot_params is None else
                     [make.noise for make in self.robot_makes])

    def robot_cameras(self, noise: Noise | None) -> RobotCameras | None:
        """Every robot's camera (its jitter and appearance where randomised) with
        ``noise``, or None with the camera off."""
        if self.camera_wh is None:
            return None
        base = Camera.of_model(self.camera_model, *self.camera_wh,
                               renderer=self.renderer_used, look=self.look)
        return RobotCameras(base, noise, self.robot_params)

    @property
    def pins(self) -> dict[str, int]:
        """``pin`` resolved for this run's roles (``"auto"``: :func:`auto_pins`)."""
        return self._pins

    def processes(self) -> list[tuple[str, int]]:
        """``(role, index)`` of every process of this run, in start order.

        The one place that says which processes a run has: the start order,
        the start barrier's parties and the summary all follow it.
        """
        return ([("engine", 0)] + [("renderer", r) for r in range(self.renderers)]
                + [("camera", r) for r in range(self.renderers) if self.camera_processes]
                + [("agent", a) for a in range(self.agents)]
                + [("slot", j) for j in range(self.external_agents)]
                + ([("spine", 0)] if self.spine_process else []))

    @property
    def motor(self) -> MotorModel:
        """The motor model of every robot (PWM to wheel speed; without its dynamics
        when ``motor_dynamics`` is False)."""
        return DUCKIEBOT if self.motor_dynamics else DUCKIEBOT.ideal()

    @property
    def command_limit(self) -> float:
        """The largest command magnitude in the run's units (``action``): the motor
        model's duty limit, or its full speed in rad/s."""
        m = self.motor
        return m.limit if self.action == "pwm" else m.full_speed_rad_s

    @property
    def total_agents(self) -> int:
        """Built-in agents and external slots: the robots are split among these."""
        return self.agents + self.external_agents

    @property
    def barrier_timeout_s(self) -> float:
        """How long a gym-mode wait for the next step may last: ``wait_timeout_s``, and
        ``connect_timeout_s`` more with external slots (a slot's client may come late,
        or leave and be replaced). The slot's own process keeps the shorter limits."""
        if self.mode == "gym" and self.external_agents:
            return self.wait_timeout_s + self.connect_timeout_s
        return self.wait_timeout_s

    @property
    def renderer_used(self) -> str:
        """``tiny`` or ``egl``: ``renderer`` with ``auto`` resolved."""
        return self._renderer

    @property
    def camera_processes(self) -> bool:
        """Each renderer has a camera process (:mod:`dmxshm.network.camera`): in
        realtime mode with the camera on, so that a slow camera never holds the
        renderer's other sensors back."""
        return self.mode == "realtime" and self.camera_wh is not None

    @property
    def spine_process(self) -> bool:
        """A spine process runs (realtime with ``spine``); in gym mode the spine is the
        engine's lockstep pipeline."""
        return self.spine and self.mode == "realtime"

    def roles(self) -> list[str]:
        """The processes of this run, by name (``engine``, ``renderer-0``...), in start order."""
        return [role_name(role, index) for role, index in self.processes()]

    def preflight(self) -> None:
        """What can fail before any process starts fails here, in this process: the
        agent is loaded, the map too, and the robots are placed as the world will.

        Raises:
            AgentError: the agent does not load.
            MapError: the map does not load, or has no room for the robots.
            RendererError: the EGL renderer was asked for and cannot load here.
            NameTakenError: another running network of this user has this ``name``.
        """
        check_name(self.name)
        resolve(self.agent_ref)
        load_map(self.map).start_poses(self.robots, np.random.default_rng(self.seed))
        if self.renderer_used == "egl" and self.camera_wh is not None:
            # In a child process: where EGL fails, the plugin ends its process. Its
            # result travels to the renderers in this config (they need not probe again).
            object.__setattr__(self, "_egl_device", probe_egl())
        if self.renderer_used == "batch" and self.camera_wh is not None:
            # Compiled here, once, not in every renderer and camera process at once.
            from dmxshm.matrix.batch_render import ensure_compiled

            ensure_compiled(say=lambda line: print(line, file=sys.stderr, flush=True))

    def unused_fields(self, given: Iterable[str]) -> list[tuple[str, str, str]]:
        """The fields of ``given`` (those the caller set) that have no effect in this
        run, each as ``(field, where it applies, why)``; where it applies is a mode
        (``gym``, ``realtime``), ``spine`` (a realtime run with ``spine``) or
        ``episodes`` (a run with ``episodes``). A caller
        refuses them, or says so: ``dmxshm run`` refuses such an option typed, and
        notes one set from the environment.

        Example:
            >>> NetworkConfig(mode="gym").unused_fields(["steps", "duration_s"])
            [('duration_s', 'realtime', 'a gym run lasts --steps steps')]
        """
        mode_only = {
            "steps": ("gym", "a realtime run lasts --duration seconds"),
            "duration_s": ("realtime", "a gym run lasts --steps steps"),
            "sensor_rates_hz": ("realtime", "in gym mode every sensor produces once a step"),
            "command_timeout_s": ("realtime", "in gym mode every step waits for every command"),
            "connect_timeout_s": ("gym", "in realtime an unclaimed slot's robots stand still"),
            "spine_reply_at_s": ("realtime", "a gym spine is the engine's lockstep pipeline, "
                                             "with no frames to reply to")}
        unused = []
        for name in given:
            only, why = mode_only.get(name, (self.mode, ""))
            if only != self.mode:
                unused.append((name, only, why))
            elif name == "spine_reply_at_s" and not self.spine_process:
                unused.append((name, "spine", "it is the network spine's T_o"))
            elif name == "episode_steps" and not self.episodes:
                unused.append((name, "episodes", "it truncates the slots' robots' episodes"))
        return unused

    @property
    def egl_device(self) -> str | None:
        """EGL's OpenGL renderer as :meth:`preflight` probed it (None: not probed)."""
        return self._egl_device

    @property
    def agent_ref(self) -> str:
        """``agent`` as the string an agent process resolves (set by ``__post_init__``)."""
        return str(self.agent)

    @property
    def planned_steps(self) -> int:
        """Engine steps of the run: ``steps`` (gym), or ``duration_s / state_dt_s``
        (realtime: a step per published state)."""
        if self.mode == "gym":
            return self.steps
        return int(round(self.duration_s / self.state_dt_s))

    @property
    def fastest_sensor_hz(self) -> float:
        """The highest rate a sensor samples at (realtime; the camera's only if it is on)."""
        return max(hz for name, hz in self.sensor_rates_hz.items()
                   if name != "camera" or self.camera_wh is not None)

    @property
    def physics_dt_s(self) -> float:
        """One Bullet step. Gym: ``dt_s / substeps``; with a spine: ``1 / spine_hz``.
        Realtime: ``dt_s / substeps`` divided further, by the smallest whole number
        that makes it at most ``1 / (STATE_RATE_FACTOR * fastest_sensor_hz)``, so that
        a state published every Bullet step comes at least twice as fast as the
        fastest sensor (defaults: 1/240 s, against gym's 1/120 s).

        Example:
            >>> NetworkConfig(mode="realtime").physics_dt_s == 1 / 240
            True
        """
        if self.spine:
            return 1.0 / self.spine_hz
        step = self.dt_s / self.substeps
        if self.mode == "gym":
            return step
        split = math.ceil(step * STATE_RATE_FACTOR * self.fastest_sensor_hz - 1e-9)
        return step / max(split, 1)

    @property
    def state_every(self) -> int:
        """Bullet steps between two published states: gym: ``substeps`` (one state a
        step of ``dt_s``; with a spine, 1); realtime: 1; a realtime spine: the most
        cycles that keep states at least ``STATE_RATE_FACTOR`` times as fast as the
        fastest sensor (5 at 1 kHz with a 100 Hz IMU), at least 1."""
        if self.spine_process:
            return max(1, math.floor(self.spine_hz / (STATE_RATE_FACTOR
                                                       * self.fastest_sensor_hz) + 1e-9))
        if self.mode == "gym" and not self.spine:
            return self.substeps
        return 1

    @property
    def engine_world_steps(self) -> tuple[float, int]:
        """``(dt_s, substeps)`` of the engine's world: a step per published state (gym:
        ``dt_s`` in ``substeps``; realtime: one Bullet step), or per CAN cycle with a
        spine."""
        if self.spine:
            return 1.0 / self.spine_hz, 1
        if self.mode == "gym":
            return self.dt_s, self.substeps
        return self.physics_dt_s, 1

    @property
    def state_dt_s(self) -> float:
        """Simulated time between two published states (an engine step, but under a
        realtime spine, whose engine steps once per CAN cycle)."""
        return self.physics_dt_s * self.state_every

    @property
    def route_turns(self) -> tuple[str, ...] | None:
        """The route's turns (``()``: by the seed), or None with routes off."""
        return parse_route(self.route)

    @property
    def calibration(self) -> dict[str, Any] | None:
        """The lens calibration of a ``duckiebot`` camera (the summary's
        ``camera.calibration``), None otherwise."""
        if self.camera_model != "duckiebot" or self.camera_wh is None:
            return None
        from dmxshm.matrix.lens import DUCKIEBOT

        w, h = self.camera_wh
        cal = DUCKIEBOT if (w, h) == (DUCKIEBOT.width, DUCKIEBOT.height) else \
            DUCKIEBOT.scaled(w, h)
        return cal.to_dict()

    @property
    def camera_wh(self) -> tuple[int, int] | None:
        """The camera size, or None when disabled."""
        return None if self.camera == (0, 0) else self.camera


def probe_egl() -> str:
    """Start EGL once in a child process (cached): fails here, with the reason,
    rather than in a renderer process; returns EGL's OpenGL renderer."""
    from dmxshm.world.renderers import probe

    return probe()


def _ranges(cpus: list[int]) -> str:
    return ", ".join(str(c) for c in cpus) if cpus else "none"


def _within(value: Any, lo: float, hi: float) -> bool:
    """``value`` is a finite number from ``lo`` to ``hi``."""
    return isinstance(value, (int, float)) and math.isfinite(value) and lo <= value <= hi


def _span_s(lo: float, hi: float) -> str:
    """``"0.01 s to 3600 s"``."""
    return f"{lo:g} s to {hi:g} s"


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


