"""dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from dmxshm.errors import DmxError

if TYPE_CHECKING:
    from collections.abc import Callable

    from dmxshm.batch.vector import make_vec
    from dmxshm.marl import connect_parallel, parallel_env
    from dmxshm.network.client import NetworkEnded, connect

__version__ = "0.1.0"

__all__ = ["DmxError", "NetworkEnded", "__version__", "connect", "connect_parallel", "make_vec",
           "parallel_env"]

_LAZY = {"make_vec": "dmxshm.batch.vector", "connect": "dmxshm.network.client",
         "NetworkEnded": "dmxshm.network.client", "parallel_env": "dmxshm.marl",
         "connect_parallel": "dmxshm.marl"}
"""Names given here but defined in a module that ``import dmxshm`` does not load (the
batch brings posix_ipc and the workers' machinery): the name is the function itself,
so ``help(dmxshm.make_vec)`` shows its real signature and docstring."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # found once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def _register() -> None:
    import warnings

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
    # v1 is another env beside v0, not its successor: gymnasium's "v0 is out of date"
    # warning (it warns wherever a higher version is registered) says what is not so.
    warnings.filterwarnings("ignore", message=".*DuckieLane-v0 is out of date",
                            category=DeprecationWarning)
    # The gym-duckietown drop-ins sit above the batch: they join its kinds from here.
    from dmxshm.batch import kinds

    kinds.register("duckietown", "dmxshm.duckietown:DuckietownEnv", own_camera=True)
    kinds.register("simulator", "dmxshm.duckietown:Simulator", own_camera=True)
    if "dmxshm/DuckieLane-v1" not in gymnasium.registry:
        gymnasium.register(id="dmxshm/DuckieLane-v1",
                           entry_point="dmxshm.batch.env_v1:DuckieLaneV1Env",
                           vector_entry_point="dmxshm.batch.vector:make_vec_v1",
                           max_episode_steps=EPISODE_STEPS)


class _AfterImport:
    """A finder that calls ``then()`` once the module ``name`` is imported, then leaves.

    A child process (:mod:`dmxshm.proc`) runs a role or a worker, which almost never
    needs gymnasium, and importing it was most of a child's start-up; but a user's
    agent run in a child may still call ``gymnasium.make("dmxshm/DuckieLane-v1")``:
    there the envs are registered once gymnasium is imported.
    """

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, name: str, path: object, target: object = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is not None and hasattr(loader, "exec_module"):
            run_module, then = loader.exec_module, self.then

            def exec_module(module: object) -> None:
                run_module(module)
                then()

            loader.exec_module = exec_module  # this spec's own loader object
        return spec


# A child process's boot (dmxshm.proc.supervisor, dmxshm.proc.program) sets
# sys._dmxshm_child before it imports dmxshm.
if getattr(sys, "_dmxshm_child", False) and "gymnasium" not in sys.modules:
    sys.meta_path.insert(0, _AfterImport("gymnasium", _register))
else:
    _register()
