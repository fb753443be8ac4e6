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

    from dmxshm.settings import EPISODE_STEPS

    if "dmxshm/DuckieLane-v0" not in gymnasium.registry:
        # The spec says how long an episode is (wrappers and frameworks read it); the env
        # truncates at the same step itself, so the TimeLimit that gymnasium.make adds never
        # ends an episode earlier. gymnasium.make_vec hands it to the vector entry point as
        # the env's max_episode_steps, unless given one.
        gymnasium.register(id="dmxshm/DuckieLane-v0", entry_point="dmxshm.batch.env:DuckieLaneEnv",
                           vector_entry_point="dmxshm.batch.vector:DmxVectorEnv",
                           max_episode_steps=EPISODE_STEPS)


_register()
