"""The simulation spine: the spine's pipeline in lockstep with an agent.

Gym-style training drives a simulated robot through the same pipeline as
the real spine, one spine cycle per agent step, so that a policy meets the
same observation delay in simulation as on the robot. Each :meth:`cycle`
runs Vulp's four steps with ``sim`` actuation, where a CAN cycle is one
physics step of ``dt = 1/f``:

1. the observation is built from the latest servo replies;
2. the action is the one given to this cycle;
3. the replies of the CAN cycle started in the previous cycle are kept;
4. a CAN cycle starts with the action: one physics step.

So the observation returned by cycle k comes from the physics state after
the CAN cycle of cycle k - 2. After a reset, cycles 0, 1 and 2 must run
before an observation shows the reset state: :meth:`reset` runs exactly
:data:`RESET_CYCLES` cycles with stop commands (Vulp's S1 start cycle, S2
fill replies, S3 fill observation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmxshm.world.state import ROBOT_STATE_DTYPE
from dmxshm.world.world import World

RESET_CYCLES = 3


@dataclass
class _Replies:
    """What the servos replied after one CAN cycle (here: the robots' state)."""

    cycle: int
    state: np.ndarray
    sim_time_s: float


class SimulationSpine:
    """A lockstep spine over a pybullet world, for all its robots.

    Args:
        world: the world, stepped once per CAN cycle; build it with
            ``dt_s = 1 / frequency`` and ``substeps=1`` for one physics step
            per cycle.

    :meth:`cycle` and :meth:`reset` drive the first robot (the others get
    stop commands) and return its record; :meth:`observe` and :meth:`act`,
    the two halves of a cycle, take and return every robot's (the gym-mode
    engine of a network with ``--spine`` publishes between them).
    """

    def __init__(self, world: World) -> None:
        self.world = world
        self.cycle_count = 0
        self._latest = _Replies(-1, world.state().copy(), world.sim_time_s)  # kept in step 3
        self._inflight: _Replies | None = None  # the CAN cycle started in step 4

    @property
    def observed_time_s(self) -> float:
        """Simulated time of the state the next :meth:`observe` returns."""
        return self._latest.sim_time_s

    def observe(self) -> np.ndarray:
        """Step 1 of a cycle: every robot's state, as the replies of the CAN cycle
        started two cycles ago left it."""
        return self._latest.state.copy()

    def act(self, wheels: np.ndarray) -> None:
        """Steps 2-4 of a cycle: keep the replies of the CAN cycle started last cycle,
        then start one with ``wheels`` (``(robots, 2)``, rad/s): one physics step."""
        if self._inflight is not None:  # 3
            self._latest = self._inflight
        self.world.apply_wheel_speeds(np.asarray(wheels, dtype=np.float64))  # 4
        self.world.step()
        self._inflight = _Replies(self.cycle_count, self.world.state().copy(),
                                  self.world.sim_time_s)
        self.cycle_count += 1

    def cycle(self, action: np.ndarray) -> np.ndarray:
        """One spine cycle with ``action`` (left, right wheel speed, rad/s) for the
        first robot.

        Returns:
            the observation built in step 1: the first robot's ROBOT_STATE_DTYPE
            record, as the replies of the CAN cycle started two cycles ago left it.
        """
        obs = self.observe()[0]  # 1
        wheels = np.zeros((self.world.num_robots, 2))
        wheels[0] = action
        self.act(wheels)
        return obs

    def reset(self, seed: int = 0, cycles: int = RESET_CYCLES) -> np.ndarray:
        """Reset the world, then run ``cycles`` stop cycles; returns the first robot's
        last observation.

        With the default, the observation reflects the reset state; with one
        cycle fewer it is stale (it still shows the state before the reset).
        """
        self.world.reset(seed)
        obs = np.zeros((), ROBOT_STATE_DTYPE)
        for _ in range(cycles):
            obs = self.cycle(np.zeros(2))
        return obs

    def stop_cycles(self, cycles: int = RESET_CYCLES) -> None:
        """``cycles`` stop cycles for every robot: after :data:`RESET_CYCLES` of them
        at the start of a run, :meth:`observe` shows the start state."""
        stop = np.zeros((self.world.num_robots, 2))
        for _ in range(cycles):
            self.observe()
            self.act(stop)
