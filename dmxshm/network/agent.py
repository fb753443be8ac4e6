"""The agent role: runs a policy on observations, answers with wheel commands.

Policies and how they are named: :mod:`dmxshm.network.policies`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.network.plan import Plan
from dmxshm.network.results import AgentResult
from dmxshm.policies import AgentError, as_wheels, load_policy
from dmxshm.proc.outcome import Terminated
from dmxshm.shm.ring import Ring


def run_agent(plan: Plan, index: int) -> AgentResult:
    """Main loop of agent ``index`` (gym or realtime, by the plan's mode)."""
    cfg = plan.config
    role = f"agent-{index}"
    robots = plan.agent_robots[index]
    links = plan.links_of_agent(index)
    policy = load_policy(cfg.agent_ref, robots, cfg.seed)
    obs_rings = [Ring.attach(link.ring, side="reader", role=role, spin_us=plan.spin_us)
                 for link in links]
    cmd_ring = Ring.attach(plan.ring(f"cmd.agent.{index}"), side="writer", role=role,
                           spin_us=plan.spin_us)
    # Where each link's records go in this agent's robot order.
    where = [np.array([robots.index(r) for r in link.robots]) for link in links]
    obs = np.zeros(len(robots), obs_rings[0].dtype["obs"].base)
    cmd = np.zeros((), cmd_ring.dtype)
    counts = AgentResult(steps=0, busy_s=0.0, obs_drops=0)
    try:
        plan.wait_for_start("agent", index)
        _serve(cfg, role, robots, policy, obs_rings, cmd_ring, where, obs, cmd, counts)
        cmd_ring.close_writer()
        stats = [ring.stats() for ring in obs_rings]
        return AgentResult(steps=counts.steps, busy_s=counts.busy_s,
                           obs_drops=sum(s.drops for s in stats))
    except Terminated as exc:  # stopped: what it did still reaches the summary
        exc.partial = AgentResult(steps=counts.steps, busy_s=counts.busy_s,
                                  obs_drops=sum(ring.stats().drops for ring in obs_rings))
        raise
    finally:
        for ring in (*obs_rings, cmd_ring):
            ring.close()


def _serve(cfg: Any, role: str, robots: tuple[int, ...], policy: Any, obs_rings: list[Ring],
           cmd_ring: Ring, where: list[np.ndarray], obs: np.ndarray, cmd: np.ndarray,
           counts: AgentResult) -> None:
    """Answer every observation with a command until the observations end."""
    clock = time.perf_counter
    while True:
        try:
            step = 0
            for ring, idx in zip(obs_rings, where, strict=True):
                slot = ring.read(cfg.wait_timeout_s)
                obs[idx] = slot["obs"]
                step = int(slot["step"])
        except RingClosedError:
            break
        t0 = clock()
        try:
            answer = policy(obs)
        except Exception as exc:
            raise AgentError(f"{role}: the policy {cfg.agent!r} raised "
                             f"{type(exc).__name__}: {exc}") from exc
        counts.busy_s += clock() - t0
        cmd["step"] = step
        cmd["wall_time_s"] = time.monotonic()
        cmd["wheels_rad_s"] = as_wheels(answer, len(robots), role)
        cmd_ring.write(cmd, cfg.wait_timeout_s)
        counts.steps += 1
