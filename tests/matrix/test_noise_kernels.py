"""The camera's compiled exposure and noise (:mod:`dmxshm.matrix.noise_kernels`) give
the numpy code's integers, at every shift, with gains that clip and frames that push
values past both ends."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.matrix.noise import Noise
from dmxshm.matrix.noise_kernels import expose


@pytest.mark.parametrize("shape", [(24, 32, 3), (7, 5, 3), (1, 4, 3)])
def test_the_compiled_exposure_is_numpys(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(shape[0])
    changed = 0
    for gain in (0.0, 0.5, 0.93, 1.0, 1.07, 2.5):
        for shift in range(shape[0]):
            image = rng.integers(0, 256, shape, dtype=np.uint8)
            frame = rng.normal(0.0, 40.0, shape).round().astype(np.int16)
            want = Noise.camera_numpy(image.copy(), gain, frame, shift)
            got = image.copy()
            expose(got, gain, frame, shift)
            assert got.tobytes() == want.tobytes(), (gain, shift)
            changed += int((want != image).sum())
    assert changed > 0


def test_a_noisy_camera_image_goes_through_the_kernel_and_repeats() -> None:
    noise = Noise(5)
    image = np.full((12, 16, 3), 128, np.uint8)
    a, b = noise.camera(0, 3, image.copy()), noise.camera(0, 3, image.copy())
    assert a.tobytes() == b.tobytes() and not np.array_equal(a, image)
    # another layout (not C-contiguous) takes the numpy path, with the same integers
    wide = np.full((12, 16, 6), 128, np.uint8)
    view = wide[:, :, ::2]
    noise.camera(0, 3, view)
    assert view.tobytes() == a.tobytes()
