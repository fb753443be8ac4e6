"""``dmxshm run --duckiematrix``: what it refuses before anything starts (exit 2)."""

from __future__ import annotations

import importlib.util
import socket

import pytest

from tests.cli.common import CLI_TIMEOUT_S, refused

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)
HAS_EXTRA = importlib.util.find_spec("dtps_http") is not None


def test_duplicate_robot_names_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "--duckiematrix", "--robots", "2", "--robot-names", "ducky,ducky"],
                  capsys)
    assert "'ducky' is given twice" in err


def test_a_name_count_other_than_robots_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "--duckiematrix", "--robots", "3", "--robot-names", "a,b"], capsys)
    assert "2 name(s) for 3 robot(s)" in err


def test_a_name_that_is_not_a_topic_component_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "--duckiematrix", "--robots", "1", "--robot-names", "a/b"], capsys)
    assert "'a/b' is not a topic name" in err


def test_a_port_in_use_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        err = refused(["run", "--duckiematrix", "--duckiematrix-port", str(port)], capsys)
    assert f"port {port} on 127.0.0.1 is in use" in err


@pytest.mark.parametrize("argv, says", [
    (["--mode", "gym"], "--duckiematrix runs with --mode realtime"),
    (["--action", "wheel-speed"], "--duckiematrix runs with --action pwm"),
    (["--external-agents", "1"], "drop --external-agents"),
    (["--duckiematrix-host", "0.0.0.0"], "give --allow-remote to mean it"),
])
def test_what_the_protocol_cannot_do_is_refused(argv: list[str], says: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert says in refused(["run", "--duckiematrix", *argv], capsys)


def test_robot_names_without_duckiematrix_are_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert "add --duckiematrix" in refused(["run", "--robot-names", "a,b"], capsys)


@pytest.mark.skipif(HAS_EXTRA, reason="the duckiematrix extra is installed here")
def test_without_the_extra_it_says_how_to_install_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "--duckiematrix", "--duckiematrix-port", "7599"], capsys)
    assert "pip install 'dmxshm[duckiematrix]'" in err


@pytest.mark.skipif(HAS_EXTRA, reason="the duckiematrix extra is installed here")
def test_the_bench_without_the_extra_says_how_to_install_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["bench", "duckiematrix"], capsys)
    assert "pip install 'dmxshm[duckiematrix]'" in err
