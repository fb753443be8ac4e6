"""Headings from quaternions: the C library's arctangent, value by value, so that a
run is bit-identical on CPUs whose numpy takes other vector paths (AVX-512)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dmxshm.world.state import yaw_of

unit = st.floats(-1.0, 1.0, allow_nan=False)


@given(st.lists(st.tuples(unit, unit, unit, unit), min_size=1, max_size=70))
def test_yaw_is_libms_atan2_bit_for_bit(quats: list[tuple[float, ...]]) -> None:
    q = np.array(quats)
    got = yaw_of(q)
    for (x, y, z, w), yaw in zip(quats, got.tolist(), strict=True):
        want = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        assert yaw == want or (math.isnan(yaw) and math.isnan(want))
    assert got.shape == (len(quats),)
    assert yaw_of(q[0]).shape == () and yaw_of(q.reshape(-1, 1, 4)).shape == (len(quats), 1)
