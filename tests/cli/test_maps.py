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
