"""The ``dmxshm`` command line (click). It parses and prints; the library works.

One module per command or group of commands, each its options, a call of the
library and a call of :mod:`dmxshm.cli.console` that prints the result:

* :mod:`~dmxshm.cli.group`: the group, :func:`main`, the exit codes, and the one
  place where a refusal becomes exit code 2.
* :mod:`~dmxshm.cli.options`, :mod:`~dmxshm.cli.checks`: what commands share
  (parsers, the library's defaults, checks made before the work).
* :mod:`~dmxshm.cli.run` (with :mod:`~dmxshm.cli.run_options`), :mod:`~dmxshm.cli.view`,
  :mod:`~dmxshm.cli.logs` (``log info``, ``replay``), :mod:`~dmxshm.cli.spine`,
  :mod:`~dmxshm.cli.bench`, :mod:`~dmxshm.cli.maps`, :mod:`~dmxshm.cli.profile`,
  :mod:`~dmxshm.cli.info`, :mod:`~dmxshm.cli.clean`, :mod:`~dmxshm.cli.ps`: the
  commands.
"""

from __future__ import annotations

from dmxshm.cli import bench, clean, info, logs, maps, profile, ps, run, spine, view
from dmxshm.cli.group import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TARGET_MISSED,
    EXIT_USAGE,
    cli,
    main,
)

for command in (info.info, clean.clean, run.run, view.view, logs.log_group, logs.replay,
                maps.maps, profile.profile, spine.spine, bench.bench, ps.ps):
    cli.add_command(command)

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TARGET_MISSED", "EXIT_USAGE",
           "cli", "main"]
