"""``dmxshm run``: its summary and outputs, and what it refuses before anything starts."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from dmxshm.cli import EXIT_USAGE, cli, main
from dmxshm.cli.options import field_default
from dmxshm.network import NetworkConfig
from dmxshm.network.recording import CONTACT_SHEET, earlier_frames
from tests.cli.common import CLI_TIMEOUT_S, ours, refused

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


def test_run_command_prints_a_summary_and_writes_json(tmp_path) -> None:  # noqa: ANN001
    path, rec = tmp_path / "run.json", tmp_path / "rec"
    result = CliRunner().invoke(cli, ["run", "--steps", "20", "--camera", "32x24",
                                      "--record", str(rec), "--json", str(path)])
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    assert (data["mode"], data["robots"], data["steps"]) == ("gym", 2, 20)
    assert data["sim_time_s"] == pytest.approx(20 * field_default(NetworkConfig, "dt_s"))
    assert data["steps_per_s"] == pytest.approx(20 / data["wall_time_s"])
    assert data["sensor_ticks"] == {name: [20] for name in data["sensors"]}  # once a step
    assert set(data["drops"].values()) == {0} and data["received_commands"] == [20, 20]
    assert len(data["final_poses"]) == 2
    # The frames on disk are those the summary counts, and the record folder's names
    # are the renderers' (what --record --overwrite would remove).
    assert len(earlier_frames(str(rec))) == data["recorded_frames"] + 1 > 1
    assert data["contact_sheet"] == str(rec / CONTACT_SHEET)
    assert (rec / CONTACT_SHEET).read_bytes()[:4] == b"\x89PNG"
    assert "steps/s" in result.output and "trajectory digest" in result.output
    # How each robot drove, and what makes the run reproducible, without opening the JSON.
    table = result.output[result.output.index("worst offset m"):].splitlines()
    assert [line.split()[0] for line in table[1:3]] == ["0", "1"]
    assert float(table[1].split()[1]) == pytest.approx(data["lane"]["distance_m"][0], abs=0.01)
    assert f"seed 0, map loop; trajectory digest {data['trajectory_digest']}" in result.output
    assert data["seed"] == 0 and data["map"] == "loop"


def test_the_options_defaults_are_the_configs() -> None:
    # One definition: each option that sets a field defaults to NetworkConfig's default.
    from dmxshm.cli.run_options import FIELDS

    ctx = cli.commands["run"].make_context("run", [])
    fields = {FIELDS.get(name, name): value for name, value in ctx.params.items()}
    for name in ("mode", "robots", "renderers", "agent", "steps", "duration_s",
                 "camera", "renderer", "seed", "map", "wait_timeout_s", "spine_hz",
                 "command_timeout_s", "profile_interval_s", "spine", "connect_timeout_s"):
        assert fields[name] == field_default(NetworkConfig, name), name
    assert ctx.params["spine_reply_at_s"] is None  # unset: the config's own default holds
    # Unset, --agents is the config's default, or 0 with --external-agents.
    assert ctx.params["agents"] is None and ctx.params["external_agents"] is None


def test_record_refuses_a_camera_off_and_an_earlier_runs_frames(tmp_path, capsys) -> None:  # noqa: ANN001
    from dmxshm.network import ConfigError

    rec = tmp_path / "rec"
    with pytest.raises(SystemExit) as exc:
        main(["run", "--steps", "5", "--camera", "0x0", "--record", str(rec)])
    assert exc.value.code == EXIT_USAGE and "turns the camera off" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="turns the camera off"):  # from Python too
        NetworkConfig(camera=(0, 0), record_dir=str(rec))
    rec.mkdir()
    (rec / "robot00_step000000.png").write_bytes(b"old")
    (rec / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exc:
        main(["run", "--steps", "5", "--camera", "32x24", "--record", str(rec)])
    assert exc.value.code == EXIT_USAGE and "earlier run" in capsys.readouterr().err
    result = CliRunner().invoke(cli, ["run", "--steps", "20", "--camera", "32x24", "--record",
                                      str(rec), "--overwrite"])
    assert result.exit_code == 0, result.output
    assert (rec / "robot00_step000000.png").read_bytes()[:4] == b"\x89PNG"  # the new frame
    assert (rec / "notes.txt").read_text() == "mine"  # only frames are removed


def test_a_run_whose_robots_never_moved_fails_after_its_summary(tmp_path) -> None:  # noqa: ANN001
    from dmxshm.network import CommandsRejectedError

    path = tmp_path / "run.json"
    result = CliRunner().invoke(cli, ["run", "--steps", "10", "--camera", "0x0", "--agent",
                                      "tests.agents:nan_wheels", "--json", str(path)])
    assert isinstance(result.exception, CommandsRejectedError) and result.exit_code == 1
    assert "trajectory digest" in result.output  # the summary came first...
    assert json.loads(path.read_text())["rejected_commands"] == [10, 10]  # ...and the JSON


@pytest.mark.parametrize("args, words", [
    (["--robots", "0"], "robots"),
    (["--camera", "100000x100000"], "larger than"),
    (["--camera", "big"], "WIDTHxHEIGHT"),
    (["--map", "no-such-map"], "no-such-map"),
    (["--pin", "engine=9999"], "CPU 9999"),
    (["--mode", "realtime", "--rates", "lidar=10"], "unknown sensor"),
    (["--mode", "realtime", "--rates", "imu=-5"], "above 0"),
    # Every count and duration has a finite, documented maximum (docs/cli.md#limits).
    (["--timeout", "inf"], "'--timeout'"), (["--timeout", "1e9"], "'--timeout'"),
    (["--timeout", "nan"], "'--timeout'"), (["--timeout", "1e-6"], "'--timeout'"),
    (["--connect-timeout", "1e300"], "'--connect-timeout'"),
    (["--mode", "realtime", "--command-timeout", "inf"], "'--command-timeout'"),
    (["--steps", str(10**20)], "'--steps'"), (["--steps", "1000000001"], "'--steps'"),
    (["--mode", "realtime", "--duration", "1e12"], "'--duration'"),
    (["--seed", str(2**64)], "'--seed'"), (["--seed", "-1"], "'--seed'"),
    (["--spine", "--mode", "realtime", "--spine-frequency", "1e9"], "'--spine-frequency'"),
    (["--view", "--view-port", "70000"], "'--view-port'"),
    (["--mode", "realtime", "--rates", "imu=1e9"], "at most"),
    (["--rates", "imu"], "SENSOR=HZ"),
    (["--episodes"], "--external-agents"),
    (["--episode-steps", "50"], "applies to runs with --episodes only"),
    (["--mode", "realtime", "--external-agents", "1", "--episodes"], "gym"),
])
def test_run_refuses_impossible_values_clearly(args: list[str], words: str, capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as exc:
        main(["run", *args])
    assert exc.value.code == EXIT_USAGE  # one rule: what cannot run is a usage error
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_every_number_an_option_of_any_command_takes_has_a_finite_maximum() -> None:
    import click

    def commands(cmd: click.Command):  # noqa: ANN202
        yield cmd
        for sub in getattr(cmd, "commands", {}).values():
            yield from commands(sub)

    numbers = 0
    for cmd in commands(cli):
        for param in cmd.params:
            if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType)):
                numbers += 1
                assert isinstance(param.type, click.types._NumberRangeBase) \
                    and param.type.max is not None, f"{cmd.name} {param.opts}: no maximum"
            if isinstance(param.type, click.types.FloatParamType):
                with pytest.raises(click.BadParameter):  # NaN passes a plain FloatRange
                    param.type.convert("nan", param, None)
    assert numbers > 40  # the walk found the commands' options


def test_an_exported_option_of_the_other_mode_is_noted_not_refused(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("DMXSHM_RUN_DURATION_S", "60")
    result = CliRunner().invoke(cli, ["run", "--steps", "5", "--camera", "0x0"],
                                auto_envvar_prefix="DMXSHM")
    assert result.exit_code == 0, result.output
    assert "DMXSHM_RUN_DURATION_S has no effect in gym mode" in result.output
    assert "5 steps" in result.output


@pytest.mark.parametrize("args, words", [
    (["--duration", "2"], "--duration applies to realtime mode only"),
    (["--rates", "imu=200"], "--rates applies to realtime mode only"),
    (["--command-timeout", "1"], "--command-timeout applies to realtime mode only"),
    (["--mode", "realtime", "--steps", "50"], "--steps applies to gym mode only"),
    (["--spine-reply-at", "0.0003"], "--spine-reply-at applies to realtime mode only"),
    (["--mode", "realtime", "--spine-reply-at", "0.0003"], "or add --spine"),
    (["--robots", "17"], "room for 16"),
    (["--agent", "no_such_module:act"], "cannot import no_such_module"),
])
def test_options_that_cannot_apply_are_refused_before_anything_starts(
        args: list[str], words: str, capsys) -> None:  # noqa: ANN001
    before = ours()
    with pytest.raises(SystemExit) as exc:
        main(["run", *args])
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert ours() <= before  # nothing was created


def test_the_config_names_the_fields_a_run_ignores() -> None:
    gym, realtime = NetworkConfig(), NetworkConfig(mode="realtime")
    given = ["steps", "duration_s", "sensor_rates_hz", "command_timeout_s", "spine_reply_at_s",
             "robots"]
    assert [f for f, only, _ in gym.unused_fields(given)] == given[1:5]
    assert {only for _, only, _ in gym.unused_fields(given)} == {"realtime"}
    assert realtime.unused_fields(given) == [
        ("steps", "gym", "a realtime run lasts --duration seconds"),
        ("spine_reply_at_s", "spine", "it is the network spine's T_o")]
    assert NetworkConfig(mode="realtime", spine=True).unused_fields(given)[1:] == []


def test_a_view_beyond_loopback_without_allow_remote_is_refused(capsys) -> None:  # noqa: ANN001
    err = refused(["run", "--steps", "5", "--camera", "0x0", "--view",
                   "--view-host", "0.0.0.0"], capsys)
    assert "--allow-remote" in err
    err = refused(["view", "--host", "0.0.0.0"], capsys)
    assert "--allow-remote" in err


@pytest.mark.parametrize("argv", [["run", "--steps", "5", "--camera", "0x0", "--view"],
                                  ["view"]])
def test_a_view_without_its_extra_is_refused(argv: list[str], monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # import aiohttp fails
    assert "pip install 'dmxshm[view]'" in refused(argv, capsys)


def test_foxglove_refusals(monkeypatch, capsys) -> None:  # noqa: ANN001
    pytest.importorskip("dmxshm.view.foxglove")
    run = ["run", "--steps", "5", "--camera", "0x0"]
    err = refused([*run, "--foxglove", "--foxglove-host", "0.0.0.0"], capsys)
    assert "--allow-remote" in err
    err = refused([*run, "--view", "--foxglove", "--view-port", "9000", "--foxglove-port",
                   "9000"], capsys)
    assert "both 9000" in err
    monkeypatch.setitem(sys.modules, "foxglove", None)  # import foxglove fails
    assert "pip install" in refused([*run, "--foxglove"], capsys)


def test_agents_default_to_one_or_to_none_beside_external_agents() -> None:
    r = CliRunner().invoke(cli, ["run", "--steps", "2", "--camera", "0x0", "--robots", "1"])
    assert r.exit_code == 0, r.output
    assert "slot-" not in r.output  # one built-in agent, no slot
    r = CliRunner().invoke(cli, ["run", "--robots", "1", "--external-agents", "1",
                                 "--agents", "1"])
    assert r.exit_code == EXIT_USAGE and "2 agents for 1 robots" in r.output
