"""The import path ``dmxshm.sb3``, kept: the module is :mod:`dmxshm.frameworks.sb3`
(the same module object under both names)."""

import sys

from dmxshm.frameworks import sb3

sys.modules[__name__] = sb3
