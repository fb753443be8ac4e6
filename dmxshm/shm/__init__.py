"""The shared-memory layer: segments, rings, barrier, names and cleanup."""

from dmxshm.shm.barrier import Barrier
from dmxshm.shm.names import list_entries, make_name, new_token
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import Discipline, Ring, RingStats
from dmxshm.shm.segment import Segment

__all__ = [
    "Barrier",
    "Discipline",
    "Registry",
    "Ring",
    "RingStats",
    "Segment",
    "list_entries",
    "make_name",
    "new_token",
]
