"""The floor of a network step: raw semaphore handoffs along the same paths.

``dmxshm bench network`` compares the framework's cost per step with the
cost of the handoffs alone: the same processes post and wait on plain
posix_ipc semaphores along the same topology as a step (engine to each
renderer, each renderer to each of its agents, each agent back to the
engine), with no payload and no bookkeeping, and the same wait policy as the
run's rings: each wait first polls as long as a ring of that run would
(:attr:`dmxshm.network.plan.Plan.spin_us`, else the ring's default), then
sleeps on the semaphore; a floor that always slept would be a slower
baseline than the run it bounds. Run right after start-up, in the same
processes, pinned the same way: :class:`FloorRounds` is the tap that
``dmxshm bench network`` gives its networks (``Network(config,
taps=[FloorRounds(2000)])``: it runs at the taps' ``start`` point, right
after the start gate); a plain run has none.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import posix_ipc

from dmxshm import settings
from dmxshm.network.plan import Plan
from dmxshm.network.taps import Tap
from dmxshm.shm.registry import Registry
from dmxshm.shm.waiting import acquire_raw as sleep_on
from dmxshm.shm.waiting import spin_until

FLOOR_TIMEOUT_S = 10.0


def floor_names(plan: Plan) -> dict[str, list[str]]:
    """Semaphore names per role (suffixes of the network's ring names)."""
    return {
        "state": [f"{n}.floor" for n in plan.indexed("state.renderer")],
        "obs": [f"{link.ring}.floor" for link in plan.links],
        "cmd": [f"{n}.floor" for n in plan.indexed("cmd.agent")],
    }


@dataclass(frozen=True)
class FloorRounds:
    """A network tap (:class:`~dmxshm.network.plan.TapSpec`) that times ``rounds`` floor
    rounds at the start (see the module docstring).

    The engine's tap reports the mean seconds per round: ``Summary.taps["floor"]``.
    """

    rounds: int
    name: str = "floor"

    def prepare(self, plan: Plan, registry: Registry) -> None:
        """Create the floor's semaphores (the supervisor owns and unlinks them)."""
        for names in floor_names(plan).values():
            for name in names:
                registry.create_semaphore(name, 0).close()

    def __call__(self, plan: Plan, role: str, index: int) -> Tap | None:
        if role not in ("engine", "renderer", "agent"):
            return None
        return _FloorTap(plan, self.rounds, role, index)


class _FloorTap(Tap):
    """One process's part of the floor rounds, done at the taps' start."""

    def __init__(self, plan: Plan, rounds: int, role: str, index: int) -> None:
        self.plan, self.rounds, self.role, self.index = plan, rounds, role, index
        self.seconds: float | None = None

    def start(self) -> None:
        self.seconds = run_floor(self.plan, self.rounds, self.role, self.index)

    def result(self) -> float | None:
        return self.seconds


def run_floor(plan: Plan, rounds: int, role: str, index: int) -> float | None:
    """Do this process's part of ``rounds`` floor rounds.

    Returns:
        for the engine, the mean seconds per round; None for the others.
    """
    if rounds <= 0:
        return None
    names = floor_names(plan)
    sems = {k: [posix_ipc.Semaphore(n) for n in v] for k, v in names.items()}
    spin_us = plan.spin_us if plan.spin_us is not None else settings.spin_us(
        settings.RING_SPIN_US)
    spin_s = spin_us / 1e6 if posix_ipc.SEMAPHORE_VALUE_SUPPORTED else 0.0

    def acquire_raw(sem: posix_ipc.Semaphore, timeout_s: float, what: str) -> None:
        if spin_s:  # as a ring of the run waits: poll, then sleep
            spin_until(lambda: sem.value > 0, spin_s)
        sleep_on(sem, timeout_s, what)

    try:
        if role == "engine":
            t0 = time.perf_counter()
            for _ in range(rounds):
                for sem in sems["state"]:
                    sem.release()
                for sem in sems["cmd"]:
                    acquire_raw(sem, FLOOR_TIMEOUT_S, "an agent's floor handoff")
            return (time.perf_counter() - t0) / rounds
        if role == "renderer":
            mine = [sems["obs"][i] for i, link in enumerate(plan.links) if link.renderer == index]
            for _ in range(rounds):
                acquire_raw(sems["state"][index], FLOOR_TIMEOUT_S, "the engine's floor handoff")
                for sem in mine:
                    sem.release()
            return None
        mine = [sems["obs"][i] for i, link in enumerate(plan.links) if link.agent == index]
        for _ in range(rounds):
            for sem in mine:
                acquire_raw(sem, FLOOR_TIMEOUT_S, "a renderer's floor handoff")
            sems["cmd"][index].release()
        return None
    finally:
        for group in sems.values():
            for sem in group:
                sem.close()
