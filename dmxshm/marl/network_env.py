"""A running network as a PettingZoo ``ParallelEnv``: a learner drives its robots.

``dmxshm.connect_parallel(name=None)`` joins a gym-mode network started with agent
slots and episodes (``dmxshm run --mode gym --external-agents N --episodes``), claims
every free slot, and returns a :class:`NetworkParallelEnv` whose agents are those
slots' robots (``duckiebot<id>``). The network stays what it is: its renderers, spine,
log, live view and built-in agents run as they would for any outside agent; the env
speaks the slots' ABI (docs/abi.md), whose reward, termination and reset fields the
engine fills and reads with ``--episodes`` (:mod:`dmxshm.network.episodes`)::

    import dmxshm

    env = dmxshm.connect_parallel()             # the only network with free slots
    obs, infos = env.reset()
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
    env.close()

- **Observations**: ``obs="state"`` (the default), per robot ``DuckieLane-v1``'s
  state vector (:data:`~dmxshm.sim.obs.STATE_FIELDS_V1`, 14 floats, made from its
  observation record by :func:`~dmxshm.sim.obs.state_v1`: the vector
  ``dmxshm.parallel_env`` and ``make_vec`` give the same robot in the same state);
  ``"camera"``, its image (a network with a camera);
  ``"both"``, a ``Dict`` of the two. ``info`` has the step, the simulated time, the
  lane offset and the on-road flag.
- **Actions**: ``Box(-limit, limit, (2,))`` in the network's units, left then right:
  wheel speeds in rad/s (limit 27), or PWM duties (limit 1) with ``--action pwm``.
- **Rewards and ends** are the engine's (the rule of :func:`dmxshm.world.scoring.
  lane_score`, as ``dmxshm.parallel_env``'s): a robot whose episode ended leaves
  ``agents`` and stands still in the world until the next ``reset()``.
- **reset()** answers the pending step with a reset request for every robot of the
  env (zero wheels): they go back to their start poses, at rest, and the next
  observation is their first. The world itself is the network's: its seed was given
  when it started (``--seed``), so ``reset(seed=...)`` changes nothing in it (two
  networks started alike run alike: ``pettingzoo.test.parallel_seed_test`` passes);
  the other robots (built-in agents', other clients') go on.
- **state()**: every robot's state vector side by side, ``(robots, 14)`` (the
  network gives its agents no poses).
- A network that ends (its ``--steps`` are done) or dies raises
  :class:`~dmxshm.network.client.NetworkEnded` from the next call; :meth:`close` gives the
  slots back (a gym network then waits ``--connect-timeout`` for another client).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

from dmxshm import settings
from dmxshm.errors import DmxError
from dmxshm.matrix.sensors import TimeOfFlight
from dmxshm.network.client import Connection, NoNetworkError, SlotTakenError, choose_run, claim
from dmxshm.network.runs import RunInfo
from dmxshm.sim.obs import STATE_FIELDS_V1, STATE_HIGH_V1, STATE_LOW_V1, state_v1

AGENT_PREFIX = "duckiebot"
OBS_KINDS = ("state", "camera", "both")


class NetworkEnvError(DmxError, ValueError):
    """A network that cannot be driven as a ParallelEnv: not gym mode, no episodes, no
    camera for a camera observation; the message says what to start instead."""


def connect_parallel(name: str | None = None, *, obs: str = "state",
                     timeout_s: float | None = None,
                     step_timeout_s: float = settings.WAIT_TIMEOUT_S) -> NetworkParallelEnv:
    """A :class:`NetworkParallelEnv` over the free slots of a running network (see the
    module docstring).

    Args:
        name: the network's ``--name``; None: the only running network with slots.
        obs: ``"state"``, ``"camera"`` or ``"both"``.
        timeout_s: how long to wait for such a network and a free slot of it to appear
            (None: not at all).
        step_timeout_s: the longest wait for an observation.

    Raises:
        NoNetworkError: no such network, or none of its slots is free.
        NetworkEnvError: it is not a gym run with ``--episodes``.
    """
    return NetworkParallelEnv(name, obs=obs, timeout_s=timeout_s,
                              step_timeout_s=step_timeout_s)


class NetworkParallelEnv(ParallelEnv[str, Any, np.ndarray]):
    """See the module docstring."""

    metadata: dict[str, Any] = {"render_modes": [], "name": "dmxshm_network_v1",
                                "is_parallelizable": False}

    def __init__(self, name: str | None = None, *, obs: str = "state",
                 timeout_s: float | None = None,
                 step_timeout_s: float = settings.WAIT_TIMEOUT_S) -> None:
        if obs not in OBS_KINDS:
            raise NetworkEnvError(f"obs must be one of {', '.join(OBS_KINDS)}, not {obs!r}")
        self.render_mode = None
        self.obs_kind = obs
        self.step_timeout_s = step_timeout_s
        self._conns: list[Connection] = []
        self._closed = False
        deadline = time.monotonic() + (timeout_s or 0.0)
        while True:  # a network that is starting, slots that are being given back
            try:
                run = choose_run(name)
                self._check(run, obs)
                self._conns = self._claim(run)
                break
            except (NoNetworkError, SlotTakenError):
                if time.monotonic() >= deadline:
                    raise
            time.sleep(settings.LIVENESS_POLL_S)
        self.network = run.name
        # each slot's agents, in its robots' order (the rows of its observations)
        self._agents_of = [[f"{AGENT_PREFIX}{r}" for r in c.robots] for c in self._conns]
        self.possible_agents = [a for names in self._agents_of for a in names]
        self.agents: list[str] = []
        first = self._conns[0]
        self.command_limit = float(first.command_limit)
        names = first.record.names or ()
        width = len(STATE_FIELDS_V1)
        vector = spaces.Box(STATE_LOW_V1, STATE_HIGH_V1, dtype=np.float32)
        self._max_range_m = TimeOfFlight().max_range_m  # the network's range sensor's
        camera = (spaces.Box(0, 255, first.record["camera"].shape, np.uint8)
                  if "camera" in names else None)
        single: spaces.Space[Any] | None = {
            "state": vector, "camera": camera,
            "both": spaces.Dict({"state": vector, "camera": camera})
            if camera is not None else None}[obs]
        assert single is not None  # (a camera observation without a camera: refused)
        self.observation_spaces = {a: single for a in self.possible_agents}
        action = spaces.Box(-self.command_limit, self.command_limit, (2,), np.float32)
        self.action_spaces = {a: action for a in self.possible_agents}
        self.state_space = spaces.Box(np.tile(STATE_LOW_V1, (len(self.possible_agents), 1)),
                                      np.tile(STATE_HIGH_V1, (len(self.possible_agents), 1)),
                                      dtype=np.float32)
        self._records: list[np.ndarray | None] = [None] * len(self._conns)
        self._state = np.zeros((len(self.possible_agents), width), np.float32)

    @staticmethod
    def _check(run: RunInfo, obs: str) -> None:
        if run.mode != "gym" or not run.episodes:
            label = repr(run.name) if run.name else f"pid {run.pid}"
            raise NetworkEnvError(
                f"network {label} is a {run.mode} run without episodes: a ParallelEnv "
                "needs a gym run that scores its slots' robots; start one with "
                "dmxshm run --mode gym --external-agents N --episodes")
        if obs != "state" and run.camera == (0, 0):
            raise NetworkEnvError(f"obs={obs!r} needs a camera, and network "
                                  f"{run.name or run.pid} has none (--camera 0x0)")

    @staticmethod
    def _claim(run: RunInfo) -> list[Connection]:
        """Every free slot of ``run`` (one taken meanwhile by another client is left)."""
        conns: list[Connection] = []
        try:
            for slot in run.free_slots:
                try:
                    conns.append(claim(run, slot.robots, "connect_parallel"))
                except SlotTakenError:
                    continue
        except BaseException:
            for conn in conns:
                conn.close()
            raise
        if not conns:
            raise NoNetworkError(f"every slot of network {run.name or run.pid} is held "
                                 "('dmxshm ps' says by whom)")
        return conns

    # -- PettingZoo's API ---------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Every robot of the env back at its start pose (see the module docstring);
        ``seed`` and ``options`` change nothing in the network's world."""
        self._open()
        for j, conn in enumerate(self._conns):  # a step to answer: the one waited on
            if not conn.answer_due:
                self._observe(j)
        for conn in self._conns:
            conn.act(np.zeros((len(conn.robots), 2)), reset=True)
        for j in range(len(self._conns)):
            self._observe(j)
        self.agents = list(self.possible_agents)
        obs, _, _, _, infos = self._collect(self.agents)
        return obs, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float],
                                                     dict[str, bool], dict[str, bool],
                                                     dict[str, dict[str, Any]]]:
        self._open()
        if not self.agents:
            raise NetworkEnvError("step() with no agent: reset() first (every agent's "
                                  "episode ended, or none began)")
        live = set(self.agents)
        for agent, action in actions.items():
            if agent not in self.possible_agents:
                raise NetworkEnvError(f"unknown agent {agent!r}; the agents are "
                                      f"{', '.join(self.possible_agents)}")
            if not np.isfinite(np.asarray(action, np.float64)).all():
                raise NetworkEnvError(f"{agent}'s action must be finite, not {action!r}")
        for conn, names in zip(self._conns, self._agents_of, strict=True):
            wheels = np.zeros((len(names), 2))
            for i, agent in enumerate(names):
                if agent in live and agent in actions:
                    wheels[i] = np.clip(np.asarray(actions[agent], np.float64).reshape(2),
                                        -self.command_limit, self.command_limit)
            conn.act(wheels)
        for j in range(len(self._conns)):
            self._observe(j)
        before = self.agents
        out = self._collect(before)
        self.agents = [a for a in before if not (out[2][a] or out[3][a])]
        return out

    def state(self) -> np.ndarray:
        """Every robot's state vector, ``(robots, len(fields))`` (see the module
        docstring)."""
        return self._state.copy()

    def render(self) -> None:
        """Nothing: a network is watched through its live view (``dmxshm run --view``)."""
        return None

    def close(self) -> None:
        """Give the slots back (the env cannot be used again)."""
        for conn in self._conns:
            conn.close()
        self._conns = []
        self._closed = True
        self.agents = []

    def _open(self) -> None:
        if self._closed:
            raise NetworkEnvError("this env is closed: its slots were given back; "
                                  "connect_parallel() again")

    # -- the slots ----------------------------------------------------------------------
    def _observe(self, j: int) -> None:
        self._records[j] = self._conns[j].observe(timeout_s=self.step_timeout_s)

    def _collect(self, agents: list[str]) -> tuple[dict[str, Any], dict[str, float],
                                                   dict[str, bool], dict[str, bool],
                                                   dict[str, dict[str, Any]]]:
        """The last observations of ``agents`` with their scores, and the state."""
        obs: dict[str, Any] = {}
        rewards: dict[str, float] = {}
        terms: dict[str, bool] = {}
        truncs: dict[str, bool] = {}
        infos: dict[str, dict[str, Any]] = {}
        wanted = set(agents)
        row = 0
        for conn, records, names in zip(self._conns, self._records, self._agents_of,
                                        strict=True):
            assert records is not None
            scores = conn.scores
            vectors = state_v1(records, self._max_range_m)
            for i, agent in enumerate(names):
                rec = records[i]
                vector = vectors[i]
                self._state[row] = vector
                row += 1
                if agent not in wanted:
                    continue
                if self.obs_kind == "state":
                    obs[agent] = vector
                elif self.obs_kind == "camera":
                    obs[agent] = rec["camera"].copy()
                else:
                    obs[agent] = {"state": vector, "camera": rec["camera"].copy()}
                rewards[agent] = float(scores["reward"][i])
                terms[agent] = bool(scores["terminated"][i])
                truncs[agent] = bool(scores["truncated"][i])
                lane = rec["lane"]
                infos[agent] = {"step": conn.step, "sim_time_s": float(rec["sim_time_s"]),
                                "lane_offset_m": float(lane[0]), "on_road": bool(lane[2])}
        return obs, rewards, terms, truncs, infos

    def __del__(self) -> None:  # a forgotten env gives its slots back
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: nothing to do
            pass
