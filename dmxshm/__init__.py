"""dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory."""

from dmxshm.errors import DmxError

__version__ = "0.1.0"

__all__ = ["DmxError", "__version__", "make_vec"]


def make_vec(*args: object, **kwargs: object):  # noqa: ANN201
    """A shared-memory Gymnasium VectorEnv of DuckieLane worlds (see :mod:`dmxshm.batch.vector`)."""
    from dmxshm.batch.vector import make_vec as _make_vec

    return _make_vec(*args, **kwargs)  # type: ignore[arg-type]


def _register() -> None:
    import gymnasium

    if "dmxshm/DuckieLane-v0" not in gymnasium.registry:
        gymnasium.register(id="dmxshm/DuckieLane-v0", entry_point="dmxshm.batch.env:DuckieLaneEnv",
                           vector_entry_point="dmxshm.batch.vector:DmxVectorEnv")


_register()
