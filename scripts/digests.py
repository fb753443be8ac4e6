"""A table of trajectory digests: the behaviour a refactoring must keep bit for bit.

    python scripts/digests.py                 # print the table
    python scripts/digests.py --json d.json   # and write it
    python scripts/digests.py --compare d.json   # exit 1 if any digest differs

Gym-mode networks with 1, 2 and 4 robots, 1-2 renderers, 1-3 agents, the
random and lane-follow policies, camera on and off; and ``make_vec``
observations and rewards with state and camera observations, 1 and 2
workers, over steps with autoresets. Every digest is a SHA-256 of what the
run produced; the same code, seed and configuration give the same digest.

A network's row holds its ``trajectory_digest`` (everything the run produced:
states, commands, samples) and its ``pose_digest`` (poses only: schema
version 1's ``trajectory_digest``). A table written before the full digest
(one string per row) is compared on what it has: a network's string with the
``pose_digest``, a ``make_vec`` row's with its digest. A ``make_vec`` row's
``digest`` is this script's hash of what the batch returned (observations,
rewards, flags), its ``trajectory_digest`` the batch's own
(``DmxVectorEnv.trajectory_digest``: states, actions and returns per env).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

# (robots, renderers, agents, policy, camera)
NETWORKS = [
    (1, 1, 1, "lane-follow", (0, 0)),
    (1, 1, 1, "random", (64, 48)),
    (2, 1, 1, "lane-follow", (64, 48)),
    (2, 2, 2, "random", (0, 0)),
    (2, 1, 2, "random", (64, 48)),
    (4, 1, 1, "lane-follow", (0, 0)),
    (4, 2, 3, "random", (64, 48)),
    (4, 2, 1, "lane-follow", (64, 48)),
]
# (obs, camera, workers)
BATCHES = [("state", (160, 120), 1), ("state", (160, 120), 2),
           ("camera", (32, 24), 1), ("camera", (32, 24), 2)]
STEPS = 120
BATCH_ENVS = 4
BATCH_STEPS = 150


def network_digest(robots: int, renderers: int, agents: int, policy: str,
                   camera: tuple[int, int]) -> dict[str, str]:
    from dmxshm.network import Network

    try:
        from dmxshm.network import NetworkConfig
    except ImportError:  # the layout before the process layer
        from dmxshm.plan import NetworkConfig  # type: ignore[no-redef]
    import dataclasses

    # The table pins noise-free runs (sensor noise, on by default since issue 29, is
    # keyed by the seed and tested on its own): a commit before noise had none.
    fields = {f.name for f in dataclasses.fields(NetworkConfig)}
    quiet = {"noise": False} if "noise" in fields else {}
    # The table pins tiny's images (the default renderer before the batch renderer).
    quiet.update({"renderer": "tiny"} if "renderer" in fields else {})
    cfg = NetworkConfig(robots=robots, renderers=renderers, agents=agents, agent=policy,
                        camera=camera, steps=STEPS, seed=7, **quiet)
    with Network(cfg) as net:
        s = net.run()
    # Before the full digest, trajectory_digest was the pose digest.
    return {"trajectory_digest": s.trajectory_digest,
            "pose_digest": getattr(s, "pose_digest", s.trajectory_digest)}


def batch_digest(obs: str, camera: tuple[int, int], workers: int) -> dict[str, str]:
    import dmxshm

    envs = dmxshm.make_vec(BATCH_ENVS, num_workers=workers, obs=obs, camera=camera, seed=3)
    digest = hashlib.sha256()
    rng = np.random.default_rng(0)
    try:
        first, _ = envs.reset()
        digest.update(np.ascontiguousarray(first).tobytes())
        for _ in range(BATCH_STEPS):
            actions = rng.uniform(-1, 1, size=(BATCH_ENVS, 2)).astype(np.float32)
            o, r, term, trunc, _ = envs.step(actions)
            for a in (o, r, term, trunc):
                digest.update(np.ascontiguousarray(a).tobytes())
        # The batch's own digest (everything its envs did), where this version has it.
        own = getattr(envs, "trajectory_digest", None)
    finally:
        envs.close()
    return {"digest": digest.hexdigest(), **({"trajectory_digest": own} if own else {})}


def _as_row(value: str | dict[str, str], key: str) -> dict[str, str]:
    """A row of a table of any version (a string: the pose digest, or a batch's)."""
    if isinstance(value, dict):
        return value
    return {"digest" if key.startswith("make_vec") else "pose_digest": value}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the table to this file")
    parser.add_argument("--compare", help="a table written before: exit 1 on any difference")
    args = parser.parse_args()
    table: dict[str, dict[str, str]] = {}
    for robots, rend, agents, policy, camera in NETWORKS:
        key = (f"gym robots={robots} renderers={rend} agents={agents} {policy} "
               f"camera={camera[0]}x{camera[1]}")
        table[key] = network_digest(robots, rend, agents, policy, camera)
        print(f"{table[key]['trajectory_digest'][:16]}  pose {table[key]['pose_digest'][:16]}"
              f"  {key}", flush=True)
    for obs, camera, workers in BATCHES:
        key = f"make_vec envs={BATCH_ENVS} obs={obs} camera={camera[0]}x{camera[1]} " \
              f"workers={workers}"
        table[key] = batch_digest(obs, camera, workers)
        print(f"{table[key]['digest'][:16]}  {' ' * 21}  {key}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(table, fh, indent=1)
    if args.compare:
        with open(args.compare) as fh:
            before = json.load(fh)
        differ = []
        for k, value in before.items():
            then, now = _as_row(value, k), table.get(k, {})
            differ += [f"{k} ({name})" for name in then if then[name] != now.get(name)]
        print(f"\n{len(before) - len(differ)} of {len(before)} digests equal"
              + (": differ: " + "; ".join(differ) if differ else ""))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
