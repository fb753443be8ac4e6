"""``python -m dmxshm.proc FD NAME``: a child process (see :mod:`dmxshm.proc.child`)."""

import sys

from dmxshm.proc.child import main

sys.exit(main(sys.argv[1:]))
