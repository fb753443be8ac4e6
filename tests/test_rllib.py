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
