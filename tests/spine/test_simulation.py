"""The simulation spine's reset runs exactly the cycles its pipeline needs."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.spine.simulation import RESET_CYCLES, SimulationSpine
from dmxshm.world.world import World

FREQUENCY_HZ = 200.0


@pytest.fixture
def spine() -> SimulationSpine:
    world = World("loop", 1, seed=0, dt_s=1 / FREQUENCY_HZ, substeps=1)
    yield SimulationSpine(world)
    world.close()


def drive_away(spine: SimulationSpine, cycles: int = 200) -> np.ndarray:
    for _ in range(cycles):
        spine.cycle(np.array([15.0, 15.0]))
    return spine.world.state()[0]["pos_m"].copy()


def test_three_reset_cycles_give_a_fresh_observation(spine: SimulationSpine) -> None:
    start = spine.world.state()[0]["pos_m"].copy()
    moved = drive_away(spine)
    assert np.linalg.norm(moved[:2] - start[:2]) > 0.2  # really away from the start
    obs = spine.reset(seed=0)
    assert RESET_CYCLES == 3
    assert np.linalg.norm(obs["pos_m"][:2] - start[:2]) < 0.01  # the reset state


def test_one_cycle_fewer_leaves_the_observation_stale(spine: SimulationSpine) -> None:
    start = spine.world.state()[0]["pos_m"].copy()
    drive_away(spine)
    before_reset = spine.cycle(np.zeros(2))["pos_m"].copy()
    obs = spine.reset(seed=0, cycles=RESET_CYCLES - 1)
    # Still the world before the reset, far from the start pose.
    assert np.linalg.norm(obs["pos_m"][:2] - start[:2]) > 0.2
    assert np.linalg.norm(obs["pos_m"][:2] - before_reset[:2]) < 0.05


def test_an_observation_is_two_cycles_old(spine: SimulationSpine) -> None:
    drive_away(spine, 20)
    truth = []
    seen = []
    for _ in range(10):
        seen.append(spine.cycle(np.array([10.0, 10.0]))["pos_m"][0])
        truth.append(spine.world.state()[0]["pos_m"][0])  # after this cycle's CAN cycle
    # The observation returned by cycle k is the state after the CAN cycle of k - 2.
    assert np.allclose(seen[2:], truth[:-2])


def test_every_robot_observes_two_cycles_late() -> None:
    # observe() and act(), the halves of a cycle the gym-mode engine publishes
    # between: for every robot, the state observed in cycle k is the state
    # after the physics step of cycle k - 2.
    world = World("loop", 2, seed=0, dt_s=1 / FREQUENCY_HZ, substeps=1)
    try:
        spine = SimulationSpine(world)
        spine.stop_cycles()
        seen, truth, times = [], [], []
        wheels = np.array([[10.0, 10.0], [8.0, 12.0]])
        for _ in range(12):
            seen.append(spine.observe()["pos_m"].copy())
            times.append(spine.observed_time_s)
            spine.act(wheels)
            truth.append(world.state()["pos_m"].copy())
        assert np.array_equal(np.array(seen[2:]), np.array(truth[:-2]))
        # the observed state's simulated time: two physics steps behind
        assert np.allclose(np.diff(times), 1 / FREQUENCY_HZ)
        assert times[-1] == pytest.approx(world.sim_time_s - 2 / FREQUENCY_HZ)
    finally:
        world.close()
