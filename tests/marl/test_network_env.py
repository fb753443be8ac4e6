"""dmxshm.connect_parallel: a running gym network with --episodes as a PettingZoo
ParallelEnv (PettingZoo's API and seed tests, rewards and ends from the engine, a
collision, resets, the summary's count, and what is refused)."""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import dmxshm
from dmxshm.marl.network_env import NetworkEnvError
from dmxshm.network import ConfigError, Network, NetworkConfig
from dmxshm.network.client import NoNetworkError, ProtocolError
from dmxshm.world.robot import WHEEL_RADIUS_M
from dmxshm.world.world import World

pytestmark = pytest.mark.timeout(180)
_names = itertools.count()


def config(**kw: Any) -> NetworkConfig:
    base: dict[str, Any] = dict(mode="gym", robots=3, agents=0, external_agents=2,
                                steps=100_000, camera=(0, 0), episodes=True,
                                episode_steps=60, wait_timeout_s=20.0,
                                connect_timeout_s=20.0, name=f"marl-net-{next(_names)}")
    return NetworkConfig(**{**base, **kw})


@pytest.fixture
def networks() -> Iterator[contextlib.ExitStack]:
    """Networks a test starts; each is stopped (and unlinked) at the test's end."""
    with contextlib.ExitStack() as stack:
        yield stack


def start(networks: contextlib.ExitStack, **kw: Any) -> str:
    cfg = config(**kw)
    networks.enter_context(Network(cfg))
    return str(cfg.name)


def test_pettingzoo_api_and_seed_tests_pass(networks: contextlib.ExitStack) -> None:
    env = dmxshm.connect_parallel(start(networks))
    try:
        assert env.possible_agents == ["duckiebot0", "duckiebot1", "duckiebot2"]
        parallel_api_test(env, num_cycles=200)
    finally:
        env.close()
    made: list[Any] = []

    def env_fn() -> Any:  # two networks started alike: the same run
        env = dmxshm.connect_parallel(start(networks))
        made.append(env)
        return env

    try:
        parallel_seed_test(env_fn, num_cycles=100)
    finally:
        for env in made:
            env.close()


def test_rewards_truncation_and_resets_come_from_the_engine(networks: contextlib.ExitStack) -> None:
    env = dmxshm.connect_parallel(start(networks, robots=2, external_agents=1,
                                        episode_steps=40))
    try:
        obs, infos = env.reset()
        assert env.agents == ["duckiebot0", "duckiebot1"]
        start_state = env.state()
        total = {a: 0.0 for a in env.agents}
        steps = 0
        while env.agents:
            obs, rewards, terms, truncs, infos = env.step(
                {a: [6.0, 6.0] for a in env.agents})
            steps += 1
            for a, r in rewards.items():
                total[a] += r
        # slow and straight ahead in the lane: truncated after 40 steps, not terminated
        assert steps == 40 and all(truncs.values()) and not any(terms.values())
        # progress along the lane, less the offset penalty: above 0, and never beyond
        # 40 steps at the wheels' 6 rad/s (0.19 m/s for 1.33 s: 0.254 m)
        assert all(0.0 < t <= 40 / 30 * 6.0 * WHEEL_RADIUS_M + 1e-3 for t in total.values()), total
        # the robots are held still while their episodes are over: encoders stand
        ended = env.state()
        with pytest.raises(NetworkEnvError, match="reset"):
            env.step({"duckiebot0": [6.0, 6.0]})
        obs, infos = env.reset()
        again = env.state()
        enc = slice(6, 8)  # imu (6), then the encoders
        assert not np.array_equal(start_state[:, enc], ended[:, enc])
        # back at the start, at rest: the same lane offset as the first start
        lane = slice(9, 12)
        assert np.allclose(again[:, lane], start_state[:, lane], atol=0.02)
        assert env.agents == ["duckiebot0", "duckiebot1"]
        obs, rewards, *_ = env.step({a: [6.0, 6.0] for a in env.agents})
        assert all(r > 0 for r in rewards.values())
    finally:
        env.close()


def _rear_end(networks: contextlib.ExitStack) -> list[tuple[int, dict, dict]]:
    """grid, seed 0: robot 1 is 1.17 m behind robot 0 in its lane; robot 1 drives into
    robot 0, which waits. What each step reported, until the episodes end."""
    env = dmxshm.connect_parallel(start(networks, robots=2, external_agents=1, map="grid",
                                        seed=0, episode_steps=0))
    out = []
    try:
        env.reset()
        for k in range(150):
            _, rewards, terms, _, _ = env.step({"duckiebot0": [0.0, 0.0],
                                                "duckiebot1": [20.0, 20.0]})
            if any(terms.values()):
                out.append((k, rewards, terms))
            if not env.agents:
                break
    finally:
        env.close()
    return out


def test_a_robot_driven_into_another_ends_both_episodes_deterministically(
        networks: contextlib.ExitStack) -> None:
    with World("grid", 2, seed=0) as world:
        (x0, y0, a0), (x1, y1, a1) = world.start_poses
    assert abs(a0 - a1) < 1e-6 and abs(x0 - x1) < 0.05  # one lane, one heading
    assert 1.0 < (x0 - x1) * math.cos(a1) + (y0 - y1) * math.sin(a1) < 1.3  # 1 behind 0
    first = _rear_end(networks)
    assert len(first) == 1, first  # both in the same step
    k, rewards, terms = first[0]
    assert terms == {"duckiebot0": True, "duckiebot1": True}
    assert rewards["duckiebot0"] < -0.9  # the collision penalty, standing still
    assert _rear_end(networks) == first


def test_the_summary_counts_episodes_and_resets() -> None:
    cfg = config(robots=2, external_agents=1, steps=30, episode_steps=10)
    with Network(cfg) as net:
        env = dmxshm.connect_parallel(cfg.name)
        ended = resets = 0
        with contextlib.suppress(dmxshm.NetworkEnded):
            while True:
                env.reset()
                resets += 1
                while env.agents:
                    _, _, terms, truncs, _ = env.step({a: [3.0, 3.0] for a in env.agents})
                    ended += sum(terms.values()) + sum(truncs.values())
        env.close()
        summary = net.run()
    assert summary.episodes == {"ended": ended, "resets": resets}
    assert ended == 4 and resets == 3  # 30 steps: episodes of 10 + the reset steps


def test_what_is_refused(networks: contextlib.ExitStack) -> None:
    with pytest.raises(ConfigError, match="--external-agents"):
        NetworkConfig(mode="gym", episodes=True)
    with pytest.raises(ConfigError, match="gym"):
        NetworkConfig(mode="realtime", agents=0, external_agents=1, episodes=True)
    plain = start(networks, episodes=False, robots=1, external_agents=1)
    with pytest.raises(NetworkEnvError, match="--episodes"):
        dmxshm.connect_parallel(plain)
    with pytest.raises(NoNetworkError, match="no running network"):
        dmxshm.connect_parallel("nobody-by-this-name")
    with dmxshm.connect(plain) as agent:  # a gym reset without episodes: refused here
        agent.observe(timeout_s=20)
        with pytest.raises(ProtocolError, match="--episodes"):
            agent.act(np.zeros((1, 2)), reset=True)
    scored = start(networks, robots=1, external_agents=1)
    with pytest.raises(NetworkEnvError, match="camera"):
        dmxshm.connect_parallel(scored, obs="camera")
    env = dmxshm.connect_parallel(scored)
    try:
        with pytest.raises(NoNetworkError, match="held"):
            dmxshm.connect_parallel(scored)
        env.reset()
        with pytest.raises(NetworkEnvError, match="finite"):
            env.step({"duckiebot0": [float("nan"), 0.0]})
    finally:
        env.close()
    with pytest.raises(NetworkEnvError, match="closed"):
        env.reset()
    # a slot given back while connect_parallel waits for it (timeout_s): taken then
    holder = dmxshm.connect(scored)
    threading.Timer(0.5, holder.close).start()
    later = dmxshm.connect_parallel(scored, timeout_s=20)
    try:
        assert later.possible_agents == ["duckiebot0"]
    finally:
        later.close()
