"""Tests of dmxshm.errors: one root, semantic leaves that keep built-in meanings."""

from __future__ import annotations

import inspect

import pytest

import dmxshm
from dmxshm import errors

LEAVES = {
    errors.SegmentExistsError: FileExistsError,
    errors.SegmentMissingError: FileNotFoundError,
    errors.ShmSpaceError: MemoryError,
    errors.LayoutError: ValueError,
    errors.DmxTimeoutError: TimeoutError,
    errors.RingTimeoutError: TimeoutError,
    errors.BarrierTimeoutError: TimeoutError,
    errors.RingClosedError: EOFError,
}


def all_errors() -> list[type]:
    return [c for _, c in inspect.getmembers(errors, inspect.isclass)
            if issubclass(c, BaseException) and c.__module__ == errors.__name__]


def test_every_error_has_the_root() -> None:
    classes = all_errors()
    assert len(classes) >= 12
    assert all(issubclass(c, errors.DmxError) for c in classes)
    assert dmxshm.DmxError is errors.DmxError


@pytest.mark.parametrize(("leaf", "builtin"), LEAVES.items(), ids=lambda c: c.__name__)
def test_leaves_keep_builtin_meaning(leaf: type, builtin: type) -> None:
    assert issubclass(leaf, builtin)


def test_shm_leaves() -> None:
    for leaf in (errors.SegmentExistsError, errors.SegmentMissingError,
                 errors.ShmSpaceError, errors.LayoutError):
        assert issubclass(leaf, errors.ShmError)


def test_attributes() -> None:
    err = errors.PeerDiedError("gone", role="renderer-1", pid=42)
    assert (str(err), err.role, err.pid) == ("gone", "renderer-1", 42)
    space = errors.ShmSpaceError("full", size_bytes=10, free_bytes=3)
    assert (space.size_bytes, space.free_bytes) == (10, 3)
    with pytest.raises(TypeError):
        errors.PeerDiedError("gone")  # type: ignore[call-arg]  # who died is not optional
