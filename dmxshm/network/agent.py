"""The agent role: runs a policy on observations, answers with wheel commands.

Policies and how they are named: :mod:`dmxshm.network.policies`.
"""

from __future__ import annotations

import time

import numpy as np

from dmxshm.errors import RingClosedError
from dmxshm.network.plan import Plan
from dmxshm.network.results import AgentResult
from dmxshm.network.role import Role, run_role
from dmxshm.policies import AgentError, as_wheels, load_policy


class Agent(Role[AgentResult]):
    """Agent ``index``: its loop answers every observation with a command."""

    kind = "agent"

    def attach(self) -> None:
        cfg, plan, index = self.cfg, self.plan, self.index
        self.robots = robots = plan.agent_robots[index]
        links = plan.links_of_agent(index)
        self.policy = load_policy(cfg.agent_ref, robots, cfg.seed)
        self.obs_rings = [self.ring(link.ring, "reader") for link in links]
        self.cmd_ring = self.port(f"cmd.agent.{index}", "writer")
        # Where each link's records go in this agent's robot order.
        self.where = [np.array([robots.index(r) for r in link.robots]) for link in links]
        self.counts = AgentResult(steps=0, busy_s=0.0, obs_drops=0)
        # Policies answer in rad/s; a PWM run's agents send the duties Duckietown's
        # kinematics would (the motor model's inverse); a replay's answers are duties.
        self.to_units = (cfg.motor.duty if cfg.action == "pwm" and not getattr(
            self.policy, "answers_in_run_units", False) else None)
        self.tap(())

    def loop(self) -> AgentResult:
        """Answer every observation with a command until the observations end."""
        cfg, counts, policy = self.cfg, self.counts, self.policy
        clock = time.perf_counter
        sources = list(zip(self.obs_rings, self.where, strict=True))
        obs = np.zeros(len(self.robots), self.obs_rings[0].dtype["obs"].base)
        cmd = np.zeros((), self.cmd_ring.dtype)
        n = len(self.robots)
        while True:
            try:
                step = 0
                for ring, idx in sources:
                    slot = ring.read(cfg.wait_timeout_s)
                    obs[idx] = slot["obs"]
                    step = int(slot["step"])
            except RingClosedError:
                break
            t0 = clock()
            try:
                answer = policy(obs)
            except Exception as exc:
                raise AgentError(f"{self.name}: the policy {cfg.agent!r} raised "
                                 f"{type(exc).__name__}: {exc}") from exc
            counts.busy_s += clock() - t0
            cmd["step"] = step
            cmd["wall_time_s"] = cmd["sent_time_s"] = time.monotonic()
            wheels = as_wheels(answer, n, self.name)
            cmd["wheels"] = wheels if self.to_units is None else self.to_units(wheels)
            self.cmd_ring.write(cmd, cfg.wait_timeout_s)
            counts.steps += 1
        return counts

    def partial(self, result: AgentResult | None) -> AgentResult:
        return self._with_drops(result if result is not None else self.counts)

    def finish(self, result: AgentResult) -> AgentResult:
        self.cmd_ring.close_writer()
        return self._with_drops(result)

    def _with_drops(self, result: AgentResult) -> AgentResult:
        result.obs_drops = sum(ring.stats().drops for ring in self.obs_rings)
        return result


def run_agent(plan: Plan, index: int) -> AgentResult:
    """Main function of agent ``index`` (gym or realtime, by the plan's mode)."""
    return run_role(Agent(plan, index))
