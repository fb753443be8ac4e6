"""Starting the Duckiematrix bridge for a run (``dmx-duckiematrix``, the program
:mod:`dmxshm.duckiematrix.bridge`), as the live view is started
(:mod:`dmxshm.view.launch`)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from dmxshm import settings
from dmxshm.network.config import NetworkConfig


@dataclass(frozen=True)
class Served:
    """A bridge that listens: its URL and its process id."""

    url: str
    pid: int


@contextlib.contextmanager
def bridge_process(config: NetworkConfig, names: list[str], host: str, port: int,
                   allow_remote: bool, stats: str | None = None) -> Iterator[Served]:
    """The bridge for the run of ``config`` (named: the bridge claims its slots by the
    run's name); yields once every topic exists and it listens; stops it at the end
    of the block. ``stats``: where it writes what it did, as JSON, at its end."""
    from dmxshm.proc import program
    from dmxshm.view.launch import relay, wait_for_url

    args = ["--network", str(config.name), "--names", ",".join(names), "--map", config.map,
            "--host", host, "--port", str(port), "--exit-with", str(os.getpid()),
            "--connect-timeout", str(settings.START_TIMEOUT_S)]
    args += ["--allow-remote"] if allow_remote else []
    args += ["--stats", stats] if stats else []
    proc = program.start("duckiematrix", "dmxshm.duckiematrix.bridge", args)
    try:
        url = wait_for_url(proc, "the Duckiematrix bridge")
        threading.Thread(target=relay, args=(proc.stderr,), daemon=True,
                         name="relay-duckiematrix").start()
        yield Served(url, proc.pid)
    finally:
        program.stop(proc)
