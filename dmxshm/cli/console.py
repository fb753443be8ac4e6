"""What every command of the command line prints with: a live table, progress, the
JSON and plot outputs, byte counts and the notes on refused scheduling. The printers
of runs, logs and replays are :mod:`dmxshm.cli.print_runs`'s; those of benchmarks,
the spine, maps, the machine and ``dmxshm clean`` :mod:`dmxshm.cli.print_bench`'s.

The library returns typed results (:class:`~dmxshm.network.summary.Summary`,
benchmark rows, reports); the CLI hands them here. Nothing here computes a
figure: it formats what it is given.
"""

from __future__ import annotations

import json as _json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    pass


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024  # type: ignore[assignment]
    return str(n)


class LiveTable:
    """The profile table, redrawn in place on a terminal (stderr) at each sample."""

    def __init__(self, label: str, total: int) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.lines = 0

    def progress(self, n: int) -> None:
        self.done = n

    def draw(self, profiler: Any) -> None:
        head = f"{self.label}: {self.done}/{self.total} steps" if self.total else self.label
        text = [head, *profiler.format_table()]
        up = f"\x1b[{self.lines}F" if self.lines else ""
        sys.stderr.write(up + "".join(f"\x1b[2K{line}\n" for line in text))
        sys.stderr.flush()
        self.lines = len(text)

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def realtime_refused(r: dict[str, Any]) -> str | None:
    """The one-line note for a run whose real-time scheduling was refused, from
    ``r``'s ``scheduling`` and ``bus_scheduling`` (``dmxshm run``'s summary)."""
    return scheduling_refused(r.get("scheduling"), r.get("bus_scheduling"))


def scheduling_refused(spine: str | None, bus: str | None = None) -> str | None:
    """The one-line note where the spine's or the CAN bus's real-time scheduling
    (what each got, or why not) was refused; None where neither was."""
    refused = [f"{who} ({what})" for who, what in (("spine", spine), ("CAN bus", bus))
               if what and "refused" in what]
    if not refused:
        return None
    return ("dmxshm: note: real-time scheduling was refused for the " + " and the ".join(refused)
            + "; the run went on under SCHED_OTHER, so its timing figures are those of a "
            "shared scheduler")


def stalls(overruns: dict[str, float] | None, steal_s: float | None) -> str:
    """How the skipped ticks came: in how many late cycles, the longest period,
    and the CPU time the hypervisor took from this machine meanwhile."""
    out = ""
    if overruns and overruns["count"]:
        out += (f" in {overruns['count']} late cycle{'s' * (overruns['count'] != 1)}, "
                f"longest period {overruns['longest_us'] / 1e3:.1f} ms")
    if steal_s and overruns and overruns["count"]:  # as /proc/stat says (some VMs say 0)
        out += f"; host steal {steal_s * 1e3:.0f} ms"
    return out


def write_outputs(data: Any, json_path: str | None, plot_path: str | None,
                   draw: Any) -> None:
    """Write ``data`` as JSON and ``draw(plot_path)`` a figure, where asked."""
    if json_path:
        write_json(data, json_path)
    if plot_path:
        draw(plot_path)
        click.echo(f"wrote {plot_path}")


@contextmanager
def run_progress(label: str, total: int, live_table: bool
                 ) -> Iterator[tuple[Callable[[int], None], Callable[[Any], None] | None]]:
    """``(on_progress, on_profile)`` callbacks for a run: a live profile table on a
    terminal when asked (``live_table``), else a progress bar; both on stderr."""
    if live_table and sys.stderr.isatty():
        live = LiveTable(label, total)
        try:
            yield live.progress, live.draw
        finally:
            live.close()
        return
    bar = Progress(label, total)
    try:
        yield bar.update, None
    finally:
        bar.close()


class Progress:
    """Steps done out of ``total`` on stderr, with an ETA from the steps alone.

    The clock starts at the first step, not when the processes start (their
    start-up is no step's time). On a terminal one line is redrawn in place;
    elsewhere (a log, CI) a line is written every :attr:`every_s` seconds.
    """

    every_s = 5.0
    width = 30

    def __init__(self, label: str, total: int, stream: Any = None) -> None:
        self.label = label
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.first: tuple[float, int] | None = None  # (time, steps) at the first step seen
        self.done = 0
        self.last_line = -math.inf

    def eta_s(self, now: float) -> float | None:
        """Seconds left at the rate since the first step; None before two readings."""
        if self.first is None or self.done <= self.first[1]:
            return None
        rate = (self.done - self.first[1]) / max(now - self.first[0], 1e-9)
        return (self.total - self.done) / rate

    def update(self, done: int) -> None:
        now = time.monotonic()
        self.done = done
        if self.first is None and done > 0:
            self.first = (now, done)
        if self.tty:
            self._write(now, end="\r")
        elif now - self.last_line >= self.every_s:
            self._write(now, end="\n")

    def _write(self, now: float, end: str) -> None:
        eta = self.eta_s(now)
        left = "" if eta is None else f", ETA {int(eta) // 60}:{int(eta) % 60:02d}"
        fill = int(self.width * min(self.done / self.total, 1.0))
        bar = f"[{'#' * fill}{'-' * (self.width - fill)}] " if self.tty else ""
        self.stream.write(f"{self.label} {bar}{self.done}/{self.total} steps "
                          f"({self.done / self.total:.0%}){left}{' ' * 4 if self.tty else ''}"
                          + end)
        self.stream.flush()
        self.last_line = now

    def close(self) -> None:
        """The last reading, on a line of its own."""
        self._write(time.monotonic(), end="\n")


def write_json(data: Any, path: str) -> None:
    with open(path, "w") as fh:
        _json.dump(data, fh, indent=1)
    click.echo(f"wrote {path}")

