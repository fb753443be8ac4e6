"""The ports of a network: every ring between its roles, declared once.

A :class:`Port` says what a ring carries (its record type), how many records it
holds, whether its writer waits for its readers (``blocking``) or overwrites the
oldest record (``overwrite``), and how many of it a run has (none where the run has
no spine, no camera process, no outside agent...). The supervisor creates every ring
from these declarations (:func:`create_rings`), under the port's own name
(``state.renderer.0`` is the ring ``/dmx-<pid>-<token>-state.renderer.0``), and a
role attaches a port by that name (:meth:`~dmxshm.network.plan.Plan.ring`).

The observation rings (``obs.R.A``, renderer R to agent A) are the plan's links
(:class:`~dmxshm.network.plan.ObsLink`), declared here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dmxshm.network.camera import camera_slot_dtype
from dmxshm.network.config import NetworkConfig
from dmxshm.network.episodes import score_dtype
from dmxshm.network.plan import (
    Plan,
    cmd_slot_dtype,
    obs_slot_dtype,
    robot_obs_dtype,
    state_slot_dtype,
)
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.shm.slot import SlotSegment
from dmxshm.spine.network_spine import spine_reply_dtype, total_cycles
from dmxshm.spine.records import RECORD_DTYPE
from dmxshm.view import rings as view_rings
from dmxshm.world.robot import MAX_WHEEL_SPEED_RAD_S

SPINE_FRAME_SLOTS = 64
"""Slots of the spine's frame ring (64 ms at 1 kHz)."""

MAX_SPINE_RECORDS = 120_000
"""The most per-cycle records of a network spine kept in shared memory (2 min at
1 kHz, 18 MB); the spine's timing report covers every cycle."""


def _step_slots(cfg: NetworkConfig) -> int:
    """A step's ring: two records in gym mode (one written while one is read), four in
    realtime (a reader a little late still finds the newest)."""
    return 2 if cfg.mode == "gym" else 4


def _step_discipline(cfg: NetworkConfig) -> str:
    """Gym mode's barrier: writers wait; realtime: nobody waits, the oldest goes."""
    return "blocking" if cfg.mode == "gym" else "overwrite"


def _overwrite(cfg: NetworkConfig) -> str:
    return "overwrite"


@dataclass(frozen=True)
class Port:
    """One kind of ring between roles.

    Attributes:
        name: its name; ``N`` (``R.A`` for the observation links) stands for the index
            of the renderer, camera process, agent or slot.
        about: who writes, who reads, what.
        dtype: its record type, of the plan and the index.
        slots: how many records it holds, of the config.
        discipline: ``blocking`` or ``overwrite``, of the config.
        count: how many of it the run has (0: none).
        kind: ``ring`` (:class:`~dmxshm.shm.ring.Ring`) or ``slot`` (an agent slot,
            :class:`~dmxshm.shm.slot.SlotSegment`: docs/abi.md).
    """

    name: str
    about: str
    dtype: Callable[[Plan, int], np.dtype]
    slots: Callable[[NetworkConfig], int] = _step_slots
    discipline: Callable[[NetworkConfig], str] = _step_discipline
    count: Callable[[Plan], int] = lambda plan: 1
    kind: str = "ring"

    def names(self, plan: Plan) -> list[str]:
        """The names of this port's rings in the run of ``plan``, in index order."""
        n = self.count(plan)
        if self.name.endswith(".R.A"):
            return [f"{self.name[:-4]}.{link.renderer}.{link.agent}" for link in plan.links]
        if self.name.endswith(".N"):
            return [f"{self.name[:-2]}.{i}" for i in range(n)]
        return [self.name] if n else []


def _slot_robots(plan: Plan, j: int) -> tuple[int, ...]:
    return plan.agent_robots[plan.config.agents + j]


def _renderers(plan: Plan) -> int:
    return plan.config.renderers


def _camera_processes(plan: Plan) -> int:
    return plan.config.renderers if plan.config.camera_processes else 0


def _spine(plan: Plan) -> int:
    return int(plan.config.spine_process)


PORTS: tuple[Port, ...] = (
    Port("state.renderer.N", "engine -> renderer-N: every robot's state, each published step",
         lambda plan, i: state_slot_dtype(plan.config.robots), count=_renderers),
    Port("state.camera.N", "engine -> camera-N: the same, for renderer N's camera process",
         lambda plan, i: state_slot_dtype(plan.config.robots), count=_camera_processes),
    Port("camera.N", "camera-N -> renderer-N: its robots' images (realtime with a camera)",
         lambda plan, i: camera_slot_dtype(len(plan.renderer_robots[i]),
                                           plan.config.camera_wh or (0, 0)),
         slots=lambda cfg: 3, count=_camera_processes),
    Port("obs.R.A", "renderer-R -> agent-A: the observations of the robots they share",
         lambda plan, i: obs_slot_dtype(plan.config, len(plan.links[i].robots)),
         count=lambda plan: len(plan.links)),
    Port("cmd.agent.N", "agent-N -> engine (or the spine): its robots' wheel commands (N: "
         "the agent's index among built-in agents and slots, built-in first)",
         lambda plan, i: cmd_slot_dtype(len(plan.agent_robots[i])),
         count=lambda plan: len(plan.agent_robots)),
    Port("slot.N", "an outside program <-> slot-N: the agent slot of docs/abi.md",
         lambda plan, i: robot_obs_dtype(plan.config),
         count=lambda plan: plan.config.external_agents, kind="slot"),
    Port("score.slot.N", "engine -> slot-N: its robots' rewards and episode ends, each "
         "step (gym mode with --episodes)",
         lambda plan, i: score_dtype(len(_slot_robots(plan, i))),
         count=lambda plan: plan.config.external_agents if plan.config.episodes else 0),
    # The engine takes every frame in order: room for a stall of the engine of
    # SPINE_FRAME_SLOTS cycles before one is overwritten.
    Port("spine.frames", "spine -> engine: every robot's command, one frame per CAN cycle",
         lambda plan, i: cmd_slot_dtype(plan.config.robots),
         slots=lambda cfg: max(_step_slots(cfg), SPINE_FRAME_SLOTS), count=_spine),
    Port("spine.replies", "engine -> spine: the wheel states after each frame's physics "
         "step", lambda plan, i: spine_reply_dtype(plan.config.robots), count=_spine),
    Port("spine.records", "spine -> anyone: its per-cycle timing records (the last "
         "MAX_SPINE_RECORDS)", lambda plan, i: RECORD_DTYPE,
         slots=lambda cfg: min(total_cycles(cfg) + 8, MAX_SPINE_RECORDS),
         discipline=_overwrite, count=_spine),
    # What the live view peeks at (dmxshm.view): never waited for by anyone.
    Port(view_rings.META, "supervisor -> the live view: what the run is",
         lambda plan, i: view_rings.META_DTYPE, slots=lambda cfg: 2, discipline=_overwrite),
    Port(view_rings.STATE, "engine -> the live view: every robot's pose, a few times a "
         "second", lambda plan, i: view_rings.state_dtype(plan.config.robots),
         slots=lambda cfg: 4, discipline=_overwrite),
    Port("view.obs.N", "renderer-N -> the live view: its robots' newest images and counts",
         lambda plan, i: view_rings.obs_dtype(len(plan.renderer_robots[i]),
                                              plan.config.camera_wh),
         slots=lambda cfg: 2, discipline=_overwrite, count=_renderers),
)
"""Every port of a network, in the order the supervisor creates them."""


def port(name: str) -> Port:
    """The declaration of port ``name`` (``"cmd.agent.N"``)."""
    for p in PORTS:
        if p.name == name:
            return p
    raise KeyError(f"no port {name!r}; the ports: {', '.join(p.name for p in PORTS)}")


def create_rings(reg: Registry, plan: Plan) -> tuple[Plan, dict[str, Ring]]:
    """Create every ring (and agent slot) of ``plan``'s run from :data:`PORTS`.

    Returns:
        The plan with its rings' names (``rings``: port instance -> object name; its
        observation links with theirs), and the rings created, open (the caller keeps
        what it uses and closes the rest).
    """
    cfg = plan.config
    names: dict[str, str] = {}
    opened: dict[str, Ring] = {}
    for p in PORTS:
        for i, instance in enumerate(p.names(plan)):
            dtype = p.dtype(plan, i)
            if p.kind == "slot":
                slot = SlotSegment.create(reg, i, cfg.mode, _slot_robots(plan, i), dtype,
                                          MAX_WHEEL_SPEED_RAD_S, cfg.action)
                names[instance] = slot.name
                slot.close()
                continue
            ring = Ring.create(reg, instance, dtype, p.slots(cfg), p.discipline(cfg))
            names[instance] = ring.name
            opened[instance] = ring
    links = tuple(dataclasses.replace(link, ring=names[f"obs.{link.renderer}.{link.agent}"])
                  for link in plan.links)
    rings = {k: v for k, v in names.items() if not k.startswith("obs.")}
    return dataclasses.replace(plan, links=links, rings=rings), opened
