"""The live view: the page in a real browser (Debian's Chromium through Selenium),
the token every request needs, and that the view never holds the run back."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("aiohttp", reason="the view extra (pip install 'dmxshm[view]')")

from click.testing import CliRunner  # noqa: E402

from dmxshm.cli import cli  # noqa: E402
from dmxshm.network import Network, NetworkConfig  # noqa: E402
from dmxshm.shm.names import list_entries  # noqa: E402
from dmxshm.view.server import (  # noqa: E402
    ViewError,
    check_host,
    stop_process,
    wait_for_url,
)

TOKEN = "dmxshm-test-token-" + os.urandom(8).hex()

TIMEOUT_S = 180
# CI sets this: there the browser test must run, not skip.
REQUIRE_BROWSER = os.environ.get("DMXSHM_REQUIRE_BROWSER") == "1"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_view(pid: int, port: int, *extra: str,
               token: str | None = None) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "DMXSHM_VIEW_TOKEN": token} if token else None
    proc = subprocess.Popen([sys.executable, "-m", "dmxshm.view.server", "--pid", str(pid),
                             "--port", str(port), "--exit-with", str(os.getpid()), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        return proc, wait_for_url(proc)
    except BaseException:
        stop(proc)
        raise


def at(url: str, path: str) -> str:
    """``path`` of the view at ``url`` (the URL printed at start), with its token."""
    base, _, query = url.partition("?")
    return f"{base}{path}?{query}"


def token_of(url: str) -> str:
    """The token of the view's URL; fails when it has none."""
    base, sep, token = url.partition("?token=")
    assert sep and len(token) >= 32, f"no token in the view's URL {url}"
    return token


def status_of(url: str, headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def websocket_first_message(url: str) -> dict:
    """The first message of the view's websocket at ``url`` (``ws://...``); raises
    aiohttp's ``WSServerHandshakeError`` (with its ``status``) when refused."""
    import asyncio
    import json

    import aiohttp

    async def first() -> dict:
        async with aiohttp.ClientSession() as session, \
                session.ws_connect(url, timeout=aiohttp.ClientWSTimeout(ws_close=10)) as ws:
            return json.loads((await ws.receive(timeout=10)).data)

    return asyncio.run(first())


def stop(proc: subprocess.Popen) -> None:
    stop_process(proc, grace_s=10.0)


def browser():  # noqa: ANN201
    if not (CHROMIUM and CHROMEDRIVER):
        if REQUIRE_BROWSER:
            pytest.fail("DMXSHM_REQUIRE_BROWSER=1 but Debian's chromium and chromium-driver "
                        "are not installed (apt-get install chromium chromium-driver)")
        pytest.skip("needs Debian's chromium and chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,900"):
        opts.add_argument(arg)
    # The driver from the distribution, by its path: nothing is downloaded.
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)


def until(check, timeout_s: float = 30.0):  # noqa: ANN001, ANN201
    """Poll the page until ``check()`` is truthy (a browser has no signal to wait on)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "the page did not get there in time"
        time.sleep(0.2)


@pytest.mark.timeout(TIMEOUT_S)
def test_the_page_shows_the_run_live_and_keeps_working_after_it(tmp_path) -> None:
    driver = browser()
    net = Network(NetworkConfig(mode="realtime", robots=2, duration_s=6.0, camera=(64, 48),
                                agent="lane-follow", wait_timeout_s=5.0))
    view = None
    try:
        net.start()
        view, url = start_view(os.getpid(), free_port())
        driver.get(url)
        js = "return window.dmxView"
        # Robots move on the map: the positions the page holds change.
        first = until(lambda: driver.execute_script(js)["poses"])
        assert len(first) == 2
        summary_box: list = []
        import threading

        runner = threading.Thread(target=lambda: summary_box.append(net.run()))
        runner.start()
        until(lambda: driver.execute_script(js)["poses"] != first)
        # A camera image updates (a PNG data URL, more than once).
        until(lambda: min(driver.execute_script(js)["cameraUpdates"].values() or [0]) >= 3)
        src = driver.find_element("id", "cam-0").get_attribute("src")
        assert src.startswith("data:image/png;base64,")
        # A second tab gets the same updates.
        driver.switch_to.new_window("tab")
        driver.get(url)
        until(lambda: driver.execute_script(js)["updates"] > 3)
        names = until(lambda: driver.execute_script(
            "return [...document.querySelectorAll('#sensors tbody tr td:first-child')]"
            ".map(td => td.textContent)"))
        assert set(names) == {"camera", "imu", "encoders", "tof"}
        if os.environ.get("DMXSHM_VIEW_SCREENSHOT"):  # docs/view.png
            driver.save_screenshot(os.environ["DMXSHM_VIEW_SCREENSHOT"])
        runner.join(TIMEOUT_S / 2)
        assert summary_box and summary_box[0].steps == 6 * 240  # a state every 1/240 s
        # The run ended: the page says so and keeps its last picture.
        until(lambda: driver.execute_script(js)["ended"])
        assert "ended" in driver.find_element("id", "status").text
        assert len(driver.execute_script(js)["poses"]) == 2
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
                  and "favicon" not in e["message"]]
        assert not errors
    finally:
        driver.quit()
        if view is not None:
            stop(view)
        net.close()
    assert not [e for e in list_entries() if e.pid == os.getpid()]


@pytest.mark.timeout(TIMEOUT_S)
def test_the_view_binds_no_ring_and_a_run_without_a_page_is_the_same() -> None:
    # The view only peeks: every ring of the run keeps the reader and writer the
    # run gave it, and a gym run with the view attached gives the same digest.
    cfg = NetworkConfig(robots=2, steps=60, camera=(32, 24), wait_timeout_s=5.0)
    plain = Network(cfg)
    with plain:
        alone = plain.run()
    net = Network(cfg)
    view = None
    try:
        net.start()
        view, url = start_view(os.getpid(), free_port())
        with urllib.request.urlopen(at(url, "snapshot"), timeout=10) as r:
            assert b'"robots": 2' in r.read()
        seen = net.run()
        from dmxshm.shm.ring import Ring

        for name in net.plan.rings.values():
            ring = Ring.attach(name)
            try:
                assert ring.peer("reader").pid in (0, *net.supervisor.pids().values(),
                                                   os.getpid())
            finally:
                ring.close()
    finally:
        if view is not None:
            stop(view)
        net.close()
    assert seen.trajectory_digest == alone.trajectory_digest


@pytest.mark.timeout(TIMEOUT_S)
def test_the_view_shows_moving_objects_where_they_are(tmp_path) -> None:  # noqa: ANN001
    import json

    from dmxshm.world.maps import load_map
    from dmxshm.world.movers import Mover
    from tests.world.test_movers import STRIP

    path = tmp_path / "strip.yaml"
    path.write_text(STRIP)
    m = load_map(path)
    net = Network(NetworkConfig(mode="realtime", map=str(path), robots=1, agent="idle",
                                duration_s=30.0, camera=(0, 0), seed=4))
    view = None
    try:
        net.start()
        view, url = start_view(os.getpid(), free_port())

        def snapshot() -> dict | None:
            with urllib.request.urlopen(at(url, "snapshot"), timeout=10) as r:
                got = json.loads(r.read())
            return got if got.get("movers") and got["sim_time_s"] > 0.5 else None

        snap = until(snapshot)
        expected = Mover(m, m.objects[0], 0, 4).pose(snap["sim_time_s"])
        assert snap["movers"] == [[round(v, 4) for v in expected]]
        # The background is the map without it: the page draws it where it is.
        with urllib.request.urlopen(at(url, "map.png"), timeout=10) as r:
            assert r.status == 200
    finally:
        if view is not None:
            stop(view)
        net.close()


@pytest.mark.timeout(TIMEOUT_S)
def test_every_endpoint_needs_the_token_on_loopback() -> None:
    # Issue 42: the run's segments are 0600, but any user of the machine reaches a
    # port on loopback; without the token they are refused, with it let in.
    port = free_port()
    proc, url = start_view(os.getpid(), port)  # as a run starts it: it makes its token
    try:
        token = token_of(url)
        assert url == f"http://127.0.0.1:{port}/?token={token}"
        base = f"http://127.0.0.1:{port}/"
        for path in ("", "snapshot", "map.png", "ws"):
            assert status_of(base + path) == 403, path
            assert status_of(f"{base}{path}?token=wrong") == 403, path
            assert status_of(f"{base}{path}?token=") == 403, path
        assert status_of(at(url, "")) == 200
        assert status_of(at(url, "snapshot")) == 200
        assert status_of(at(url, "map.png")) == 404  # let in: no run yet, so no map
        # A short reason: what is missing and where to find it.
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(base + "snapshot", timeout=10)
        assert b"a token is needed" in info.value.read()
        info.value.close()
    finally:
        stop(proc)


@pytest.mark.timeout(TIMEOUT_S)
def test_the_websocket_needs_the_token() -> None:
    import aiohttp

    port = free_port()
    proc, url = start_view(os.getpid(), port)
    try:
        token = token_of(url)
        ws = f"ws://127.0.0.1:{port}/ws"
        for query in ("", "?token=wrong"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                websocket_first_message(ws + query)
            assert info.value.status == 403
        assert websocket_first_message(f"{ws}?token={token}")["kind"] == "waiting"  # no run
    finally:
        stop(proc)


@pytest.mark.timeout(TIMEOUT_S)
def test_a_view_without_a_token_given_makes_its_own() -> None:
    a = check_host("127.0.0.1", allow_remote=False, token=None)
    b = check_host("127.0.0.1", allow_remote=False, token=None)
    assert a != b and len(a) >= 32  # secrets.token_urlsafe(24): 32 characters
    assert check_host("127.0.0.1", allow_remote=False, token=TOKEN) == TOKEN
    port = free_port()
    proc, url = start_view(os.getpid(), port, token=TOKEN)  # as view_process gives it
    try:
        assert token_of(url) == TOKEN
    finally:
        stop(proc)


@pytest.mark.timeout(TIMEOUT_S)
def test_beyond_loopback_a_token_is_required() -> None:
    with pytest.raises(ViewError, match="--allow-remote"):
        check_host("0.0.0.0", allow_remote=False, token=None)
    token = check_host("0.0.0.0", allow_remote=True, token=None)
    assert token and len(token) >= 16
    port = free_port()
    proc, url = start_view(os.getpid(), port, "--host", "0.0.0.0", "--allow-remote",
                           token=token)
    try:
        assert url.endswith(f"?token={token}")
        for path in ("", "snapshot", "map.png", "ws"):
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=10)
            assert info.value.code == 403
            info.value.close()
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}?token=wrong", timeout=10)
            assert info.value.code == 403
            info.value.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={token}", timeout=10) as r:
            assert r.status == 200 and b"dmxshm view" in r.read()
    finally:
        stop(proc)


@pytest.mark.timeout(TIMEOUT_S)
def test_beyond_loopback_without_allow_remote_the_server_refuses_to_start() -> None:
    with pytest.raises(ViewError, match="--allow-remote"):
        start_view(os.getpid(), free_port(), "--host", "0.0.0.0")


@pytest.mark.timeout(TIMEOUT_S)
def test_on_loopback_other_sites_are_refused() -> None:
    # On loopback, even with the token: only this server's own pages, or no page
    # at all (a script, curl), may ask; another website's script (its Origin) and
    # a rebound DNS name (its Host) are refused.
    port = free_port()
    proc, url = start_view(os.getpid(), port, token=TOKEN)
    try:
        def status(headers: dict[str, str], path: str = "snapshot") -> int:
            return status_of(at(url, path), headers)

        assert status({}) == 200
        assert status({"Origin": f"http://127.0.0.1:{port}"}) == 200
        assert status({"Origin": "http://evil.example"}) == 403
        assert status({"Origin": "http://evil.example"}, "ws") == 403
        assert status({"Host": f"evil.example:{port}"}) == 403
    finally:
        stop(proc)


@pytest.mark.timeout(TIMEOUT_S)
def test_run_with_view_prints_the_url_and_stops_its_view(tmp_path) -> None:
    port = free_port()
    out = subprocess.run([sys.executable, "-m", "dmxshm.cli", "run", "--steps", "30",
                          "--camera", "16x12", "--view", "--view-port", str(port)],
                         capture_output=True, text=True, timeout=TIMEOUT_S / 2, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("view: "))
    assert line.startswith(f"view: http://127.0.0.1:{port}/?token=")
    token_of(line.strip())
    # The view went with the run: nothing listens on its port any more.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    refused = CliRunner().invoke(cli, ["run", "--steps", "5", "--view", "--view-host",
                                       "0.0.0.0"])  # refused before a process starts
    assert refused.exit_code != 0 and "--allow-remote" in refused.stderr
