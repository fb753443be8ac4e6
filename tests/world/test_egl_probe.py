"""The EGL probe's result is a value of dmxshm.world.renderers, passed on in arguments.

No environment variable carries it: a process knows what it probed
(``egl_device()``), and a child is given it (``adopt_probe``).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from dmxshm.world import renderers

PROBE_TIMEOUT_S = 120


@pytest.fixture
def unprobed(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as if it had never probed EGL (restored after the test)."""
    monkeypatch.setattr(renderers, "_probed", None)


@pytest.mark.timeout(PROBE_TIMEOUT_S)
def test_the_probe_result_is_egl_device_and_no_environment_variable(
        unprobed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert renderers.egl_device() is None  # nothing probed here yet
    environ = dict(os.environ)
    calls: list[list[str]] = []
    real_run = subprocess.run

    def counted(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        return real_run(args, **kw)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(subprocess, "run", counted)
    if renderers.egl_plugin() is None:
        pytest.skip("this pybullet has no EGL plugin")
    try:
        device = renderers.probe()
    except renderers.RendererError as exc:
        pytest.skip(f"EGL cannot start here: {exc}")
    assert device and renderers.egl_device() == device
    assert renderers.probe() == device and len(calls) == 1  # once per process
    assert dict(os.environ) == environ  # the result stayed in this process


def test_a_child_given_the_result_does_not_probe_again(
        unprobed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_child(*args: object, **kw: object) -> None:
        raise AssertionError("probed again")

    renderers.adopt_probe(None)  # the parent did not probe: nothing changes
    assert renderers.egl_device() is None
    monkeypatch.setattr(subprocess, "run", no_child)
    renderers.adopt_probe("Some GPU/PCIe/SSE2")
    assert renderers.probe() == renderers.egl_device() == "Some GPU/PCIe/SSE2"
    with pytest.raises(ValueError, match="egl_device"):
        renderers.adopt_probe("")

