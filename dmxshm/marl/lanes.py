"""Many robots in one world: :class:`~dmxshm.batch.lanes.MultiLane`, the world the
multi-agent envs and the multi-agent batch step.

It lives in :mod:`dmxshm.batch.lanes`, below the batch that holds it (a batch worker's
world of R robots); this module keeps the import path the docs have shown.
"""

from __future__ import annotations

from dmxshm.batch.lanes import MultiLane, MultiLaneError, single_space

__all__ = ["MultiLane", "MultiLaneError", "single_space"]
