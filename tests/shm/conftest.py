"""Fixtures of the shared-memory tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dmxshm.shm.registry import Registry


@pytest.fixture
def registry() -> Iterator[Registry]:
    """A fresh network registry, unlinked at teardown whatever the test did."""
    reg = Registry()
    try:
        yield reg
    finally:
        reg.unlink_all()
