"""``python -m dmxshm.cli``: the ``dmxshm`` command."""

from dmxshm.cli.group import main

if __name__ == "__main__":  # not when a test collector imports this module
    main()
