"""Who talks to whom in a network run: the plan and the slot layouts.

:func:`make_plan` turns a :class:`~dmxshm.network.config.NetworkConfig` into a
:class:`Plan`: which robots each renderer and each agent serves, and the
rings between them. Robots are split into contiguous blocks; a renderer and
an agent that share robots get one observation ring carrying all of them, so
a step costs one handoff per process pair, not one per robot::

    engine --state--> renderer r --obs(r, a)--> agent a --cmd(a)--> engine
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from dmxshm import settings
from dmxshm.network.config import NetworkConfig, role_name
from dmxshm.proc.gate import wait_for_start
from dmxshm.sim.sensing import obs_dtype
from dmxshm.world.state import ROBOT_STATE_DTYPE

if TYPE_CHECKING:
    from dmxshm.network.taps import Tap
    from dmxshm.shm.registry import Registry


class TapSpec(Protocol):
    """A tap given to a network (``Network(config, taps=[...])``): travels to every
    process with the plan (so it pickles) and makes that process's tap there."""

    name: str

    def prepare(self, plan: Plan, registry: Registry) -> None:
        """In the supervisor, before any process starts: create what the taps need."""

    def __call__(self, plan: Plan, role: str, index: int) -> Tap | None:
        """This process's tap (None: none in this role)."""


@dataclass(frozen=True)
class ObsLink:
    """An observation ring from one renderer to one agent."""

    renderer: int
    agent: int
    robots: tuple[int, ...]
    ring: str = ""


@dataclass(frozen=True)
class Plan:
    """Who serves which robots, and the names of the rings between them.

    ``rings`` maps each port of :data:`~dmxshm.network.ports.PORTS` that this run
    has (``N`` made a number: ``"state.renderer.0"``) to its ring's name; ``taps`` are those the
    network was given (:class:`TapSpec`: a benchmark's floor, a
    test's counter), made in every process beside the built-in ones.
    """

    config: NetworkConfig
    renderer_robots: tuple[tuple[int, ...], ...]
    agent_robots: tuple[tuple[int, ...], ...]
    links: tuple[ObsLink, ...]
    rings: dict[str, str] = field(default_factory=dict)
    start_barrier: str = ""
    taps: tuple[TapSpec, ...] = ()

    def ring(self, port: str) -> str:
        """The name of the ring of ``port`` (``"spine.frames"``, ``"cmd.agent.1"``).

        Raises:
            KeyError: this run has no such port (the message lists those it has).
        """
        try:
            return self.rings[port]
        except KeyError:
            raise KeyError(f"this run has no port {port!r}; its ports: "
                           f"{', '.join(sorted(self.rings)) or 'none yet'}") from None

    def has(self, port: str) -> bool:
        """Whether this run has ``port`` (a camera, a spine, the live view)."""
        return port in self.rings

    def indexed(self, kind: str) -> list[str]:
        """The rings of ``kind.0``, ``kind.1``... in index order (``"cmd.agent"``)."""
        found: list[str] = []
        while f"{kind}.{len(found)}" in self.rings:
            found.append(self.rings[f"{kind}.{len(found)}"])
        return found

    @property
    def spin_us(self) -> float | None:
        """The polling time every ring of this run uses (see NetworkConfig)."""
        if self.config.spin_us is not None:
            return self.config.spin_us
        if settings.spin_env_set():
            return None  # the user's default (read by the rings) wins
        return settings.SHARED_CORES_SPIN_US if self.parties > (os.cpu_count() or 1) else None

    @property
    def spin_us_resolved(self) -> float:
        """:attr:`spin_us` as a number: the ring default where it is left to the rings
        (what a wait outside a ring, an agent slot's, polls for)."""
        spin = self.spin_us
        return spin if spin is not None else settings.spin_us(settings.RING_SPIN_US)

    def wait_for_start(self, role: str, index: int) -> None:
        """Wait at the start gate (every process of the run passes it at once)."""
        wait_for_start(self.start_barrier, self.party(role, index), role_name(role, index),
                       max(settings.START_TIMEOUT_S, self.config.wait_timeout_s))

    @property
    def parties(self) -> int:
        """Processes of the run: engine, renderers, agents (and the spine)."""
        return len(self.config.processes())

    def party(self, role: str, index: int) -> int:
        """This process's slot in the start barrier: its place in the start order."""
        return self.config.processes().index((role, 0 if role in ("engine", "spine") else index))

    def agent_name(self, a: int) -> str:
        """Who drives the robots of agent index ``a``: ``agent-a`` (built in) or
        ``slot-j`` (the j-th external slot)."""
        built_in = self.config.agents
        return f"agent-{a}" if a < built_in else f"slot-{a - built_in}"

    def owners(self) -> dict[int, str]:
        """Each robot's driver (:meth:`agent_name`)."""
        return {int(r): self.agent_name(a) for a, rows in enumerate(self.agent_robots)
                for r in rows}

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
    agents = split(config.robots, config.total_agents)
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
    """One robot's observation (see :mod:`dmxshm.matrix.obs`; the sensors' registry makes it)."""
    return obs_dtype(config.camera_wh, route=config.route is not None)


def obs_slot_dtype(config: NetworkConfig, robots: int) -> np.dtype:
    """Observations of the robots of one renderer-agent link."""
    return np.dtype([("step", "<u8"), ("obs", robot_obs_dtype(config), (robots,))])


def cmd_slot_dtype(robots: int) -> np.dtype:
    """Wheel commands of the robots of one agent, for one step, in the run's units
    (``--action``: rad/s or PWM duty; the engine converts): ``wall_time_s`` when the
    network got it (a built-in agent: when it sent it; its expiry counts from this),
    ``sent_time_s`` when its agent made it (an outside client's ``act()``), both
    ``time.monotonic()``. An outside agent's slot keeps one record of everything it
    passed on (the engine takes the newest and may skip some): ``resets`` counts its
    reset requests (realtime: the robots back at their start poses), ``lights_seq``
    its light patterns, ``lights`` the newest (RGBA of front left, front right, back
    left, back right); a record whose ``wall_time_s`` the engine saw already carries no
    new wheel command (a lights-only command)."""
    return np.dtype([("step", "<u8"), ("wall_time_s", "<f8"), ("sent_time_s", "<f8"),
                     ("wheels", "<f8", (robots, 2)), ("resets", "<u4"), ("lights_seq", "<u4"),
                     ("lights", "<f4", (robots, 4, 4))])
