"""A program for :mod:`dmxshm.proc.program`'s tests: ``python -m tests.proc.echo_program``.

It prints one JSON line of what it sees of itself, then waits for SIGTERM
(``--ignore-term``: ignores it, to be killed).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

import psutil

VAR = "DMXSHM_TEST_ECHO"

if __name__ == "__main__":
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(json.dumps({"argv": sys.argv[1:], "var": os.environ.get(VAR),
                      "name": psutil.Process().name(), "ppid": os.getppid(),
                      "path": sys.path, "main": __name__,
                      "gymnasium": "gymnasium" in sys.modules}), flush=True)
    threading.Event().wait()  # until a signal ends it
