"""The arguments of a batch, checked: autoreset mode, worker count, polling, and
robots per world (:func:`~dmxshm.batch.vector.make_vec`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import posix_ipc
from gymnasium.vector import AutoresetMode

from dmxshm import settings
from dmxshm.proc.cpus import usable_cpus

AUTORESET_MODES = {mode.name.lower(): mode for mode in AutoresetMode}


def parse_autoreset_mode(value: AutoresetMode | str) -> AutoresetMode:
    """``value`` as an :class:`~gymnasium.vector.AutoresetMode`: the enum, its value
    (``"NextStep"``) or its name in any case (``"same_step"``).

    Raises:
        ValueError: none of them.
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        for mode in AutoresetMode:
            if value in (mode.value, mode.name) or value.lower() == mode.name.lower():
                return mode
    raise ValueError(f"autoreset_mode must be one of {sorted(AUTORESET_MODES)} "
                     f"(or a gymnasium.vector.AutoresetMode), not {value!r}")


def resolve_spin_s(spin_us: float | None) -> float:
    """How long a worker polls for a command before it sleeps (``spin_us``, or the
    settings' default), in seconds; 0 where semaphores cannot be polled.

    Raises:
        ValueError: a negative ``spin_us``.
    """
    if spin_us is None:
        spin_us = settings.spin_us(settings.BATCH_SPIN_US)
    if spin_us < 0:
        raise ValueError(f"spin_us must be >= 0, not {spin_us}")
    return spin_us * 1e-6 if posix_ipc.SEMAPHORE_VALUE_SUPPORTED else 0.0


def worker_count(num_workers: int | None) -> int:
    """``num_workers``, or one per usable CPU for None (0: the in-process batch).

    Raises:
        ValueError: anything else than None or an integer >= 0 (0 never means "auto").
    """
    if num_workers is None:
        return len(usable_cpus())
    if isinstance(num_workers, (bool, np.bool_)) or not isinstance(num_workers,
                                                                     (int, np.integer)) \
            or num_workers < 0:
        raise ValueError(f"num_workers must be None (one worker per usable CPU, here "
                         f"{len(usable_cpus())}), 0 (the envs step in this process) or "
                         f"an integer >= 1, not {num_workers!r}")
    return int(num_workers)


def check_robots_per_world(value: Any, num_envs: int, version: str | type | None,
                      env_kwargs: dict[str, Any]) -> int | None:
    """``robots_per_world`` checked (None: one robot per world, the single-agent batch).

    Raises:
        ValueError: not an integer >= 1, ``num_envs`` not a multiple of it, another
            version than v1, or a render mode.
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(f"robots_per_world must be an integer >= 1, not {value!r}")
    if num_envs % value:
        raise ValueError(f"num_envs ({num_envs}) must be a multiple of robots_per_world "
                         f"({value}): each robot of each world is a row")
    if version is not None:
        from dmxshm.batch import kinds

        if kinds.normalize(version) != "v1":
            raise ValueError("the robots of robots_per_world are DuckieLane-v1's: leave "
                             f"version out, or give 'v1', not {version!r}")
    if env_kwargs.get("render_mode") is not None:
        raise ValueError("a multi-agent batch has no render(): a world's top view is "
                         "dmxshm.parallel_env(..., render_mode='rgb_array').render()")
    return int(value)
