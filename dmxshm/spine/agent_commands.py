"""The network spine's agent side: the newest command of each of a network's agents.

A network's agents observe through the renderers, not through the spine: the
spine publishes them nothing, and never waits for them. Each cycle that
takes an action, it reads the newest command of each agent (``cmd.agent.N``)
and reuses a robot's command until it is ``command_timeout_s`` old; then
that robot gets stops (one expiry), until its agent sends again. A frame
carries the fresh commands, stops for the other robots; with no robot fresh
the spine sends stops (IDLE).

It has :class:`~dmxshm.spine.agent.AgentLink`'s interface (the spine's
other agent side), so that :class:`~dmxshm.spine.loop.SpineLoop` runs either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from dmxshm.shm.ring import Ring
from dmxshm.spine.state_machine import State


def action_dtype(robots: int) -> np.dtype:
    """What :meth:`AgentCommands.take` gives the loop: an agent link's action fields,
    with a command per robot (``t_act``: when the newest of them was written)."""
    return np.dtype([("obs_cycle", "<i8"), ("t_obs", "<f8"), ("t_act", "<f8"),
                     ("wheels_rad_s", "<f8", (robots, 2))])


class AgentCommands:
    """The agents' command rings, seen by the spine.

    Args:
        rings: each agent's command ring (reader side).
        rows: the robots of each agent, in ring order.
        robots: the robots of the run.
        timeout_s: a robot's command is reused until it is this old.
        clock: the agents' clock (they stamp their commands with
            ``time.monotonic()``, CLOCK_MONOTONIC as ``time.perf_counter``).

    Attributes:
        observes: False: the agents do not answer the spine's observations, so
            a frame's observation is the newest engine reply held at its send.
        started: some agent has sent a command (the agents start the spine).
        taken: commands taken from its agent, per robot.
        expired_per_robot: commands that ran out, per robot.
    """

    observes = False

    def __init__(self, rings: Sequence[Ring], rows: Sequence[Sequence[int]], robots: int,
                 timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rings = list(rings)
        self.clock = clock
        self.rows = [np.array(r, dtype=np.intp) for r in rows]
        self.timeout_s = timeout_s
        self.wheels = np.zeros((robots, 2))
        self.received = np.full(robots, -np.inf)  # when each robot's command came
        self.written = np.full(robots, -np.inf)  # when its agent wrote it
        self.live = np.zeros(robots, bool)
        self.taken = np.zeros(robots, np.int64)
        self.expired_per_robot = np.zeros(robots, np.int64)
        self.started = False
        self._action = np.zeros((), action_dtype(robots))
        self._action["obs_cycle"] = -1  # answers no observation of the spine's
        self._action["t_obs"] = math.nan

    @property
    def expired(self) -> int:
        """Commands that ran out, all robots together."""
        return int(self.expired_per_robot.sum())

    def drops(self) -> int:
        """The agents' commands overwritten before the spine took them."""
        return int(sum(ring.stats().drops for ring in self.rings))

    def publish(self, k: int, obs_cycle: int, t_obs: float, state: State) -> None:
        """Nothing: the agents observe through the renderers."""

    def take(self, answer_to: int | None = None, until: float = -math.inf
             ) -> np.ndarray | None:
        """The frame's commands (stops for the robots without a fresh one), or None
        when no robot has one. Never waits: ``answer_to`` and ``until`` are the
        agent link's, whose agent answers the spine's observations."""
        now = self.clock()
        for ring, rows in zip(self.rings, self.rows, strict=True):
            cmd = ring.try_read(newest=True)
            if cmd is not None:
                self.wheels[rows] = cmd["wheels"]
                self.received[rows] = now
                self.written[rows] = float(cmd["wall_time_s"])
                self.taken[rows] += 1
                self.started = True
        fresh = now - self.received <= self.timeout_s
        self.expired_per_robot += self.live & ~fresh
        self.live = fresh
        if not fresh.any():
            return None
        action = self._action
        action["wheels_rad_s"] = np.where(fresh[:, None], self.wheels, 0.0)
        action["t_act"] = float(self.written[fresh].max())
        return action

    def forget(self) -> None:
        """Drop every command (RESET): only fresh ones are sent."""
        self.received[:] = -np.inf
        self.live[:] = False

    def close(self) -> None:
        for ring in self.rings:
            ring.close()
