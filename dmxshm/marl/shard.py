"""A batch worker's shard of multi-robot worlds: ``make_vec(n, robots_per_world=R)``.

:class:`WorldShard` is :class:`~dmxshm.batch.worker.Shard` for rows that are robots: the
rows ``lo`` to ``hi - 1`` are the robots of whole :class:`~dmxshm.marl.lanes.MultiLane`
worlds, world ``u`` of the shard holding the rows ``lo + u*R`` to ``lo + u*R + R - 1``.
A world steps as one (the parent sends whole worlds), with the same shared arrays and
the same two paths (a whole-shard command, or the worlds the parent sent).

Per row: the robot's reward and flags as :class:`MultiLane` gives them (a stopped row,
whose robot ended while its world goes on: reward 0, both flags False,
``info:active`` False). Per world: autoreset in the batch's mode when every robot ended
or at truncation (``NEXT_STEP``: at the world's next step, every row's action ignored;
``SAME_STEP``: in the step that ended it; ``DISABLED``: the parent refuses to step it),
a reset seeded by its first row's seed, and one digest of everything it did, published
in each of its rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmxshm.batch.worker import NEXT_STEP, RENDER, RESET, SAME_STEP, Shard
from dmxshm.marl.lanes import MultiLane


class WorldShard(Shard):
    """The worlds of one worker, ``robots`` rows each (see the module docstring)."""

    def __init__(self, index: int, lo: int, hi: int, v: dict[str, np.ndarray],
                 worlds: list[MultiLane], robots: int, ready: Any,
                 mode: str = NEXT_STEP, done: Any = None) -> None:
        super().__init__(index, lo, hi, v, worlds, None, ready, mode, done)
        self.robots = robots

    def run(self, command: int) -> None:
        """One synchronous command for the whole shard (no ``RENDER``: refused by the
        parent)."""
        if command == RENDER:
            return
        rows = list(range(self.hi - self.lo))
        self.step_envs(rows, [command] * len(rows))

    def step_envs(self, js: list[int], commands: list[int]) -> None:
        """Reset or step the worlds of the rows ``lo + j`` (whole worlds; a world's rows
        share one command), and write their rows."""
        r = self.robots
        command_of: dict[int, int] = {}
        for j, command in zip(js, commands, strict=True):
            command_of.setdefault(j // r, command)
        for u, command in command_of.items():
            self._world(u, command)

    def _world(self, u: int, command: int) -> None:
        v, r, world = self.v, self.robots, self.envs[u]
        first = self.lo + u * r
        rows = slice(first, first + r)
        actions: np.ndarray | None = None
        final: np.ndarray | None = None
        step_obs: Any = None
        step_infos: list[dict[str, Any]] = []
        if command == RESET or self.pending_reset[u]:
            seed = int(v["seeds"][first]) if command == RESET else -1
            obs, infos = world.reset(seed=None if seed < 0 else seed)
            self.pending_reset[u] = False
            rewards = np.zeros(r)
            terminated = np.zeros(r, bool)
            truncated = np.zeros(r, bool)
            stepped = np.zeros(r, bool)
            reset = True
        else:
            actions = v["actions"][rows].copy()
            obs, rewards, terminated, truncated, infos = world.step(actions)
            stepped = np.array([info["active"] for info in infos])
            reset = False
            if self.mode == SAME_STEP:
                # as SyncVectorEnv: a row whose episode ended in this step has its
                # last observation and info in final_obs and final_info, and a world
                # whose robots all ended resets in the same step
                final = terminated | truncated
                step_obs, step_infos = obs, infos
                if world.done:
                    obs, infos = world.reset()
                    reset = True
            elif self.mode == NEXT_STEP:
                self.pending_reset[u] = world.done
        if final is not None and final.any():
            self._put_final(first, final, step_obs, step_infos)
        self.put(rows, obs)
        v["rewards"][rows] = rewards
        v["terminated"][rows] = terminated
        v["truncated"][rows] = truncated
        v["info:lane_offset_m"][rows] = [info["lane_offset_m"] for info in infos]
        v["info:on_road"][rows] = [info["on_road"] for info in infos]
        shown = stepped & (not reset)  # a reset's info has no progress, nor a stopped row's
        v["info:progress_m"][rows] = [info.get("progress_m", 0.0) if s else 0.0
                                      for info, s in zip(infos, shown, strict=True)]
        v["info:_progress_m"][rows] = shown
        # every row of a world has the others, also at a reset (active and collided: as below)
        for key in ("lane_offset_m", "on_road", "active", "collided"):
            v[f"info:_{key}"][rows] = True
        # active: the row acted in this step (a stopped row's False, also where its
        # world resets in the same step); after a reset alone, every row
        v["info:active"][rows] = stepped if actions is not None else True
        # collided: a contact that began in this step, also where the world reset in it
        v["info:collided"][rows] = [bool(info.get("collided", False))
                                    for info in (step_infos or infos)]
        if self.mode == SAME_STEP:
            v["final"][rows] = final if final is not None else False
        if self.rand_names:
            v["rand:_reset"][rows] = reset
            if reset:
                v["rand"][rows] = [[info["randomization"][p] for p in self.rand_names]
                                   for info in infos]
        self._hash(u, rows, actions, rewards, terminated, truncated, final)

    def _put_final(self, first: int, final: np.ndarray, obs: Any,
                   infos: list[dict[str, Any]]) -> None:
        """The last observation and info of each robot whose episode ended (``final``)."""
        for i in np.flatnonzero(final).tolist():
            row = {k: x[i] for k, x in obs.items()} if isinstance(obs, dict) else obs[i]
            self.put_final(first + i, row, infos[i])

    def _hash(self, u: int, rows: slice, actions: np.ndarray | None, rewards: np.ndarray,
              terminated: np.ndarray, truncated: np.ndarray, final: np.ndarray | None
              ) -> None:
        """Add what world ``u`` just did to its digest and publish it in each of its rows:
        the actions (none for a reset), its state in full, every row's observation (and
        an ended episode's last), rewards and flags."""
        h, v = self.hashes[u], self.v
        h.update(b"r" if actions is None else b"s" + actions.tobytes())
        h.update(self.envs[u].world.state(copy=False).tobytes())
        for key in self.keys:
            h.update(v[key][rows].tobytes())
            if final is not None and final.any():
                h.update(v["final:" + key][rows][final].tobytes())
        h.update(np.asarray(rewards, np.float64).tobytes())
        h.update(np.asarray(terminated, bool).tobytes() + np.asarray(truncated, bool).tobytes())
        v["digests"][rows] = np.frombuffer(h.digest(), np.uint8)
