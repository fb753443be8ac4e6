"""``dmxshm maps``: the bundled maps, and what each holds."""

from __future__ import annotations

import json as _json
import os
from typing import TYPE_CHECKING

import click

from dmxshm import console
from dmxshm.cli.checks import check_folder
from dmxshm.cli.group import Command

if TYPE_CHECKING:
    from dmxshm.world.maps import MapInfo

MAP_PICTURE_ROBOTS = 8  # robots drawn on each map by `dmxshm maps --render`
MAP_PICTURE_PX = 480


@click.command("maps", cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--render", "render_dir", type=click.Path(file_okay=False),
              help="Also draw each bundled map from above as DIR/map-NAME.png, with some "
                   "robots at their start poses, as dmxshm's own renderer sees them.")
def maps(as_json: bool, render_dir: str | None) -> None:
    """List the bundled maps: size, road tiles, and how many robots each holds.

    A map's capacity is how many robots always fit on it, 0.35 m apart, whatever
    the seed; --robots above it is refused before a run starts. Pass a map by
    name (--map NAME) or give your own map file (docs/maps.md).
    """
    from dmxshm.world.maps import map_infos

    if render_dir:
        check_folder(render_dir, "--render")
    infos = map_infos()
    if as_json:
        click.echo(_json.dumps([m.to_dict() for m in infos], indent=2))
    else:
        console.print_maps(infos)
    if render_dir:
        for path in _draw(infos, render_dir):
            click.echo(f"wrote {path}", err=as_json)


def _draw(infos: list[MapInfo], folder: str) -> list[str]:
    """Each map from above, with robots at their start poses, as ``folder/map-NAME.png``."""
    from dmxshm.matrix.camera import top_view
    from dmxshm.pngio import write_png
    from dmxshm.world.maps import load_map

    os.makedirs(folder, exist_ok=True)
    paths = []
    for m in infos:
        path = os.path.join(folder, f"map-{m.name}.png")
        write_png(path, top_view(load_map(m.name), MAP_PICTURE_PX,
                                 robots=min(m.capacity, MAP_PICTURE_ROBOTS)))
        paths.append(path)
    return paths
