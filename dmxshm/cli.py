"""The ``dmxshm`` command line (click). It parses and prints; the library works."""

from __future__ import annotations

import json as _json
import os
import signal
import sys
from typing import Any

import click

from dmxshm import __version__
from dmxshm.errors import DmxError

# Named exit codes.
EXIT_OK = 0
EXIT_ERROR = 1  # a DmxError: the message says what went wrong and what to do
EXIT_USAGE = 2  # click's code for bad options
EXIT_TARGET_MISSED = 3  # a benchmark run with --check missed a figure
EXIT_INTERRUPTED = 130


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@click.group(context_settings={"help_option_names": ["-h", "--help"],
                               "auto_envvar_prefix": "DMXSHM"})
@click.version_option(__version__, prog_name="dmxshm")
def cli() -> None:
    """dmxshm: a Duckiematrix-style robot simulator network over POSIX shared memory.

    Options can also be set from the environment as DMXSHM_<COMMAND>_<OPTION>,
    e.g. DMXSHM_BENCH_IPC_ROUNDS=5000 (not the destructive flags of 'clean').
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info(as_json: bool) -> None:
    """Show what this machine offers the simulator.

    Cores, /dev/shm size and free space, whether real-time scheduling and CPU
    pinning are permitted, the memory-ordering primitive in use, dmxshm
    objects present in /dev/shm, and package versions.
    """
    from dmxshm.sysinfo import collect

    data = collect()
    if as_json:
        click.echo(_json.dumps(data, indent=2))
        return
    shm = data["shm"]
    objs = data["dmxshm_objects"]
    lines = [
        ("python", f"{data['python']} on {data['platform']}"),
        ("cpus", f"{data['cpus_logical']} logical, {data['cpus_physical']} physical"),
        ("memory", _fmt_bytes(data["memory_bytes"])),
        ("/dev/shm", f"{_fmt_bytes(shm['free_bytes'])} free of {_fmt_bytes(shm['total_bytes'])}"),
        ("real-time scheduling", ("yes: " if data["realtime_scheduling"]["permitted"] else "no: ")
         + data["realtime_scheduling"]["detail"]),
        ("cpu pinning", ("yes: " if data["cpu_pinning"]["permitted"] else "no: ")
         + data["cpu_pinning"]["detail"]),
        ("semaphore timeouts", "yes" if data["semaphore_timeout_supported"] else "NO"),
        ("memory ordering", data["memory_ordering"]),
        ("dmxshm objects", f"{objs['count']} ({objs['stale']} stale, "
                           f"{_fmt_bytes(objs['bytes'])}); 'dmxshm clean' removes stale ones"),
    ]
    lines += [(f"  {k}", v or "not installed") for k, v in data["versions"].items()]
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        click.echo(f"{k:<{width}}  {v}")


@cli.command()
@click.option("--dry-run", is_flag=True, allow_from_autoenv=False,
              help="Only list what would be removed.")
@click.option("--all", "remove_all", is_flag=True, allow_from_autoenv=False,
              help="Remove every dmxshm object of this user, even of live processes.")
def clean(dry_run: bool, remove_all: bool) -> None:
    """Remove dmxshm segments and semaphores whose creator process is dead.

    Names carry the creator's pid (dmx-<pid>-<token>-<what>), so objects left
    by a crashed or killed run are found and unlinked. Objects of running
    networks are kept unless --all is given. Only this user's objects are
    touched.
    """
    from dmxshm.shm.clean import scan, sweep

    found = scan()
    targets = sweep(remove_live=remove_all, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for f in targets:
        state = "alive" if f.creator_alive else "dead"
        click.echo(f"{verb} {f.entry.kind:9s} {f.entry.name}  "
                   f"({_fmt_bytes(f.size_bytes)}, creator pid {f.entry.pid} {state})")
    kept = len(found) - len(targets)
    click.echo(f"{verb} {len(targets)} object(s), "
               f"{_fmt_bytes(sum(f.size_bytes for f in targets))}; kept {kept} of live networks")


@cli.group()
def bench() -> None:
    """Benchmarks that measure dmxshm beside its peers in the same run."""


@bench.command("ipc")
@click.option("--quick", is_flag=True, help="Fewer rounds, one repeat: under 30 s.")
@click.option("--rounds", type=click.IntRange(min=10), default=None,
              help="Timed round trips per cell and repeat [default: 20000; --quick 2000].")
@click.option("--repeats", type=click.IntRange(min=1), default=None,
              help="Interleaved passes over all cells [default: 3; --quick 1].")
@click.option("--json", "json", type=click.Path(dir_okay=False, writable=True),
              help="Write the rows as a JSON list to this file.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False, writable=True),
              help="Draw a bar chart PNG (needs the plot extra: matplotlib).")
@click.option("--check", is_flag=True,
              help=f"Exit with code {EXIT_TARGET_MISSED} when a target figure is missed.")
def bench_ipc(quick: bool, rounds: int | None, repeats: int | None, json: str | None,
              plot: str | None, check: bool) -> None:
    """Round trip between two processes: semaphore, ring, pipe and queue.

    Ping-pong with an 8-byte payload and a 160x120x3 uint8 frame, with both
    processes pinned to one core and to two cores. The raw posix_ipc
    semaphore pair (plus a plain shared-memory copy of the payload) is the
    floor; each transport is reported as a ratio to it.
    """
    from dmxshm.bench import ipc

    json_path, plot_path = json, plot
    _check_writable(json_path, plot_path)
    if plot_path:
        from dmxshm.bench.plot import require_matplotlib

        require_matplotlib()
    rounds = rounds or (2000 if quick else 20_000)
    repeats = repeats or (1 if quick else 3)
    ncells = len(ipc.TRANSPORTS) * len(ipc.PAYLOADS) * len(ipc.pinnings()) * repeats
    with click.progressbar(length=ncells, label="bench ipc", file=sys.stderr,
                           show_pos=True, item_show_func=lambda s: s) as bar:
        def progress(label: str) -> None:
            bar.update(1, label)

        rows = ipc.run(rounds=rounds, repeats=repeats, progress=progress,
                       warmup=200 if quick else 500)
    _print_ipc_table(rows)
    if json_path:
        with open(json_path, "w") as fh:
            _json.dump(ipc.as_dicts(rows), fh, indent=1)
        click.echo(f"wrote {json_path}")
    if plot_path:
        from dmxshm.bench.plot import plot_ipc

        plot_ipc(rows, plot_path)
        click.echo(f"wrote {plot_path}")
    missed = [t for t in ipc.targets(rows) if not t[2]]
    click.echo("")
    for desc, value, ok in ipc.targets(rows):
        click.echo(f"target {desc}: {value:.2f} {'reached' if ok else 'MISSED'}")
    if check and missed:
        sys.exit(EXIT_TARGET_MISSED)


def _check_writable(*paths: str | None) -> None:
    """Fail before a long run, not after it, when an output cannot be written."""
    for path in paths:
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise click.BadParameter(f"cannot write {path}: {folder} is not a writable folder")


def _print_ipc_table(rows: list[Any]) -> None:
    click.echo(f"{'transport':<12} {'payload':<8} {'pinning':<8} {'rtt_us median':>13} "
               f"{'p10':>8} {'p90':>8} {'x semaphore':>12}")
    for r in sorted(rows, key=lambda r: (r.pinning, r.payload_bytes)):
        ratio = f"{r.ratio_to_semaphore:.2f}" if r.ratio_to_semaphore is not None else "-"
        click.echo(f"{r.transport:<12} {r.payload:<8} {r.pinning:<8} {r.rtt_us_median:>13.1f} "
                   f"{r.rtt_us_p10:>8.1f} {r.rtt_us_p90:>8.1f} {ratio:>12}")


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM unwinds like Ctrl-C, so every `with Registry()` unlinks its objects.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: runs the click group, turns DmxError into a message."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        cli.main(args=argv, prog_name="dmxshm", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dmxshm: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except DmxError as exc:
        click.echo(f"dmxshm: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo("dmxshm: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
