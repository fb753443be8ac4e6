"""The import path ``dmxshm.rllib``, kept: the module is :mod:`dmxshm.frameworks.rllib`
(the same module object under both names)."""

import sys

from dmxshm.frameworks import rllib

sys.modules[__name__] = rllib
