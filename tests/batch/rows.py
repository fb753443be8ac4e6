"""Helpers of the batch's tests: the backends a semantics test runs over, and a
comparison of rows bit for bit (dtypes and nesting included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

IN_PROCESS, WORKERS = 0, 2
BACKENDS = [pytest.param(IN_PROCESS, id="in-process"), pytest.param(WORKERS, id="workers")]
"""``num_workers`` of each backend, as gymnasium's vector tests run over
``SyncVectorEnv`` and ``AsyncVectorEnv``: the in-process batch (the fast one) and
two worker processes."""


def assert_same(mine: Any, theirs: Any, where: str) -> None:
    """Bit for bit, dtypes and nesting included (final_info is a dict, final_obs an
    object array of observations and None)."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(mine, (tuple, list)) and len(mine) == len(theirs), where
        for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert_same(a, b, f"{where}[{k}]")
        return
    if isinstance(theirs, dict):
        assert isinstance(mine, dict) and set(mine) == set(theirs), (where, set(mine),
                                                                     set(theirs))
        for key in theirs:
            assert_same(mine[key], theirs[key], f"{where}.{key}")
        return
    if theirs is None:
        assert mine is None, where
        return
    theirs, mine = np.asarray(theirs), np.asarray(mine)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, (where, mine.dtype,
                                                                      theirs.dtype)
    if theirs.dtype == object:
        for k, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert_same(a, b, f"{where}[{k}]")
    else:
        assert np.array_equal(mine, theirs, equal_nan=theirs.dtype.kind == "f"), where


def in_env_order(result: tuple[Any, ...], ids: np.ndarray) -> tuple[Any, ...]:
    """A ``recv()`` result's rows sorted by env (the order envs finish in differs
    between backends; what each env returned does not)."""
    order = np.argsort(ids, kind="stable")

    def pick(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: pick(v) for k, v in x.items()}
        return np.asarray(x)[order]

    return tuple(pick(x) for x in result)
