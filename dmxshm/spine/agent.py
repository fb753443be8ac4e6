"""An agent process behind a spine: reads observations, writes actions.

The policy is ``forward`` (constant wheel speeds) or ``module:callable``:
a function ``act(obs) -> (left, right)`` wheel speeds in rad/s, where
``obs`` is the spine's observation record (its cycle, the cycle and time of
the servo replies behind it, the spine's state). The agent never slows the
spine down beyond its planning time: after it publishes an observation, the
spine waits for the answer to it until T_p (``plan_s``) into its plan, as
long as its own planner would work; without one by then it takes the
newest action there is, reuses it until it is too old, then sends stops.

The agent also measures its round trip through the spine: from writing an
action to reading the first observation published after it.

:class:`AgentLink` is the spine's side of the link, one :class:`AgentSide`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dmxshm.errors import DmxError, RingClosedError
from dmxshm.proc.gate import wait_for_start
from dmxshm.shm.ring import Ring
from dmxshm.spine.gate import SpinePorts, party
from dmxshm.spine.state_machine import State

FORWARD_RAD_S = 5.0


@dataclass(frozen=True)
class AgentResult:
    """What the agent process did, or what its supervisor saw of it.

    Attributes:
        actions: actions written.
        round_trips_s: from writing an action to reading the first observation
            published after it.
        hung: it did not end after the spine did (its supervisor stopped it).
        failed: how it failed, if it did (the spine went on without it).
    """

    actions: int = 0
    round_trips_s: list[float] = field(default_factory=list)
    hung: bool = False
    failed: str | None = None


class AgentSide(Protocol):
    """Where a spine's actions come from, when not from its built-in planner: an
    agent that answers its observations (:class:`AgentLink`), or a network's
    agents (:class:`~dmxshm.spine.agent_commands.AgentCommands`).

    Attributes:
        observes: its actions answer the observations it is published (the
            loop records that observation with the action); False: they do
            not, and a frame's observation is the newest reply held at its send.
        started: it sent something (it starts the spine).
        expired: actions dropped for being too old.
    """

    observes: bool
    started: bool

    @property
    def expired(self) -> int: ...

    def publish(self, k: int, obs_cycle: int, t_obs: float, state: State) -> None:
        """Tell the agent of cycle ``k``'s observation and of the spine's state."""

    def take(self, answer_to: int | None = None, until: float = -math.inf
             ) -> np.ndarray | None:
        """The action to send now (a record with ``obs_cycle``, ``t_obs``,
        ``t_act`` and ``wheels_rad_s``), or None: a stop."""

    def forget(self) -> None:
        """Drop the last action (RESET): only a fresh one is sent."""


class AgentLink:
    """The spine's side of the agent link: observations out, actions in.

    The spine never waits for the agent: it publishes an observation each
    cycle and takes the newest action if one came. An action is reused
    until it is ``timeout_s`` old; then the spine sends stops.

    Attributes:
        observes: True: the agent answers the observations the spine publishes it.
        started: an action has come (the agent starts the spine by sending one).
        expired: actions dropped for being too old.
    """

    observes = True

    def __init__(self, ports: SpinePorts, timeout_s: float) -> None:
        obs, actions = ports.agent_rings()
        self.obs = Ring.attach(obs, side="writer", role="spine")
        self.actions = Ring.attach(actions, side="reader", role="spine")
        self.timeout_s = timeout_s
        self.slot = np.zeros((), self.obs.dtype)
        self.last: np.ndarray | None = None
        self.received_at = -math.inf
        self.started = False
        self.expired = 0

    def publish(self, k: int, obs_cycle: int, t_obs: float, state: State) -> None:
        """Tell the agent of cycle ``k``'s observation (made at ``t_obs`` by the CAN
        cycle started in ``obs_cycle``) and of the spine's state."""
        self.slot["cycle"] = k
        self.slot["obs_cycle"] = obs_cycle
        self.slot["t_obs"] = t_obs
        self.slot["state"] = int(state)
        self.slot["t_published"] = time.perf_counter()
        self.obs.write(self.slot)

    def take(self, answer_to: int | None = None, until: float = -math.inf
             ) -> np.ndarray | None:
        """The action to send now, or None (none yet, or expired).

        With ``answer_to``, polls until an action that answers the observation
        of that CAN cycle comes, or until the ``until`` clock reading (the end
        of the spine's planning time), whichever is first.
        """
        fresh = self.actions.try_read(newest=True)
        if answer_to is not None:
            while (fresh is None or int(fresh["obs_cycle"]) < answer_to) \
                    and time.perf_counter() < until:
                newer = self.actions.try_read(newest=True)
                fresh = newer if newer is not None else fresh
        now = time.perf_counter()
        if fresh is not None:
            self.last, self.received_at, self.started = fresh, now, True
        if self.last is None:
            return None
        if now - self.received_at > self.timeout_s:
            self.expired += 1
            self.last = None
            return None
        return self.last

    def forget(self) -> None:
        """Drop the last action (RESET): only a fresh one is sent."""
        self.last = None

    def close(self) -> None:
        self.obs.close_writer()
        self.obs.close()
        self.actions.close()


def forward(obs: np.ndarray) -> tuple[float, float]:
    """The built-in policy: drive straight."""
    return FORWARD_RAD_S, FORWARD_RAD_S


def resolve_policy(spec: str) -> Any:
    """The callable named by ``spec``: ``forward``, ``module:callable`` or
    ``path/to/file.py:callable``, found as a network's agents are
    (:func:`dmxshm.policies.resolve`).

    Raises:
        DmxError: a name that loads nothing callable, with the reason.
    """
    if spec == "forward":
        return forward
    # Here, not at the top: the spine process imports this module (AgentLink),
    # and must not load the policies (their built-ins bring the world's physics).
    from dmxshm import policies

    if spec in policies.BUILTINS:
        raise DmxError(f"spine agent {spec!r} is one of the network's built-in agents; a spine "
                       "agent is 'forward' or your module:callable (one observation record in, "
                       "two wheel speeds out)")
    try:
        return policies.resolve(policies.agent_spec(spec))
    except policies.AgentError as exc:
        raise DmxError(f"spine {exc}") from exc


def run_spine_agent(ports: SpinePorts, spec: str, timeout_s: float) -> AgentResult:
    """Main loop of the agent process."""
    policy = resolve_policy(spec)
    obs_name, actions_name = ports.agent_rings()
    obs_ring = Ring.attach(obs_name, side="reader", role="spine-agent")
    actions = Ring.attach(actions_name, side="writer", role="spine-agent")
    wait_for_start(ports.start, party=party("spine-agent"), role="spine-agent")
    out = np.zeros((), actions.dtype)
    round_trips: list[float] = []
    written_at: float | None = None
    count = 0
    try:
        while True:
            try:
                obs = obs_ring.read(timeout_s)
            except RingClosedError:
                break
            now = time.perf_counter()
            if written_at is not None and obs["t_published"] >= written_at:
                round_trips.append(now - written_at)
                written_at = None
            wheels = policy(obs)
            out["obs_cycle"] = obs["obs_cycle"]
            out["t_obs"] = obs["t_obs"]
            out["t_act"] = time.perf_counter()
            out["wheels_rad_s"] = wheels
            actions.write(out)
            written_at = time.perf_counter()
            count += 1
        return AgentResult(actions=count, round_trips_s=round_trips)
    finally:
        obs_ring.close()
        actions.close()
