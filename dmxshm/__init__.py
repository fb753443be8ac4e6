"""dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory."""

from dmxshm.errors import DmxError

__version__ = "0.1.0"

__all__ = ["DmxError", "__version__"]


def _register() -> None:
    import gymnasium

    if "dmxshm/DuckieLane-v0" not in gymnasium.registry:
        gymnasium.register(id="dmxshm/DuckieLane-v0", entry_point="dmxshm.env:DuckieLaneEnv")


_register()
