"""Which rows a reset touches, and their seeds: ``reset(seed=, options={"reset_mask":
mask})`` checked as ``SyncVectorEnv`` checks it, one seed per row, and whole worlds
(``make_vec(..., robots_per_world=R)``: a world steps and resets as one)."""

from __future__ import annotations

from typing import Any

import numpy as np


def reset_mask(options: dict[str, Any] | None, num_envs: int) -> np.ndarray | None:
    """``options["reset_mask"]``, checked as ``SyncVectorEnv`` checks it (None: every
    row).

    Raises:
        TypeError: not a numpy array of bools.
        ValueError: not one per row, or no row.
    """
    if options is None or "reset_mask" not in options:
        return None
    mask = options["reset_mask"]
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"options['reset_mask'] must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"options['reset_mask'] must have shape ({num_envs},), "
                         f"got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"options['reset_mask'] must have dtype bool, got {mask.dtype}")
    if not np.count_nonzero(mask):
        raise ValueError("options['reset_mask'] must have at least one True value")
    return mask


def row_seeds(seed: int | list[int | None] | None, num_envs: int, robots_per_world: int,
              multi: bool) -> list[int]:
    """One seed per row (-1: none): ``seed + w`` for an int (``w`` the row's world: the
    row itself with one robot per world), or one per row, or (``multi``) one per
    world. A world's seed is its first row's, and every row of the world carries it.

    Raises:
        ValueError: a list of another length.

    Example:
        >>> row_seeds(10, 4, 2, True), row_seeds([7, None], 4, 2, True)
        ([10, 10, 11, 11], [7, 7, -1, -1])
    """
    if seed is None:
        return [-1] * num_envs
    r, worlds = robots_per_world, num_envs // robots_per_world
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i // r for i in range(num_envs)]
    if multi and len(seed) == worlds:
        return [-1 if seed[i // r] is None else int(seed[i // r])  # type: ignore[arg-type]
                for i in range(num_envs)]
    if len(seed) != num_envs:
        each = f" or one per world ({worlds})" if multi else ""
        raise ValueError(f"seed as a list needs one per env ({num_envs}){each}, "
                         f"got {len(seed)}")
    return [-1 if seed[i - i % r] is None else int(seed[i - i % r])  # type: ignore[arg-type]
            for i in range(num_envs)]


def check_whole_worlds(ids: np.ndarray, robots_per_world: int, what: str) -> None:
    """With ``robots_per_world`` R > 1, ``ids`` must be every row of each world they
    touch (a world steps and resets as one).

    Raises:
        ValueError: a world of which ``ids`` name some rows only (``what`` names them).
    """
    r = robots_per_world
    if r == 1:
        return
    worlds = np.unique(ids // r)
    if ids.size != worlds.size * r:
        partial = [int(w) for w in worlds
                   if np.count_nonzero(ids // r == w) != r]
        raise ValueError(
            f"{what} must name whole worlds (robots_per_world={r}: rows w*{r} to "
            f"w*{r}+{r - 1} of world w); these worlds are not whole: {partial}")
