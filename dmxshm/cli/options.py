"""What several commands share: option parsers, the library's defaults, common options.

An option's default is the library's, read from where it is defined (a
config dataclass's field, a function's keyword, :mod:`dmxshm.settings`), so
that the CLI and Python never disagree.

Example:
    >>> from dmxshm.spine.config import SpineConfig
    >>> field_default(SpineConfig, "schedule")
    'after-action'
    >>> fmt_wh((160, 120))
    '160x120'
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from dmxshm import settings
from dmxshm.cli.group import EXIT_TARGET_MISSED

F = TypeVar("F", bound=Callable[..., Any])

CAMERA_PRESETS = {"duckiebot": (640, 480)}
"""Named camera sizes: a Duckiebot's camera delivers 640x480 (at 30 Hz)."""


def field_default(cls: type, name: str) -> Any:
    """The default of field ``name`` of the dataclass ``cls``.

    Raises:
        KeyError: ``cls`` has no such field, or it has no default.
    """
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
    raise KeyError(f"{cls.__name__}.{name} has no default")


def arg_default(func: Callable[..., Any], name: str) -> Any:
    """The default of keyword ``name`` of ``func``.

    Raises:
        KeyError: ``func`` has no such keyword with a default.
    """
    default = inspect.signature(func).parameters[name].default
    if default is inspect.Parameter.empty:
        raise KeyError(f"{func.__name__}({name}) has no default")
    return default


def fmt_wh(wh: tuple[int, int]) -> str:
    """``(160, 120)`` as ``160x120``, as ``--camera`` takes it."""
    return f"{wh[0]}x{wh[1]}"


def parse_wh(ctx: Any, param: Any, value: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` or a preset's name (:data:`CAMERA_PRESETS`)."""
    if value.lower() in CAMERA_PRESETS:
        return CAMERA_PRESETS[value.lower()]
    try:
        w, h = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"{value!r}: use WIDTHxHEIGHT, e.g. 160x120, 0x0, or a "
                                 f"preset ({', '.join(CAMERA_PRESETS)})") from None
    return w, h


def parse_camera(ctx: Any, param: Any, value: str) -> tuple[int, int]:
    """``--camera``: :func:`parse_wh`; a preset's camera model (``duckiebot``: the lens
    camera) goes in ``ctx.meta["camera_model"]``."""
    wh = parse_wh(ctx, param, value)
    if ctx is not None:
        ctx.meta["camera_model"] = "duckiebot" if value.lower() == "duckiebot" else "pinhole"
    return wh


def parse_pin(ctx: Any, param: Any, value: str | None) -> dict[str, int] | str:
    """``ROLE=CPU,...`` or ``auto``."""
    if (value or "").strip() == "auto":
        return "auto"
    pins: dict[str, int] = {}
    for item in filter(None, (value or "").split(",")):
        role, sep, cpu = item.partition("=")
        if not sep or not cpu.strip().isdigit():
            raise click.BadParameter(f"{item!r}: use ROLE=CPU, e.g. engine=0,renderer-0=1, "
                                     "or auto")
        pins[role.strip()] = int(cpu)
    return pins


def parse_rates(ctx: Any, param: Any, value: str | None) -> dict[str, float]:
    """``SENSOR=HZ,...``."""
    rates: dict[str, float] = {}
    for item in filter(None, (value or "").split(",")):
        name, sep, hz = item.partition("=")
        try:
            rates[name.strip()] = float(hz)
        except ValueError:
            raise click.BadParameter(f"{item!r}: use SENSOR=HZ, e.g. imu=200") from None
        if not sep:
            raise click.BadParameter(f"{item!r}: use SENSOR=HZ, e.g. imu=200")
    return rates


def json_file_option(help: str, writable: bool = False) -> Callable[[F], F]:
    """``--json PATH``: write the command's figures there."""
    return click.option("--json", "json", type=click.Path(dir_okay=False, writable=writable),
                        help=help)


def plot_option(help: str, writable: bool = False) -> Callable[[F], F]:
    """``--plot PATH``: draw the figures as a PNG (needs matplotlib)."""
    return click.option("--plot", "plot", type=click.Path(dir_okay=False, writable=writable),
                        help=help)


check_option = click.option(
    "--check", is_flag=True,
    help="Also check the project's target figures (measured on its 2-core "
         f"development machine): print them, exit {EXIT_TARGET_MISSED} if one is missed.")
"""``--check``: a benchmark's target figures, exit 3 on a miss."""


def profile_options(help: str, interval_s: float) -> Callable[[F], F]:
    """``--profile`` and ``--profile-interval`` (default ``interval_s``)."""
    def apply(f: F) -> F:
        f = click.option("--profile-interval", "profile_interval_s",
                         type=seconds(0.1, settings.MAX_TIMEOUT_S), default=interval_s,
                         show_default=True, help="Seconds between two profile samples.")(f)
        return click.option("--profile", is_flag=True, help=help)(f)
    return apply


class Bounded(click.FloatRange):
    """A number within ``[min, max]``, finite: ``click.FloatRange`` lets NaN through
    (every comparison with it is false), and an unbounded range lets ``inf`` in."""

    name = "float range"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number; the range is "
                      f"{self._describe_range()}.", param, ctx)
        return rv


def seconds(lo: float, hi: float = settings.MAX_DURATION_S) -> Bounded:
    """A duration option's type: ``lo`` to ``hi`` seconds, finite."""
    return Bounded(min=lo, max=hi)


def count(lo: int = 1, hi: int = settings.MAX_COUNT) -> click.IntRange:
    """A count option's type: ``lo`` to ``hi``."""
    return click.IntRange(min=lo, max=hi)


TIMEOUT = seconds(settings.MIN_TIMEOUT_S, settings.MAX_TIMEOUT_S)
"""A wait timeout: 10 ms to an hour."""

DURATION = seconds(settings.MIN_TIMEOUT_S, settings.MAX_DURATION_S)
"""A run's duration on the wall clock."""

STEPS = count(1, settings.MAX_STEPS)
"""A run's steps."""

SEED = click.IntRange(min=0, max=settings.MAX_SEED)
"""A seed."""

RATE_HZ = Bounded(min=0.0, max=settings.MAX_RATE_HZ, min_open=True)
"""A frequency, Hz."""

PORT = click.IntRange(min=0, max=settings.MAX_PORT)
"""A TCP port (0: the system chooses)."""
