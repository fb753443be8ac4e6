"""``dmxshm maps``: the bundled maps (or the maps named), and what each holds."""

from __future__ import annotations

import json as _json
import os
from typing import TYPE_CHECKING

import click

from dmxshm.cli import print_bench
from dmxshm.cli.checks import check_folder
from dmxshm.cli.group import Command

if TYPE_CHECKING:
    from dmxshm.world.maps import MapInfo

MAP_PICTURE_ROBOTS = 8  # robots drawn on each map by `dmxshm maps --render`
MAP_PICTURE_PX = 480


@click.command("maps", cls=Command)
@click.argument("map_paths", nargs=-1, metavar="[MAP]...")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--render", "render_dir", type=click.Path(file_okay=False),
              help="Also draw each map from above as DIR/map-NAME.png, with some "
                   "robots at their start poses, as dmxshm's own renderer sees them.")
def maps(map_paths: tuple[str, ...], as_json: bool, render_dir: str | None) -> None:
    """List the bundled maps, or the MAPs named: size, road tiles, objects, and how
    many robots each holds.

    A MAP is a bundled map's name, a .json map, a gym-duckietown .yaml map or a
    Duckiematrix map folder (docs/maps.md); a map that cannot be read is refused
    naming the file, the line and the field (exit 2). A map's capacity is how many
    robots always fit on it, 0.35 m apart, whatever the seed; --robots above it is
    refused before a run starts.
    """
    from dmxshm.world.maps import MapError, map_infos

    if render_dir:
        check_folder(render_dir, "--render")
    try:
        infos = map_infos(list(map_paths) if map_paths else None)
    except MapError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(_json.dumps([m.to_dict() for m in infos], indent=2))
    else:
        print_bench.print_maps(infos)
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
        stem = os.path.basename(os.path.normpath(m.name))
        path = os.path.join(folder, f"map-{os.path.splitext(stem)[0]}.png")
        write_png(path, top_view(load_map(m.name), MAP_PICTURE_PX,
                                 robots=min(m.capacity, MAP_PICTURE_ROBOTS)))
        paths.append(path)
    return paths
