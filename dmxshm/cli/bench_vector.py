"""``dmxshm bench vector``: the batch VectorEnv beside gymnasium's (added to the group
of :mod:`dmxshm.cli.bench`)."""

from __future__ import annotations

import sys
from typing import Any

import click

from dmxshm.bench import vector
from dmxshm.bench.load import background_load
from dmxshm.cli import console, print_bench
from dmxshm.cli.checks import check_outputs, check_targets
from dmxshm.cli.group import Command
from dmxshm.cli.options import arg_default, check_option, count, json_file_option, plot_option

VECTOR_OBS: dict[str, tuple[Any, ...]] = {
    "state": ("state", (160, 120)), "camera64": ("camera", (64, 64)),
    "camera160": ("camera", (160, 120)), "camera64-batch": ("camera", (64, 64), "batch"),
    "camera160-batch": ("camera", (160, 120), "batch")}
"""``bench vector --obs``: each name's observation kind and camera size."""


@click.command("vector", cls=Command)
@click.option("--num-envs", type=count(1), multiple=True,
              default=tuple(arg_default(vector.run, "num_envs")), show_default=True,
              help="Sub-environments in each vector env; repeat to measure several sizes.")
@click.option("--workers", type=count(0), multiple=True,
              help="dmxshm worker processes [default: one per core]; 0: the in-process "
                   "batch; repeat for a sweep (dmxshm measured at each count, its peers "
                   "once).")
@click.option("--scaling-plot", "scaling_plot", type=click.Path(dir_okay=False),
              help="With a --workers sweep: env-steps/s against workers, beside the ideal "
                   "(workers x one environment alone), as a PNG.")
@click.option("--obs", "obs", type=click.Choice(list(VECTOR_OBS)),
              multiple=True, help="Observation kinds to measure; repeatable "
              "[default: state, camera 64x64, camera 160x120, all with tiny]; "
              "camera64-batch and camera160-batch draw with the batch renderer.")
@click.option("--env", "env", type=click.Choice(list(vector.ENVS)), default="v0",
              show_default=True, help="The environment: dmxshm/DuckieLane-v0 or -v1.")
@click.option("--physics", type=click.Choice(["bullet", "db18"]), default="bullet",
              show_default=True, help="The environment's physics (db18: Duckietown's "
              "DB18 model, docs/physics.md).")
@click.option("--quick", is_flag=True, help="1.5 s per measurement instead of 4 s.")
@click.option("--background-load", "background", type=count(0, 64), default=0,
              show_default=True, help="CPU-bound processes to run beside the "
              "measurements (a busy machine, on purpose).")
@json_file_option("Write the rows as a JSON list to this file.")
@plot_option("Draw the rates as a bar chart PNG (needs the plot extra: matplotlib).")
@check_option
def bench_vector(num_envs: tuple[int, ...], workers: tuple[int, ...], scaling_plot: str | None,
                 obs: tuple[str, ...], env: str, physics: str, quick: bool, background: int,
                 json: str | None, plot: str | None, check: bool) -> None:
    """dmxshm make_vec beside gymnasium's SyncVectorEnv and AsyncVectorEnv.

    Same environment (dmxshm/DuckieLane-v0, or --env v1, with --physics bullet or
    db18), same number of sub-environments,
    random actions; obs "state", and "camera" at 64x64 and 160x120. Measures
    dmxshm's step() ("dmxshm"), its asynchronous recv()/send() at batch_size
    n/2 ("dmx-recv"), and the same workers stepping their worlds with no
    handoff at all ("free", the reference for both). Reports env-steps/s,
    the ratios, and the scaling efficiency (dmxshm / (cores x one environment
    in one process)). Each rate is the median of three windows after a 0.5 s
    warm-up; a full run of one size takes about two minutes.
    """
    check_outputs(json, plot)
    configs = tuple(VECTOR_OBS[k] for k in obs) or vector.OBS_CONFIGS
    check_outputs(plot=scaling_plot)
    per_workers = len(vector.PER_WORKERS) * max(len(workers), 1)
    n_runs = len(configs) * (1 + (len(vector.IMPLS) - len(vector.PER_WORKERS) + per_workers)
                             * len(num_envs))
    with background_load(background), \
            click.progressbar(length=n_runs, label="bench vector", file=sys.stderr,
                              item_show_func=lambda s: s) as bar:
        rows = vector.run(num_envs=num_envs, workers=workers or None, quick=quick,
                          configs=configs, progress=lambda label: bar.update(1, label),
                          recheck=check, env=env, physics=physics)
    if background:
        click.echo(f"measured beside {background} CPU-bound process(es) (--background-load)")
    print_bench.print_vector_rows(rows, vector.summary(rows))
    print_bench.print_breakdowns(rows)
    from dmxshm.bench.plot import plot_scaling, plot_vector

    console.write_outputs(vector.as_dicts(rows), json, plot, lambda p: plot_vector(rows, p))
    if scaling_plot:
        console.write_outputs(None, None, scaling_plot, lambda p: plot_scaling(rows, p))
    check_targets(vector.targets(rows), check)
