"""``dmxshm maps``."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner

from dmxshm.cli import cli
from dmxshm.cli.maps import MAP_PICTURE_PX
from tests.cli.common import CLI_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLI_TIMEOUT_S)


def test_maps_lists_each_maps_capacity_and_draws_it(tmp_path) -> None:  # noqa: ANN001
    result = CliRunner().invoke(cli, ["maps", "--json", "--render", str(tmp_path)])
    assert result.exit_code == 0, result.output
    infos = {m["name"]: m for m in json.loads(result.stdout)}
    assert infos["loop"]["capacity"] == 16 and infos["big-loop"]["capacity"] >= 64
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"map-{n}.png" for n in infos)
    for name in infos:
        png = (tmp_path / f"map-{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert MAP_PICTURE_PX in struct.unpack(">II", png[16:24])  # IHDR: width, height


def test_maps_lists_and_draws_a_duckietown_map_and_refuses_a_bad_one(tmp_path) -> None:  # noqa: ANN001
    from tests.world.test_dtmaps import GYM_MAP

    good, bad = tmp_path / "town.yaml", tmp_path / "bad.yaml"
    good.write_text(GYM_MAP)
    bad.write_text(GYM_MAP.replace("kind: cone", "kind: pylon"))
    out = tmp_path / "pictures"
    result = CliRunner().invoke(cli, ["maps", "--json", "--render", str(out), str(good)])
    assert result.exit_code == 0, result.output
    (info,) = json.loads(result.stdout)
    assert (info["name"], info["objects"], info["cols"], info["rows"]) == (str(good), 5, 5, 5)
    assert [p.name for p in out.iterdir()] == ["map-town.png"]
    result = CliRunner().invoke(cli, ["maps", str(bad)])
    assert result.exit_code == 2
    assert f"map {bad}, line 16: field 'objects.cone1.kind': unknown object kind 'pylon'" \
        in result.output


def test_run_refuses_a_bad_map_before_it_starts(tmp_path) -> None:  # noqa: ANN001
    from tests.world.test_dtmaps import GYM_MAP

    bad = tmp_path / "bad.yaml"
    bad.write_text(GYM_MAP.replace("pos: [2.5, 1.25]", "pos: [2.5, north]"))
    result = CliRunner().invoke(cli, ["run", "--map", str(bad), "--steps", "5"])
    assert result.exit_code == 2
    assert f"map {bad}, line 12: field 'objects.duckie1.pos[1]'" in result.output
