"""Collection: modules of optional extras are doctested only where their extra is installed;
an old import path kept as an alias of a moved module is not collected (its module is,
under its own file)."""

from __future__ import annotations

import importlib.util

OPTIONAL = {"dmxshm/frameworks/sb3.py": "stable_baselines3"}  # rllib.py imports Ray lazily
ALIASES = ["dmxshm/client.py", "dmxshm/replay.py", "dmxshm/rllib.py", "dmxshm/sb3.py"]
"""Modules that make their name another module's (``sys.modules[__name__] = ...``)."""

collect_ignore = [path for path, module in OPTIONAL.items()
                  if importlib.util.find_spec(module) is None] + ALIASES
