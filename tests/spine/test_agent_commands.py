"""The network spine's agent side: the newest command of each agent, per robot, on a
clock the test holds (expiry is counted in cycles of that clock, not waited for)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Ring
from dmxshm.spine.agent_commands import AgentCommands

TIMEOUT_S = 0.5
ROWS = ((0,), (1, 2))  # agent 0 drives robot 0, agent 1 robots 1 and 2


def cmd_dtype(robots: int) -> np.dtype:  # a network agent's command slot (network/plan.py)
    return np.dtype([("step", "<u8"), ("wall_time_s", "<f8"),
                     ("wheels", "<f8", (robots, 2))])


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


Side = tuple[AgentCommands, list[Ring], Clock]


@pytest.fixture
def side(registry: Registry) -> Iterator[Side]:
    writers = [Ring.create(registry, f"cmd.{a}", cmd_dtype(len(rows)), 4, "overwrite")
               for a, rows in enumerate(ROWS)]
    for ring in writers:
        ring.bind("writer")
    clock = Clock()
    agents = AgentCommands([Ring.attach(w.name, side="reader") for w in writers], ROWS,
                           robots=3, timeout_s=TIMEOUT_S, clock=clock)
    yield agents, writers, clock
    agents.close()
    for ring in writers:
        ring.close()


def send(ring: Ring, wall_time_s: float, *wheels: float) -> None:
    slot = np.zeros((), ring.dtype)
    slot["wall_time_s"] = wall_time_s
    slot["wheels"] = np.array(wheels).reshape(-1, 2)
    ring.write(slot)


def test_each_robot_gets_its_agents_newest_command_and_stops_without_one(side: Side) -> None:
    agents, (a0, a1), clock = side
    assert agents.take() is None and not agents.started
    send(a0, 1.0, 1.0, 1.0)
    send(a0, 2.0, 2.0, 2.0)  # newer: the one taken, the older one a drop
    action = agents.take()
    assert action is not None and agents.started
    assert action["wheels_rad_s"].tolist() == [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    assert action["t_act"] == 2.0 and agents.taken.tolist() == [1, 0, 0]
    assert agents.drops() == 1
    send(a1, 3.0, 3.0, 3.0, 4.0, 4.0)
    action = agents.take()
    assert action is not None
    # Agent 0's command is reused (fresh still); t_act is the newest command's.
    assert action["wheels_rad_s"].tolist() == [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    assert action["t_act"] == 3.0 and agents.taken.tolist() == [1, 1, 1]


def test_a_stale_robot_expires_once_and_stops_while_the_others_drive(side: Side) -> None:
    agents, (a0, a1), clock = side
    send(a0, 1.0, 1.0, 1.0)
    send(a1, 1.0, 2.0, 2.0, 2.0, 2.0)
    assert agents.take() is not None
    clock.now += TIMEOUT_S / 2
    send(a1, 2.0, 5.0, 5.0, 5.0, 5.0)
    assert agents.take() is not None
    clock.now += TIMEOUT_S / 2 + 1e-3  # agent 0's command is now too old; agent 1's not
    action = agents.take()
    assert action is not None
    assert action["wheels_rad_s"].tolist() == [[0.0, 0.0], [5.0, 5.0], [5.0, 5.0]]
    assert agents.expired_per_robot.tolist() == [1, 0, 0] and agents.expired == 1
    clock.now += TIMEOUT_S  # all stale: no action (IDLE), each expiry counted once
    assert agents.take() is None and agents.take() is None
    assert agents.expired_per_robot.tolist() == [1, 1, 1]


def test_reset_forgets_the_commands_before_it(side: Side) -> None:
    agents, (a0, _), clock = side
    send(a0, 1.0, 1.0, 1.0)
    assert agents.take() is not None
    agents.forget()
    assert agents.take() is None  # fresh as it was, but from before the reset
    assert agents.expired == 0 and agents.started
    send(a0, 2.0, 1.0, 1.0)
    assert agents.take() is not None
