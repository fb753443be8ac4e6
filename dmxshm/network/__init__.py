"""A simulator network: engine, renderers and agents (and a spine) over shared memory.

* :mod:`~dmxshm.network.config`: :class:`NetworkConfig`, every user choice, checked.
* :mod:`~dmxshm.network.plan`: who serves which robots; the slot layouts;
  :mod:`~dmxshm.network.ports`: the rings, declared.
* :mod:`~dmxshm.network.supervisor`: :class:`Network`, which creates the rings,
  starts the processes through :mod:`dmxshm.proc`, watches and tears down.
* The roles, one module each: :mod:`~dmxshm.network.engine`,
  :mod:`~dmxshm.network.renderer`, :mod:`~dmxshm.network.agent` (and
  :mod:`dmxshm.spine.network_spine`); what each reports:
  :mod:`~dmxshm.network.results`.
* :mod:`dmxshm.policies` (re-exported as ``dmxshm.network.policies``): the built-in agents
  and loading the user's, shared with the spine.
* :mod:`~dmxshm.network.summary`: the figures of a run.
* :func:`run`: one call for a whole run (what ``dmxshm run`` does).

The names below are loaded when first used: a role's process imports its own module
(``dmxshm.network.engine``...), which imports this package, and must not pay for the
supervisor, the summary, the log and the profiler it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dmxshm.network.config import DEFAULT_SENSOR_RATES_HZ, ConfigError, NetworkConfig
    from dmxshm.network.plan import TapSpec
    from dmxshm.network.summary import Summary
    from dmxshm.network.supervisor import (
        CommandsRejectedError,
        Network,
        NetworkError,
        NoCommandsError,
        RobotsIdleError,
        RunFailedError,
        SpineStoppedError,
        run,
    )

_WHERE = {"DEFAULT_SENSOR_RATES_HZ": "config", "ConfigError": "config",
          "NetworkConfig": "config", "TapSpec": "plan", "Summary": "summary",
          **{name: "supervisor" for name in (
              "CommandsRejectedError", "Network", "NetworkError", "NoCommandsError",
              "RobotsIdleError", "RunFailedError", "SpineStoppedError", "run")}}

__all__ = ["DEFAULT_SENSOR_RATES_HZ", "CommandsRejectedError", "ConfigError", "Network",
           "NetworkConfig", "NetworkError", "NoCommandsError", "RobotsIdleError",
           "RunFailedError", "SpineStoppedError", "Summary", "TapSpec", "run"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"dmxshm.network.{_WHERE[name]}"), name)
        globals()[name] = value  # found once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
