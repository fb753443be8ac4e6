"""pybullet, imported without the ``pybullet build time: ...`` line it prints.

pybullet's C module prints its build date on stderr when it loads, once in
every process, so each worker of a run would add the line to a command's
output. Every dmxshm module imports pybullet from here: the import runs with
file descriptor 2 pointed at ``/dev/null``. Errors of the import still
raise as usual.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def _quiet_import() -> ModuleType:
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to keep clean
        import pybullet
        return pybullet
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        import pybullet
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return pybullet


pb = _quiet_import()
