"""The envs a batch can hold (``make_vec(..., version=)``): ``"v0"``
(``dmxshm/DuckieLane-v0``), ``"v1"`` (``dmxshm/DuckieLane-v1``), the kinds registered
from above (the gym-duckietown drop-ins ``"duckietown"``,
:class:`dmxshm.duckietown.DuckietownEnv`, and ``"simulator"``,
:class:`dmxshm.duckietown.Simulator`, registered by :mod:`dmxshm` itself), or a user's
env class of one robot (:data:`Kind`)."""

from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dmxshm.batch.env import DuckieLaneEnv

KINDS: dict[str, str] = {"v0": "dmxshm.batch.env:DuckieLaneEnv",
                         "v1": "dmxshm.batch.env_v1:DuckieLaneV1Env"}
"""Each kind's class, as an entry point (as gymnasium registers envs), loaded only when a
batch of that kind is made. The batch's own kinds are here; the kinds of the layers above
it join by :func:`register` (a batch never loads a module above it)."""
DUCKIELANE = ("v0", "v1")
"""The batch's own kinds, which take ``make_vec``'s ``obs`` and ``camera``; a registered
kind takes its own arguments, as a user's env class does."""
DROP_INS: set[str] = set()
"""The registered kinds that take their own arguments and observe their own camera
(``register(..., own_camera=True)``: gym-duckietown's drop-ins)."""


def register(name: str, entry_point: str, *, own_camera: bool = False) -> None:
    """Make ``make_vec(..., version=name)`` a batch of the env class at ``entry_point``
    (``"module:Name"``). Registering a name again with the same entry point does nothing.

    ``own_camera``: the env takes its own arguments and observes its own camera, as
    gym-duckietown's drop-ins do (``make_vec``'s ``obs`` and ``camera`` are refused).

    Raises:
        ValueError: ``name`` registered already with another entry point, or an entry
            point that is not ``"module:Name"``.
    """
    module, _, attr = entry_point.partition(":")
    if not module or not attr:
        raise ValueError(f"an entry point is 'module:Name', not {entry_point!r}")
    if KINDS.get(name, entry_point) != entry_point:
        raise ValueError(f"version {name!r} is registered already, as {KINDS[name]!r}")
    KINDS[name] = entry_point
    if own_camera:
        DROP_INS.add(name)


def versions() -> tuple[str, ...]:
    """The names ``make_vec(..., version=)`` takes."""
    return tuple(KINDS)


Kind = str | type
"""A batch's kind: a version (a key of :data:`KINDS`), or a user's env class of one
robot (a gymnasium env whose action is 2 floats; its arguments are ``make_vec``'s
``env_kwargs``, and the workers import it by its module and name)."""


def normalize(version: Kind) -> Kind:
    """``version`` as a key of :data:`KINDS` (a gymnasium id ``"dmxshm/DuckieLane-v1"``
    is its version), or the env class it is.

    Raises:
        ValueError: another version.
    """
    if isinstance(version, type):
        return version
    short = version.rsplit("-", 1)[-1] if version.startswith("dmxshm/DuckieLane-") else version
    if short not in KINDS:
        raise ValueError(f"version must be one of {', '.join(versions())}, not {version!r}")
    return short


def env_class(version: Kind) -> type[DuckieLaneEnv]:
    """The env class of ``version`` (see :func:`normalize`)."""
    kind = normalize(version)
    if isinstance(kind, type):
        return kind
    module, name = KINDS[kind].split(":")
    cls: type[DuckieLaneEnv] = getattr(importlib.import_module(module), name)
    return cls


def env_kwargs(version: Kind, obs: str, camera: tuple[int, int],
               kwargs: dict[str, Any]) -> dict[str, Any]:
    """What each env of a batch of ``version`` is built with: ``obs`` and ``camera``
    and ``kwargs`` for DuckieLane; ``kwargs`` alone for a drop-in (its image is
    ``camera_width`` x ``camera_height``) or a user's env class.

    Raises:
        ValueError: a drop-in or user's batch given ``obs`` or ``camera``, or
            ``render_mode``.
    """
    kind = normalize(version)
    if kind in DUCKIELANE:
        return dict(obs=obs, camera=tuple(camera), **kwargs)
    if kind not in DROP_INS:
        name = kind.__name__ if isinstance(kind, type) else kind
        if obs != "state" or tuple(camera) != (160, 120) or "render_mode" in kwargs:
            raise ValueError(f"a batch of {name} takes its own arguments: leave "
                             "make_vec's obs, camera and render_mode out")
        return dict(kwargs)
    if obs != "state" or tuple(camera) != (160, 120):
        raise ValueError("a batch of gym-duckietown drop-ins observes the camera at "
                         "camera_width x camera_height: leave make_vec's obs and camera out")
    if kwargs.get("render_mode") is not None:
        raise ValueError("a batch of gym-duckietown drop-ins has no render(): its "
                         "observations are the images")
    return dict(kwargs)


def check_keywords(version: Kind, kwargs: dict[str, Any]) -> None:
    """Refuse, before any env is made, an argument ``version``'s env does not take,
    naming the version that does (``randomize`` is v1's, not v0's).

    Raises:
        TypeError: a keyword the env does not take (a ``TypeError``, as Python's own).
    """
    kind = normalize(version)
    taken = _keywords(kind)
    unknown = sorted(set(kwargs) - taken)
    if not unknown:
        return
    others = [v for v in DUCKIELANE if v != kind and set(unknown) <= _keywords(v)]
    hint = (f": they are {others[0]}'s, give version={others[0]!r}" if others
            else f"; it takes {', '.join(sorted(taken))}")
    name = (kind.__name__ if isinstance(kind, type)
            else f"DuckieLane-{kind}" if kind in DUCKIELANE else env_class(kind).__name__)
    raise TypeError(f"{name} takes no {', '.join(unknown)}{hint}")


def _keywords(version: Kind) -> set[str]:
    """The keywords ``version``'s env takes, its bases' too where it passes ``**kwargs``
    on."""
    names: set[str] = set()
    for cls in env_class(version).__mro__:
        if "__init__" not in vars(cls) or cls is object:
            continue
        parameters = inspect.signature(vars(cls)["__init__"]).parameters.values()
        names |= {p.name for p in parameters if p.name != "self"
                  and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return names


