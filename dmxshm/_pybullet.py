"""pybullet, imported without the ``pybullet build time: ...`` line it prints.

pybullet's C module prints its build date on stderr when it loads, once in
every process, so each worker of a run would add the line to a command's
output. Every dmxshm module imports pybullet from here: the import runs with
file descriptor 2 pointed at a temporary file, and everything it caught but
that line is written on to stderr. Errors of the import still raise as
usual. (Other threads writing to stderr during the import, which takes
milliseconds, are delayed the same way.)
"""

from __future__ import annotations

import os
import sys
import tempfile
from types import ModuleType

BUILD_LINE = b"pybullet build time:"


def _quiet_import() -> ModuleType:
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    if sys.stderr is not None:
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr: nothing to keep clean
        import pybullet
        return pybullet
    with tempfile.TemporaryFile() as capture:
        try:
            os.dup2(capture.fileno(), 2)
            import pybullet
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            # Whatever else the import wrote (a warning, say) goes on to stderr.
            capture.seek(0)
            rest = [line for line in capture.read().splitlines(keepends=True)
                    if not line.startswith(BUILD_LINE)]
            if rest:
                os.write(2, b"".join(rest))
    return pybullet


pb = _quiet_import()
