"""``dmxshm bench``: dmxshm measured beside its peers in the same run."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from dmxshm.bench import ipc, render
from dmxshm.cli import bench_vector, bench_world, console, print_bench
from dmxshm.cli.checks import check_folder, check_outputs, check_targets, usage_errors
from dmxshm.cli.group import Group
from dmxshm.cli.options import (
    arg_default,
    check_option,
    count,
    fmt_wh,
    json_file_option,
    parse_wh,
    plot_option,
    seconds,
)
from dmxshm.sim.spec import PHYSICS

IPC_QUICK = {"rounds": 2000, "repeats": 1, "warmup": 200}
"""``bench ipc --quick``: fewer rounds, one repeat, a shorter warm-up (under 30 s)."""
IPC_FULL = {name: arg_default(ipc.run, name) for name in IPC_QUICK}
"""``bench ipc``: the library's own defaults."""

@click.group(cls=Group)
def bench() -> None:
    """Benchmarks that measure dmxshm beside its peers in the same run."""


@bench.command("ipc")
@click.option("--quick", is_flag=True, help="Fewer rounds, one repeat: under 30 s.")
@click.option("--rounds", type=count(10), default=None,
              help="Timed round trips per cell and repeat [default: "
                   f"{IPC_FULL['rounds']}; --quick {IPC_QUICK['rounds']}].")
@click.option("--repeats", type=count(1), default=None,
              help="Interleaved passes over all cells [default: "
                   f"{IPC_FULL['repeats']}; --quick {IPC_QUICK['repeats']}].")
@json_file_option("Write the rows as a JSON list to this file.", writable=True)
@plot_option("Draw a bar chart PNG (needs the plot extra: matplotlib).", writable=True)
@check_option
def bench_ipc(quick: bool, rounds: int | None, repeats: int | None, json: str | None,
              plot: str | None, check: bool) -> None:
    """Round trip between two processes: semaphore, ring, pipe and queue.

    Ping-pong with an 8-byte payload and a 160x120x3 uint8 frame, with both
    processes pinned to one core and to two cores. The raw posix_ipc
    semaphore pair (plus a plain shared-memory copy of the payload) is the
    floor; each transport is reported as a ratio to it.
    """
    check_outputs(json, plot)
    preset = IPC_QUICK if quick else IPC_FULL
    rounds = rounds or preset["rounds"]
    repeats = repeats or preset["repeats"]
    ncells = len(ipc.TRANSPORTS) * len(ipc.PAYLOADS) * len(ipc.pinnings()) * repeats
    with click.progressbar(length=ncells, label="bench ipc", file=sys.stderr,
                           show_pos=True, item_show_func=lambda s: s) as bar:
        rows = ipc.run(rounds=rounds, repeats=repeats, warmup=preset["warmup"],
                       progress=lambda label: bar.update(1, label))
    print_bench.print_ipc_table(rows)
    from dmxshm.bench.plot import plot_ipc

    console.write_outputs(ipc.as_dicts(rows), json, plot, lambda p: plot_ipc(rows, p))
    check_targets(ipc.targets(rows), check)


@bench.command("render")
@click.option("--sizes", default=",".join(fmt_wh(wh) for wh in render.DEFAULT_SIZES),
              show_default=True, help="Image sizes, WxH, comma-separated.")
@click.option("--seconds", type=seconds(0.01),
              default=arg_default(render.run, "seconds"), show_default=True,
              help="Least time each figure is measured over.")
@click.option("--renderer", "renderers", type=click.Choice(list(render.RENDERERS)),
              multiple=True, help="Renderers to compare [default: "
                                  f"{', '.join(arg_default(render.run, 'renderers'))}].")
@click.option("--cameras", type=count(1), default=arg_default(render.run, "cameras"),
              show_default=True, help="Views drawn per call (B): the batch renderer draws "
                                      "them at once, tiny and EGL one after another.")
@click.option("--robots", type=count(1), default=arg_default(render.run, "robots"),
              show_default=True, help="Robots in the scene (the cameras are on the first).")
@click.option("--images", "images_dir", type=click.Path(file_okay=False),
              help="Write each renderer's first view per size as PNG here.")
@click.option("--lens/--no-lens", default=True, show_default=True,
              help="Also time the Duckiebot's lens camera (--camera duckiebot's model) at "
                   "each size.")
@click.option("--map", "map_name", default=arg_default(render.run, "map_name"),
              show_default=True, help="The scene's map (a name, a file or a folder).")
@click.option("--looks", default=",".join(arg_default(render.run, "looks")),
              show_default=True,
              help="The batch renderer's looks to time, comma-separated (flat: every "
                   "renderer's; duckietown: the batch renderer's own, as batch-duckietown "
                   "rows, against its flat look in the same run).")
@json_file_option("Write the figures as JSON to this file.", writable=True)
@plot_option("Draw frames/s per core as a bar chart PNG (needs the plot extra: matplotlib).",
             writable=True)
@check_option
def bench_render(sizes: str, seconds: float, renderers: tuple[str, ...], cameras: int,
                 robots: int, images_dir: str | None, lens: bool, map_name: str, looks: str,
                 json: str | None, plot: str | None, check: bool) -> None:
    """The camera renderers side by side, on the same scene: frames/s per core with
    --cameras views per call at each size and camera, and how each renderer's images
    differ from tiny's.

    tiny is pybullet's CPU renderer; egl its EGL plugin (on a GPU, or on Mesa's
    software OpenGL, held to one thread); batch dmxshm's own, which draws every view of
    a call at once. A renderer that cannot load here is named with the reason and left
    out. --check: issue 30's targets (batch >= 20x tiny at 64x64, >= 10x at 160x120 and
    640x480; its difference to tiny <= 1.5x EGL's) and issue 46's (the batch renderer's
    Duckietown look >= 0.8x its flat look's frames/s), exit 3 if one is missed.
    """
    check_outputs(json, plot)
    if images_dir:
        check_folder(images_dir, "--images")
    wh = tuple(parse_wh(None, None, v.strip()) for v in sizes.split(",") if v.strip())
    if not wh or any(w <= 0 or h <= 0 for w, h in wh):
        raise click.BadParameter(f"{sizes!r}: give sizes as WxH,WxH (each positive)",
                                 param_hint="--sizes")
    chosen = renderers or arg_default(render.run, "renderers")
    from dmxshm.matrix.camera import LOOKS

    look_list = tuple(v.strip() for v in looks.split(",") if v.strip())
    if not look_list or any(v not in LOOKS for v in look_list):
        raise click.BadParameter(f"{looks!r}: give looks of {', '.join(LOOKS)}, "
                                 "comma-separated", param_hint="--looks")
    from dmxshm.world.maps import MapError, load_map

    try:
        load_map(map_name)
    except MapError as exc:
        raise click.UsageError(str(exc)) from None
    runs = len(chosen) + (len(look_list) - 1 if "batch" in chosen else 0)
    with click.progressbar(length=len(wh) * runs * (2 if lens else 1),
                           label="bench render", file=sys.stderr,
                           item_show_func=lambda s: s) as bar:
        result = render.run(wh, chosen, seconds, robots=robots, map_name=map_name, lens=lens,
                            cameras=cameras, looks=look_list,
                            progress=lambda label: bar.update(1, label))
    print_bench.print_render(result)
    if images_dir:
        for path in _write_images({name: {k: v[0] for k, v in by.items()}
                                   for name, by in result.images.items()}, images_dir):
            click.echo(f"wrote {path}")
    from dmxshm.bench.plot import plot_render

    console.write_outputs(result.to_dict(), json, plot, lambda p: plot_render(result.rows, p))
    check_targets(result.targets(), check)


def _write_images(images: dict[str, dict[str, Any]], folder: str) -> list[str]:
    """Each renderer's image at each size as ``folder/render-NAME-SIZE.png``."""
    from dmxshm.pngio import write_png

    os.makedirs(folder, exist_ok=True)
    paths = []
    for name, by_size in images.items():
        for size, img in by_size.items():
            path = os.path.join(folder, f"render-{name}-{size}.png")
            write_png(path, img)
            paths.append(path)
    return paths


@bench.command("network")
@click.option("--quick", is_flag=True, help="Fewer steps: about 15 s.")
@click.option("--physics", type=click.Choice(list(PHYSICS)), default="bullet",
              show_default=True, help="The network's physics (db18: Duckietown's DB18 "
              "model, docs/physics.md). The --check targets are Bullet's.")
@json_file_option("Write the rows as a JSON list to this file.")
@plot_option("Draw the time breakdown as a PNG (needs the plot extra: matplotlib).")
@check_option
def bench_network(quick: bool, physics: str, json: str | None, plot: str | None,
                  check: bool) -> None:
    """Gym-mode steps/s and the framework's overhead per step, beside its floor.

    1, 4 and 8 robots, without and with a 160x120 camera, one renderer and
    one idle agent. The overhead is the wall time of a step not spent in
    physics, rendering or agent code; the floor is the time of the same
    handoffs as raw posix_ipc semaphores between the same processes.
    """
    from dmxshm.bench import network

    check_outputs(json, plot)
    with click.progressbar(length=len(network.CONFIGS), label="bench network",
                           file=sys.stderr, item_show_func=lambda s: s) as bar:
        rows = network.run(quick=quick, progress=lambda label: bar.update(1, label),
                           physics=physics)
    click.echo(f"physics: {physics}")
    print_bench.print_network_rows(rows)
    print_bench.print_network_busy(rows)
    from dmxshm.bench.plot import plot_network

    console.write_outputs(network.as_dicts(rows), json, plot, lambda p: plot_network(rows, p))
    check_targets(network.targets(rows), check)


@bench.command("agents")
@click.option("--quick", is_flag=True, help="2 pairs of 500 steps, 3 s realtime: about 30 s.")
@click.option("--pairs", type=count(1), default=None,
              help="Gym runs of each kind, alternating  [default: 5; 2 with --quick].")
@json_file_option("Write the figures as JSON to this file.")
@check_option
def bench_agents(quick: bool, pairs: int | None, json: str | None, check: bool) -> None:
    """An outside agent (dmxshm.connect) beside a built-in one, in the same run.

    Gym: 4 robots, no camera, lane-follow, built-in and outside runs alternating;
    steps/s from step 20 to the end (the client's connection not counted), ratio of
    the medians (target >= 0.9), and whether each pair's digests agree. Realtime:
    each agent's command age from its making to the engine step that applied it.
    """
    from dmxshm.bench import agents

    check_outputs(json)
    res = agents.run(pairs=pairs or (2 if quick else 5), steps=500 if quick else 1000,
                     duration_s=3.0 if quick else 5.0,
                     progress=lambda s: click.echo(f"bench agents: {s}", err=True))
    print_bench.print_agents_bench(res)
    console.write_outputs(res.to_dict(), json, None, None)
    check_targets(res.targets(), check)


@bench.command("duckiematrix")
@click.option("--duration", "duration_s", type=seconds(2.0), default=10.0,
              show_default=True, help="Seconds of the realtime run.")
@click.option("--renderer", type=click.Choice(["tiny", "egl", "batch", "auto"]), default="egl",
              show_default=True, help="The camera renderer (640x480 frames).")
@json_file_option("Write the figures as JSON to this file.")
@check_option
def bench_duckiematrix(duration_s: float, renderer: str, json: str | None,
                       check: bool) -> None:
    """A duckietown-sdk agent through the Duckiematrix bridge (--duckiematrix).

    One realtime run, one robot, 640x480 camera; the agent (duckietown-sdk's DB21J,
    unchanged) answers each frame with motors.publish(). Reports the frames it
    received over those the camera made (target >= 0.9), each PWM command's age
    from publish() to the engine step that applied it (target p50 <= 5 ms) and the
    bridge's CPU share. Needs pip install 'dmxshm[duckiematrix]' duckietown-sdk.
    """
    from dmxshm.bench import duckiematrix

    check_outputs(json)
    with usage_errors():
        duckiematrix.require_sdk()
    res = duckiematrix.run(duration_s=duration_s, renderer=renderer)
    for line in res.lines():
        click.echo(line)
    console.write_outputs(res.to_dict(), json, None, None)
    check_targets(res.targets(), check)


# The world's benchmarks (objects, routes) live in a module of their own.
bench.add_command(bench_vector.bench_vector)
bench.add_command(bench_world.bench_objects)
bench.add_command(bench_world.bench_routes)
bench.add_command(bench_world.bench_noise)
bench.add_command(bench_world.bench_randomize)
