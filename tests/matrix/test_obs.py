"""The observation dtype."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.matrix.obs import ObsLayoutError, obs_dtype
from dmxshm.matrix.sensors import obs_dtype as reexported

SENSOR_FIELDS = {"step", "sim_time_s", "imu_time_s", "encoders_time_s", "tof_time_s",
                 "encoders", "imu", "tof_m", "lane", "motion"}


@pytest.mark.parametrize("camera_wh", [None, (0, 0), (160, 120), (64, 64), (1, 3)])
def test_fields_and_alignment(camera_wh: tuple[int, int] | None) -> None:
    dt = obs_dtype(camera_wh)
    with_camera = camera_wh not in (None, (0, 0))
    expected = SENSOR_FIELDS | ({"camera", "camera_time_s"} if with_camera else set())
    assert set(dt.names) == expected
    assert dt["step"] == np.uint64 and dt["sim_time_s"] == np.float64
    assert dt["imu"].shape == (6,) and dt["imu"].base == np.float32
    assert dt["encoders"].shape == (2,) and dt["encoders"].base == np.int64
    assert dt["tof_m"] == np.float32
    assert dt["lane"].shape == (3,) and dt["lane"].base == np.float32
    assert dt["motion"].shape == (3,) and dt["motion"].base == np.float32
    if with_camera:
        assert camera_wh is not None
        width, height = camera_wh
        assert dt["camera"].shape == (height, width, 3) and dt["camera"].base == np.uint8
    for name in dt.names:
        field, offset = dt.fields[name][:2]
        assert offset % field.base.itemsize == 0, name  # naturally aligned


def test_a_record_holds_a_frame() -> None:
    obs = np.zeros(2, obs_dtype((160, 120)))
    obs[1]["camera"] = 7
    obs[1]["imu"] = np.arange(6)
    assert obs[1]["camera"].sum() == 7 * 160 * 120 * 3 and obs[0]["camera"].sum() == 0
    assert reexported is obs_dtype


@pytest.mark.parametrize("camera_wh", [(-1, 5), (0, 5), (5, 0)])
def test_impossible_camera_sizes(camera_wh: tuple[int, int]) -> None:
    with pytest.raises(ObsLayoutError):
        obs_dtype(camera_wh)
