"""A simulator network: engine, renderers and agents (and a spine) over shared memory.

* :mod:`~dmxshm.network.config`: :class:`NetworkConfig`, every user choice, checked.
* :mod:`~dmxshm.network.plan`: who serves which robots; the rings; the slot layouts.
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
"""

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

__all__ = ["DEFAULT_SENSOR_RATES_HZ", "CommandsRejectedError", "ConfigError", "Network",
           "NetworkConfig", "NetworkError", "NoCommandsError", "RobotsIdleError",
           "RunFailedError", "SpineStoppedError", "Summary", "TapSpec", "run"]
