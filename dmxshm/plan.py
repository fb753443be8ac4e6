"""What a network run is: its configuration, and who talks to whom.

:class:`NetworkConfig` holds every user choice, validated up front with
messages that say what is wrong. :func:`make_plan` turns it into a
:class:`Plan`: which robots each renderer and each agent serves, and the
rings between them. Robots are split into contiguous blocks; a renderer and
an agent that share robots get one observation ring carrying all of them, so
a step costs one handoff per process pair, not one per robot::

    engine --state--> renderer r --obs(r, a)--> agent a --cmd(a)--> engine
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from dmxshm.errors import DmxError
from dmxshm.matrix.obs import obs_dtype
from dmxshm.world.state import ROBOT_STATE_DTYPE

MODES = ("gym", "realtime")
# With more processes than cores, a ring wait polls this long, yielding the
# core at every turn (see dmxshm.shm.waiting.spin_until): measured on 2 cores,
# 4 robots, no camera: 1520 steps/s against 1310 when every wait sleeps.
SHARED_CORES_SPIN_US = 1000.0
MAX_CAMERA_PIXELS = 1920 * 1080
MAX_ROBOTS = 64
DEFAULT_SENSOR_RATES_HZ = {"camera": 30.0, "imu": 100.0, "encoders": 30.0, "tof": 15.0}


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
        agent: built-in agent name or ``module:callable``.
        steps: gym mode: steps to run.
        duration_s: realtime mode: seconds to run.
        camera: ``(width, height)``; ``(0, 0)`` disables the camera.
        seed: seed of the world and of the agents.
        map: bundled map name or path of a map file.
        dt_s: simulated time per engine step.
        substeps: physics substeps per step.
        sensor_rates_hz: realtime mode: rate of each sensor.
        command_timeout_s: realtime mode: a wheel command older than this
            is dropped and the robot stops.
        wait_timeout_s: the longest any process waits for another.
        pin: role name (``engine``, ``renderer-0``, ``agent-1``, ``spine``)
            to CPU, or ``"auto"`` for :func:`auto_pins`.
        record_dir: write camera frames as PNG here (None: do not).
        record_every: record every this many steps (gym) / frames.
        floor_rounds: before the run, time this many raw semaphore rounds
            along the step's paths (``dmxshm bench network``).
        spine: realtime mode: put a pinned spine between the agents and the
            engine (pin it with ``pin={"spine": cpu}``; default: last CPU).
        spine_hz: the spine's frequency.
        spin_us: how long a ring wait polls before it sleeps. None: the
            environment variable DMXSHM_SPIN_US if set, else the ring's
            default when every process has a core of its own, and
            :data:`SHARED_CORES_SPIN_US` of polling that yields the core at
            every turn when there are more processes than cores (a plain
            poll would steal the core of the process being waited for).
        profile: sample every process with psutil (:mod:`dmxshm.profiling`);
            the summary gains ``processes`` and ``profile``.
        profile_interval_s: time between two samples.
    """

    mode: str = "gym"
    robots: int = 2
    renderers: int = 1
    agents: int = 1
    agent: str = "lane-follow"
    steps: int = 1000
    duration_s: float = 10.0
    camera: tuple[int, int] = (160, 120)
    seed: int = 0
    map: str = "loop"
    dt_s: float = 1.0 / 30.0
    substeps: int = 4
    sensor_rates_hz: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_SENSOR_RATES_HZ))
    command_timeout_s: float = 0.5
    wait_timeout_s: float = 10.0
    pin: dict[str, int] | str = field(default_factory=dict)
    record_dir: str | None = None
    record_every: int = 10
    floor_rounds: int = 0
    spin_us: float | None = None
    spine: bool = False
    spine_hz: float = 1000.0
    profile: bool = False
    profile_interval_s: float = 0.5
    _pins: dict[str, int] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        _check(self.mode in MODES, f"mode must be one of {MODES}, not {self.mode!r}")
        _check(1 <= self.robots <= MAX_ROBOTS,
               f"robots must be between 1 and {MAX_ROBOTS}, not {self.robots}")
        for what in ("renderers", "agents"):
            n = getattr(self, what)
            _check(1 <= n <= self.robots,
                   f"{what} must be between 1 and the number of robots ({self.robots}), not {n}")
        _check(self.steps >= 1, f"steps must be at least 1, not {self.steps}")
        _check(math.isfinite(self.duration_s) and self.duration_s > 0,
               f"duration must be a positive number of seconds, not {self.duration_s}")
        _check(self.seed >= 0, f"seed must be 0 or more, not {self.seed}")
        w, h = self.camera
        _check(w >= 0 and h >= 0 and (w == 0) == (h == 0),
               f"camera must be WxH with both positive, or 0x0 to disable it; got {w}x{h}")
        _check(w * h <= MAX_CAMERA_PIXELS,
               f"camera {w}x{h} is larger than {MAX_CAMERA_PIXELS} pixels; "
               "ER_TINY_RENDERER would take seconds a frame")
        _check(self.dt_s > 0, f"dt must be positive, not {self.dt_s}")
        _check(self.substeps >= 1, f"substeps must be at least 1, not {self.substeps}")
        for name, hz in self.sensor_rates_hz.items():
            _check(name in DEFAULT_SENSOR_RATES_HZ,
                   f"unknown sensor {name!r}; sensors are {sorted(DEFAULT_SENSOR_RATES_HZ)}")
            _check(hz > 0, f"sensor rate of {name} must be positive, not {hz}")
        _check(self.command_timeout_s > 0, "command timeout must be positive")
        _check(self.wait_timeout_s > 0, "wait timeout must be positive")
        _check(self.record_every >= 1, "record_every must be at least 1")
        _check(not self.spine or self.mode == "realtime",
               "a spine runs in realtime mode only (use --mode realtime)")
        _check(self.spine_hz > 0, "spine frequency must be positive")
        _check(self.profile_interval_s > 0, "profile interval must be positive")
        _check(self.pin == "auto" or isinstance(self.pin, dict),
               f"pin must be a dict ROLE -> CPU or 'auto', not {self.pin!r}")
        pins = (auto_pins(self.roles(), self.spine) if self.pin == "auto"
                else dict(self.pin))  # type: ignore[arg-type]
        object.__setattr__(self, "_pins", pins)
        cpus = usable_cpus()
        roles = set(self.roles())
        for role, cpu in self.pins.items():
            _check(role in roles, f"cannot pin {role!r}: the roles of this run are "
                                  f"{', '.join(sorted(roles))}")
            _check(cpu in cpus, f"cannot pin {role} to CPU {cpu}: this process may use "
                                f"CPUs {_ranges(cpus)}")

    @property
    def pins(self) -> dict[str, int]:
        """``pin`` resolved for this run's roles (``"auto"``: :func:`auto_pins`)."""
        return self._pins

    def roles(self) -> list[str]:
        """The processes of this run, by role name, in start order."""
        return ["engine", *(f"renderer-{i}" for i in range(self.renderers)),
                *(f"agent-{i}" for i in range(self.agents)),
                *(["spine"] if self.spine else [])]

    @property
    def camera_wh(self) -> tuple[int, int] | None:
        """The camera size, or None when disabled."""
        return None if self.camera == (0, 0) else self.camera


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def auto_pins(roles: list[str], spine: bool = False,
              cpus: list[int] | None = None) -> dict[str, int]:
    """A pinning plan for ``roles`` on ``cpus`` (default: :func:`usable_cpus`).

    With a spine and 2 CPUs or more, the spine gets the last CPU alone (its
    cycle must not wait for anybody). The other roles are dealt round the
    remaining CPUs in start order (engine, renderers, agents), so that with
    as many CPUs as processes each has its own, and otherwise neighbours in
    the step's pipeline (which take turns in gym mode) share.

    Example:
        >>> auto_pins(["engine", "renderer-0", "agent-0", "spine"], spine=True, cpus=[0, 1])
        {'spine': 1, 'engine': 0, 'renderer-0': 0, 'agent-0': 0}
        >>> auto_pins(["engine", "renderer-0", "renderer-1", "agent-0"], cpus=[0, 1, 2, 3])
        {'engine': 0, 'renderer-0': 1, 'renderer-1': 2, 'agent-0': 3}
    """
    cpus = list(cpus if cpus is not None else usable_cpus())
    pins: dict[str, int] = {}
    rest = [r for r in roles if r != "spine"]
    if spine and "spine" in roles:
        pins["spine"] = cpus[-1]
        if len(cpus) >= 2:
            cpus = cpus[:-1]
    for i, role in enumerate(rest):
        pins[role] = cpus[i % len(cpus)]
    return pins


def _ranges(cpus: list[int]) -> str:
    return ", ".join(str(c) for c in cpus) if cpus else "none"


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@dataclass(frozen=True)
class ObsLink:
    """An observation ring from one renderer to one agent."""

    renderer: int
    agent: int
    robots: tuple[int, ...]
    ring: str = ""


@dataclass(frozen=True)
class Plan:
    """Who serves which robots, and the names of the rings between them."""

    config: NetworkConfig
    renderer_robots: tuple[tuple[int, ...], ...]
    agent_robots: tuple[tuple[int, ...], ...]
    links: tuple[ObsLink, ...]
    state_rings: tuple[str, ...] = ()
    cmd_rings: tuple[str, ...] = ()
    start_barrier: str = ""
    spine_rings: tuple[str, ...] = ()  # (commands to the engine, its replies)

    @property
    def spin_us(self) -> float | None:
        """The polling time every ring of this run uses (see NetworkConfig)."""
        if self.config.spin_us is not None:
            return self.config.spin_us
        if "DMXSHM_SPIN_US" in os.environ:
            return None  # the user's default (read by the rings) wins
        return SHARED_CORES_SPIN_US if self.parties > (os.cpu_count() or 1) else None

    @property
    def parties(self) -> int:
        """Processes of the run: engine, renderers, agents (and the spine)."""
        return (1 + len(self.renderer_robots) + len(self.agent_robots)
                + int(self.config.spine))

    def party(self, role: str, index: int) -> int:
        """This process's slot in the start barrier."""
        if role == "engine":
            return 0
        if role == "renderer":
            return 1 + index
        if role == "spine":
            return 1 + len(self.renderer_robots) + len(self.agent_robots)
        return 1 + len(self.renderer_robots) + index

    def links_of_renderer(self, r: int) -> list[ObsLink]:
        return [link for link in self.links if link.renderer == r]

    def links_of_agent(self, a: int) -> list[ObsLink]:
        return [link for link in self.links if link.agent == a]


def split(n: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """Contiguous blocks of ``range(n)``, sizes differing by at most one.

    Example:
        >>> split(5, 2)
        ((0, 1, 2), (3, 4))
    """
    return tuple(tuple(int(i) for i in block) for block in np.array_split(np.arange(n), parts))


def make_plan(config: NetworkConfig) -> Plan:
    """The topology of ``config`` (ring names are filled in by the network)."""
    rend = split(config.robots, config.renderers)
    agents = split(config.robots, config.agents)
    links = []
    for r, rr in enumerate(rend):
        for a, aa in enumerate(agents):
            shared = tuple(sorted(set(rr) & set(aa)))
            if shared:
                links.append(ObsLink(renderer=r, agent=a, robots=shared))
    return Plan(config=config, renderer_robots=rend, agent_robots=agents, links=tuple(links))


# -- slot layouts ----------------------------------------------------------------
def state_slot_dtype(robots: int) -> np.dtype:
    """One engine step: the state of every robot."""
    return np.dtype([("step", "<u8"), ("sim_time_s", "<f8"), ("wall_time_s", "<f8"),
                     ("robots", ROBOT_STATE_DTYPE, (robots,))])


def robot_obs_dtype(config: NetworkConfig) -> np.dtype:
    """One robot's observation (see :mod:`dmxshm.matrix.obs`)."""
    return obs_dtype(config.camera_wh)


def obs_slot_dtype(config: NetworkConfig, robots: int) -> np.dtype:
    """Observations of the robots of one renderer-agent link."""
    return np.dtype([("step", "<u8"), ("obs", robot_obs_dtype(config), (robots,))])


def cmd_slot_dtype(robots: int) -> np.dtype:
    """Wheel commands of the robots of one agent, for one step."""
    return np.dtype([("step", "<u8"), ("wall_time_s", "<f8"),
                     ("wheels_rad_s", "<f8", (robots, 2))])
