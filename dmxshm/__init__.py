"""dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory."""

from dmxshm.errors import DmxError

__version__ = "0.1.0"

__all__ = ["DmxError", "__version__"]
