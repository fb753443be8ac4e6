"""The one simulation core: a robot's motion, sensing, scoring and observation,
written once over arrays of robots, under every front-end (the network's roles, the
single-robot envs, the multi-robot world, the batch and the realtime replay).

Modules:
    sensing: the registry of sensors, from which every list of sensors derives.
    scoring: lane pose, distance and episodes: one rule, owned by the engine.
"""
