"""Collection: modules of optional extras are doctested only where their extra is installed."""

from __future__ import annotations

import importlib.util

OPTIONAL = {"dmxshm/sb3.py": "stable_baselines3"}  # rllib.py imports Ray lazily

collect_ignore = [path for path, module in OPTIONAL.items()
                  if importlib.util.find_spec(module) is None]
