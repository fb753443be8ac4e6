"""RLlib on Ray over dmxshm batches (the rllib extra; skipped without it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402

import dmxshm.rllib  # noqa: E402
from dmxshm.batch.vector import DmxVectorEnv  # noqa: E402
from dmxshm.shm.names import list_entries  # noqa: E402

TIMEOUT_S = 300
RAY = {"include_dashboard": False, "log_to_driver": False,
       "object_store_memory": 150 * 2**20}

# Ray and RLlib warn about their own deprecations while they start.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::PendingDeprecationWarning",
                                        "ignore::ResourceWarning")


def ppo(env_config: dict[str, Any], runners: int, **env_runners: Any) -> PPOConfig:
    return (PPOConfig()
            .environment(dmxshm.rllib.ENV_ID, env_config={"max_episode_steps": 100,
                                                          **env_config})
            .env_runners(num_env_runners=runners, num_envs_per_env_runner=4,
                         gym_env_vectorize_mode="vector_entry_point", **env_runners)
            .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1))


def runner_facts(algo: Any) -> list[tuple[str, int, int, str]]:
    """Per remote EnvRunner: its env's class, batch size and workers, and its node."""
    def facts(runner: Any) -> tuple[str, int, int, str, int]:
        import os

        import ray

        env = runner.env.unwrapped
        return (type(env).__name__, env.num_envs, env.num_workers,
                ray.get_runtime_context().get_node_id(), os.getpid())
    return algo.env_runner_group.foreach_env_runner(facts, local_env_runner=False)


def train_twice(algo: Any) -> list[dict[str, Any]]:
    return [algo.train() for _ in range(2)]


@pytest.fixture
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, **RAY)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.timeout(TIMEOUT_S)
def test_ppo_trains_on_batches_with_the_bare_id(local_ray: None) -> None:
    dmxshm.rllib.register()
    algo = ppo({}, runners=1, num_cpus_per_env_runner=1).build_algo()
    try:
        results = train_twice(algo)
        facts = runner_facts(algo)
        # one batch per EnvRunner, as many workers as the CPUs Ray gave it
        assert [f[:3] for f in facts] == [("DmxVectorEnv", 4, 1)]
        sampled = results[-1]["env_runners"]["num_env_steps_sampled_lifetime"]
        assert sampled >= 2 * 256
    finally:
        algo.stop()
    assert not [e for e in list_entries() if e.pid in {f[4] for f in facts}]


@pytest.mark.timeout(TIMEOUT_S)
def test_env_config_sets_the_workers(local_ray: None) -> None:
    dmxshm.rllib.register()
    algo = ppo({"num_workers": 2}, runners=1, num_cpus_per_env_runner=1).build_algo()
    try:
        assert [f[:3] for f in runner_facts(algo)] == [("DmxVectorEnv", 4, 2)]
    finally:
        algo.stop()


# -- many robots in one world: RLlib's MultiAgentEnv -----------------------------------

MULTI = {"robots": 4, "map": "loop", "max_episode_steps": 100}


@pytest.mark.timeout(TIMEOUT_S)
def test_multi_agent_ppo_shares_one_policy(local_ray: None) -> None:
    dmxshm.rllib.register_multi_agent()
    config = (PPOConfig()
              .environment(dmxshm.rllib.MULTI_ENV_ID, env_config=MULTI)
              .multi_agent(policies={"shared"},
                           policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
              .env_runners(num_env_runners=1, num_envs_per_env_runner=2)
              .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1))
    algo = config.build_algo()
    try:
        results = train_twice(algo)

        def facts(runner: Any) -> tuple[str, list[str], int]:
            import os

            env = runner.env.envs[0].unwrapped
            return type(env).__name__, list(env.possible_agents), os.getpid()
        runners = algo.env_runner_group.foreach_env_runner(facts, local_env_runner=False)
        assert [f[:2] for f in runners] == [
            ("DuckieMultiAgentEnv", [f"duckiebot{i}" for i in range(4)])]
        sampled = results[-1]["env_runners"]
        assert set(sampled["num_module_steps_sampled_lifetime"]) == {"shared"}  # one module
        assert sampled["num_agent_steps_sampled_lifetime"]["duckiebot3"] > 0
        assert sampled["num_env_steps_sampled_lifetime"] >= 2 * 256 / 4
    finally:
        algo.stop()
    assert not [e for e in list_entries() if e.pid in {f[2] for f in runners}]


def _drive(env: Any, steps: int) -> tuple[int, list[tuple[dict[str, Any], ...]]]:
    """Robot 1 curves off the road, the others creep straight on: the steps it took
    robot 1 to end (or ``steps``), and every step's returns."""
    env.reset(seed=0)
    out = []
    for step in range(1, steps + 1):
        actions = {a: ([0.5, 0.35] if a == "duckiebot1" else [0.2, 0.2]) for a in env.agents}
        out.append(env.step(actions))
        if "duckiebot1" not in env.agents or not env.agents:
            return step, out
    return steps, out


def test_the_multi_agent_env_ends_a_world_once() -> None:
    # "__all__" is set when the world's last robots ended, truncated if
    # max_episode_steps cut it, also when one of them left the road in that same step
    # (RLlib's ParallelPettingZooEnv would set neither: its "__all__" wants every
    # robot ending in the step to end the same way).
    free = dmxshm.rllib.multi_agent_env_creator({**MULTI, "max_episode_steps": 0})
    k, steps = _drive(free, 200)
    free.close()
    *_, (obs, _, terms, truncs, _) = steps
    assert terms["duckiebot1"] and not terms["__all__"] and not truncs["__all__"]
    assert set(obs) == {f"duckiebot{i}" for i in range(4)}  # its last step reports it
    for earlier in steps[:-1]:
        assert not earlier[2]["__all__"] and not earlier[3]["__all__"]
    cut = dmxshm.rllib.multi_agent_env_creator({**MULTI, "max_episode_steps": k})
    try:
        ended, steps = _drive(cut, k)
        assert ended == k
        _, _, terms, truncs, _ = steps[-1]
        assert terms["duckiebot1"] and truncs["duckiebot0"] and not cut.agents
        assert truncs["__all__"] and not terms["__all__"]
    finally:
        cut.close()


def test_the_multi_agent_env_imports_ray_only_when_made() -> None:
    import pickle
    import subprocess
    import sys

    code = ("import sys, dmxshm.rllib; assert 'ray' not in sys.modules; "
            "dmxshm.rllib.multi_agent_env_class(); assert 'ray' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT_S)
    env = dmxshm.rllib.DuckieMultiAgentEnv({"robots": 2, "map": "loop"})
    copy = pickle.loads(pickle.dumps(env))  # found by name, as Ray's workers find it
    try:
        assert type(copy) is dmxshm.rllib.DuckieMultiAgentEnv
        a, b = env.reset(seed=3)[0], copy.reset(seed=3)[0]
        assert all((a[k] == b[k]).all() for k in a)
    finally:
        env.close()
        copy.close()


def test_the_creator_alone() -> None:
    single = dmxshm.rllib.env_creator({"max_episode_steps": 5})
    assert not isinstance(single, DmxVectorEnv)
    single.close()
    batch = dmxshm.rllib.env_creator({"num_envs": 2, "max_episode_steps": 5})
    try:
        assert isinstance(batch, DmxVectorEnv) and batch.num_envs == 2
        assert batch.num_workers == min(2, len(os.sched_getaffinity(0)))  # never more
    finally:
        batch.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_two_nodes_one_env_runner_each() -> None:
    # A Ray cluster of two nodes on this machine (Ray's own test cluster): a
    # "slot" resource on each node puts one EnvRunner on each.
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"slot": 1}, "object_store_memory": 100 * 2**20})
    try:
        cluster.add_node(num_cpus=1, resources={"slot": 1}, object_store_memory=100 * 2**20)
        ray.init(address=cluster.address, log_to_driver=False)
        dmxshm.rllib.register()
        algo = ppo({}, runners=2, num_cpus_per_env_runner=1,
                   custom_resources_per_env_runner={"slot": 1}).build_algo()
        try:
            results = train_twice(algo)
            facts = runner_facts(algo)
            assert [f[:3] for f in facts] == [("DmxVectorEnv", 4, 1)] * 2
            assert len({f[3] for f in facts}) == 2  # one on each node
            assert results[-1]["env_runners"]["num_env_steps_sampled_lifetime"] >= 2 * 256
        finally:
            algo.stop()
        assert not [e for e in list_entries() if e.pid in {f[4] for f in facts}]
    finally:
        ray.shutdown()
        cluster.shutdown()
