"""``dmxshm bench objects``, ``routes``, ``noise`` and ``randomize``: the world's costs,
its lane follower through intersections, what sensor noise and domain randomisation
cost (added to the group of :mod:`dmxshm.cli.bench`)."""

from __future__ import annotations

import sys

import click

from dmxshm.bench.noise import CASES
from dmxshm.cli import console
from dmxshm.cli.checks import check_outputs, check_targets
from dmxshm.cli.group import Command
from dmxshm.cli.options import (
    check_option,
    count,
    json_file_option,
    parse_wh,
    seconds,
)


@click.command("objects", cls=Command)
@click.option("--objects", "n_objects", type=count(1), default=50,
              show_default=True, help="Objects on the map of the runs with objects.")
@click.option("--robots", type=count(1), default=4, show_default=True)
@click.option("--steps", type=count(1), default=600, show_default=True,
              help="Gym steps a run.")
@click.option("--pairs", type=count(1), default=3, show_default=True,
              help="Runs of each kind, alternating.")
@click.option("--camera", default="160x120", show_default=True,
              help="Camera size WxH (0x0: none).")
@json_file_option("Write the figures as JSON to this file.")
@check_option
def bench_objects(n_objects: int, robots: int, steps: int, pairs: int, camera: str,
                  json: str | None, check: bool) -> None:
    """What a map's objects cost: gym steps/s on the grid's tiles with N objects off
    the road against the same tiles without them, runs alternating (target >= 0.8).
    """
    from dmxshm.bench import objects

    check_outputs(json)
    wh = parse_wh(None, None, camera)
    with click.progressbar(length=2 * pairs, label="bench objects", file=sys.stderr,
                           item_show_func=lambda s: s) as bar:
        res = objects.run(n_objects, robots, steps, pairs, wh,
                          progress=lambda label: bar.update(1, label))
    w, h = res.camera
    click.echo(f"grid tiles, {res.robots} robots, lane-follow, camera {w}x{h}, {res.steps} "
               f"gym steps a run, {pairs} runs of each, alternating")
    click.echo("steps/s without objects: " + ", ".join(f"{v:.1f}" for v in
                                                       res.without_steps_per_s))
    click.echo(f"steps/s with {res.objects}: " + ", ".join(f"{v:.1f}" for v in
                                                         res.with_steps_per_s))
    click.echo(f"with / without (medians): {res.ratio:.3f}; runs where a robot touched an "
               f"object: {res.collisions}")
    if json:
        console.write_json(res.to_dict(), json)
    check_targets(res.targets(), check)


@click.command("routes", cls=Command)
@click.option("--seeds", default="0,1,2", show_default=True, help="Seeds, one run each.")
@click.option("--robots", type=count(1), default=8, show_default=True)
@click.option("--steps", type=count(1), default=3000, show_default=True)
@click.option("--map", "map_name", default="grid", show_default=True,
              help="A map with intersections (a name, a file or a folder).")
@click.option("--route", default="seed", show_default=True,
              help="'seed', or turns like left,straight,right.")
@json_file_option("Write the figures as JSON to this file.")
@check_option
def bench_routes(seeds: str, robots: int, steps: int, map_name: str, route: str,
                 json: str | None, check: bool) -> None:
    """The lane follower through intersections, with routes: per seed, the states
    each robot spent off the road, the turns it took, its longest standstill and the
    collisions (targets: none off the road, every robot turns, no standstill over
    10 s).
    """
    from dmxshm.bench import routes
    from dmxshm.world.maps import MapError, load_map
    from dmxshm.world.routes import RouteError, parse_route

    check_outputs(json)
    try:
        picked = tuple(int(v) for v in seeds.split(",") if v.strip())
        parse_route(route)
        load_map(map_name)
    except ValueError as exc:
        raise click.UsageError(f"--seeds: {seeds!r} is not a list of integers"
                               if not isinstance(exc, (RouteError, MapError))
                               else str(exc)) from None
    if not picked:
        raise click.UsageError("--seeds: give at least one seed")
    with click.progressbar(length=len(picked), label="bench routes", file=sys.stderr,
                           item_show_func=lambda s: s) as bar:
        res = routes.run(picked, robots, steps, map_name, route,
                         progress=lambda label: bar.update(1, label))
    click.echo(f"map {res.map_name}, {res.robots} robots, lane-follow, --route {route}, "
               f"{res.steps} gym steps a seed")
    click.echo(f"{'seed':>4} {'off-road':>8} {'turns L/S/R per robot':<42} "
               f"{'max still s':>11} {'waits':>6} {'hits r/o':>8} {'steps/s':>8}")
    for r in res.runs:
        turns = " ".join(f"{a}/{b}/{c}" for a, b, c in zip(
            r.turns["left"], r.turns["straight"], r.turns["right"], strict=True))
        click.echo(f"{r.seed:>4} {sum(r.off_road_steps):>8} {turns:<42} "
                   f"{max(r.max_still_s):>11.1f} {sum(r.stop_line_waits):>6} "
                   f"{sum(r.robot_collisions):>3}/{sum(r.object_collisions):<4} "
                   f"{r.steps_per_s:>8.1f}")
    if json:
        console.write_json(res.to_dict(), json)
    check_targets(res.targets(), check)


@click.command("noise", cls=Command)
@click.option("--robots", type=count(1), default=4, show_default=True,
              help="Robots of the network runs.")
@click.option("--steps", type=count(1), default=600, show_default=True,
              help="Gym steps a network run.")
@click.option("--camera", default="160x120", show_default=True,
              help="The network's camera WxH in the camera case.")
@click.option("--num-envs", type=count(1), default=16, show_default=True,
              help="Envs of the make_vec cases (DuckieLane-v1).")
@click.option("--vec-camera", default="64x64", show_default=True,
              help="The make_vec camera case's image WxH.")
@click.option("--seconds", type=seconds(0.1), default=2.0, show_default=True,
              help="Least time a make_vec figure is measured over.")
@click.option("--repeats", type=count(1), default=3, show_default=True,
              help="Measurements of each case each way, alternating on and off.")
@click.option("--cases", default=",".join(CASES), show_default=True,
              help="Which cases, comma-separated.")
@json_file_option("Write the figures as JSON to this file.")
@check_option
def bench_noise(robots: int, steps: int, camera: str, num_envs: int, vec_camera: str,
                seconds: float, repeats: int, cases: str, json: str | None,
                check: bool) -> None:
    """What sensor noise costs: gym steps/s of a network and env-steps/s of make_vec
    (DuckieLane-v1) with the noise on against off, alternating in one run (targets:
    >= 0.9 with a camera, >= 0.85 state-only).
    """
    from dmxshm.bench import noise

    check_outputs(json)
    wh, vec_wh = parse_wh(None, None, camera), parse_wh(None, None, vec_camera)
    picked = tuple(c.strip() for c in cases.split(",") if c.strip())
    unknown = [c for c in picked if c not in CASES]
    if unknown or not picked:
        raise click.UsageError(f"--cases: {', '.join(unknown) or 'none given'}; the cases "
                               f"are {', '.join(CASES)}")
    with click.progressbar(length=2 * repeats * len(picked), label="bench noise",
                           file=sys.stderr, item_show_func=lambda s: s) as bar:
        res = noise.run(robots, steps, wh, num_envs, vec_wh, seconds, repeats, picked,
                        progress=lambda label: bar.update(1, label))
    w, h = res.camera
    vw, vh = res.vec_camera
    click.echo(f"network: {res.robots} robots, lane-follow, {res.steps} gym steps a run, "
               f"camera {w}x{h} or none; make_vec: {res.num_envs} DuckieLane-v1 envs, "
               f"camera {vw}x{vh} or state, random duties, >= {res.seconds:g} s a figure; "
               f"{res.repeats} of each, alternating")
    click.echo(f"{'case':<16} {'unit':<12} {'noise on':>26} {'noise off':>26} {'on/off':>7}")
    for c in res.cases:
        click.echo(f"{c.name:<16} {c.unit:<12} {', '.join(f'{v:.0f}' for v in c.on):>26} "
                   f"{', '.join(f'{v:.0f}' for v in c.off):>26} {c.ratio:>7.3f}")
    if json:
        console.write_json(res.to_dict(), json)
    check_targets(res.targets(), check)


@click.command("randomize", cls=Command)
@click.option("--num-envs", type=count(1), default=16, show_default=True,
              help="Envs of the batch (DuckieLane-v1).")
@click.option("--camera", default="64x64", show_default=True,
              help="The camera case's image WxH.")
@click.option("--seconds", type=seconds(0.1), default=2.0, show_default=True,
              help="Least time an env-steps/s figure is measured over.")
@click.option("--repeats", type=count(1), default=3, show_default=True,
              help="Batches of each kind, alternating randomised and not.")
@click.option("--resets", type=count(1), default=5, show_default=True,
              help="Whole-batch resets timed per batch (their median).")
@click.option("--robots", type=count(1), default=4, show_default=True,
              help="Robots of the network case (gym, PWM, the lane follower).")
@click.option("--steps", type=count(10), default=300, show_default=True,
              help="Gym steps of each network run.")
@click.option("--network-camera", default="160x120", show_default=True,
              help="The network case's lens camera WxH.")
@json_file_option("Write the figures as JSON to this file.")
def bench_randomize(num_envs: int, camera: str, seconds: float, repeats: int, resets: int,
                    robots: int, steps: int, network_camera: str, json: str | None) -> None:
    """What domain randomisation costs: make_vec (DuckieLane-v1) env-steps/s and reset
    time with randomize=True against none, state and camera observations, and a
    network's gym steps/s and start time, alternating in one run.
    """
    from dmxshm.bench import randomize

    check_outputs(json)
    wh = parse_wh(None, None, camera)
    net_wh = parse_wh(None, None, network_camera)
    with click.progressbar(length=2 * repeats * len(randomize.OBS), label="bench randomize",
                           file=sys.stderr, item_show_func=lambda s: s) as bar:
        res = randomize.run(num_envs, wh, seconds, repeats, resets,
                            progress=lambda label: bar.update(1, label), robots=robots,
                            steps=steps, network_camera=net_wh)
    w, h = res.camera
    nw, nh = res.network_camera
    click.echo(f"make_vec: {res.num_envs} DuckieLane-v1 envs, state or camera {w}x{h}, random "
               f"duties, >= {res.seconds:g} s a figure, reset: median of {res.resets}; "
               f"network: {res.robots} robots, gym, PWM, lens camera {nw}x{nh}, {res.steps} "
               f"steps (gym steps/s; in place of the reset, the run's start and end); "
               f"{res.repeats} of each, alternating")
    click.echo(f"{'case':<7} {'steps/s randomised':>24} {'not':>24} {'ratio':>6} "
               f"{'reset ms randomised':>22} {'not':>18} {'ratio':>6}")
    for c in res.cases:
        click.echo(f"{c.obs:<7} {', '.join(f'{v:.0f}' for v in c.on):>24} "
                   f"{', '.join(f'{v:.0f}' for v in c.off):>24} {c.ratio:>6.3f} "
                   f"{', '.join(f'{v * 1e3:.1f}' for v in c.reset_on_s):>22} "
                   f"{', '.join(f'{v * 1e3:.1f}' for v in c.reset_off_s):>18} "
                   f"{c.reset_ratio:>6.2f}")
    if json:
        console.write_json(res.to_dict(), json)
