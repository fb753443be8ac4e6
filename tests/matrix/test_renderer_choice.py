"""``auto`` takes the fastest renderer that runs here, measured (dmxshm.matrix.renderer_choice)."""

from __future__ import annotations

import pytest

from dmxshm.matrix import renderer_choice as choice
from dmxshm.network import NetworkConfig
from dmxshm.world import renderers


def test_auto_takes_the_least_time_per_frame_among_what_runs_here(monkeypatch) -> None:
    monkeypatch.setattr(choice, "_chosen", {})
    seconds = {"tiny": 0.004, "batch": 0.0003, "egl": 0.0001}
    monkeypatch.setattr(choice, "measure", lambda r, wh, model="pinhole": seconds[r])
    monkeypatch.setattr(choice, "hardware_egl", lambda: False)
    assert choice.resolve("auto", (160, 120)) == "batch"
    assert choice.choose((160, 120))[1] == {"tiny": 0.004, "batch": 0.0003}
    monkeypatch.setattr(choice, "_chosen", {})
    monkeypatch.setattr(choice, "hardware_egl", lambda: True)  # a GPU: EGL is a candidate
    assert choice.resolve("auto", (160, 120)) == "egl"
    monkeypatch.setattr(choice, "_chosen", {})
    monkeypatch.setattr(choice, "batch_available", lambda: False)
    seconds["egl"] = 1.0
    assert choice.resolve("auto", (160, 120)) == "tiny"
    assert choice.resolve("auto", None) == "tiny"  # no camera: nothing to draw
    assert choice.resolve("tiny", (160, 120)) == "tiny"


def test_the_measurement_is_made_once_per_size_and_model(monkeypatch) -> None:
    monkeypatch.setattr(choice, "_chosen", {})
    calls: list[tuple[str, tuple[int, int], str]] = []

    def measure(r: str, wh: tuple[int, int], model: str = "pinhole") -> float:
        calls.append((r, wh, model))
        return {"tiny": 2.0, "batch": 1.0}[r]

    monkeypatch.setattr(choice, "measure", measure)
    monkeypatch.setattr(choice, "hardware_egl", lambda: False)
    for _ in range(3):
        assert NetworkConfig(renderer="auto", camera=(64, 48)).renderer_used == "batch"
    NetworkConfig(renderer="auto", camera=(64, 48), camera_model="duckiebot")
    assert len(calls) == 4  # tiny and batch, once per model


@pytest.mark.parametrize("renderer", ["tiny", "batch"])
def test_a_real_measurement_is_a_positive_time_per_frame(renderer: str) -> None:
    assert 0 < choice.measure(renderer, (32, 24), robots=2, repeats=1) < 5


def test_batch_without_numba_is_refused_with_the_fix(monkeypatch) -> None:
    monkeypatch.setattr(renderers, "batch_available", lambda: False)
    with pytest.raises(renderers.RendererError, match="pip install numba"):
        renderers.resolve("batch")
