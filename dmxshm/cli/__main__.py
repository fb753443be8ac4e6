"""``python -m dmxshm.cli``: the ``dmxshm`` command."""

from dmxshm.cli.group import main

main()
