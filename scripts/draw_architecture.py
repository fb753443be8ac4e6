"""Draw the package map of dmxshm: docs/architecture.png.

Boxes are the packages and top-level modules of ``dmxshm``, arranged as
layers (a layer imports only from layers below it): the entry points, the
front-ends, the simulation core (``sim/``), the models (``world/``,
``matrix/``), the process layer (``proc/``) and ``shm/``; an arrow A -> B means
"A imports B". ``settings.py``, ``errors.py`` and ``profiling.py`` import
nothing of dmxshm: they are drawn as the floor, without arrows. The
Duckiematrix bridge, the log / view modules and the RL adapters (``frameworks/``) share
one box beside the front-ends, without arrows.

The arrows are the package-level imports read from the source with ``ast``
(absolute imports, as the package writes them) at the time of drawing; the script
prints the imports the picture leaves out on purpose, and exits with
status 1 (after drawing) when the source has an import the picture neither
draws nor explains, or lost one it draws or lists: a stale picture is noticed when it
is redrawn.

Run: python scripts/draw_architecture.py [OUT.png]   (needs matplotlib)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dmxshm"
OUT = ROOT / "docs" / "architecture.png"

# Layer colours, top (entry points) to bottom (the floor).
ENTRY, BENCH, FRONT, BESIDE, CORE, MODELS, PROCESS, SHM, FLOOR = (
    "#e8e0f4", "#f6e3d0", "#d9e8f6", "#eef3f8", "#f8d9dc", "#dcefdc", "#d6ecec", "#fbf1c7",
    "#e6e6e6")

# name: (x, y, width, height, colour, title, lines of contents)
BOXES: dict[str, tuple[float, float, float, float, str, str, list[str]]] = {
    "cli": (1, 82, 33, 9.5, ENTRY, "cli/",
            ["the `dmxshm` command, one module a",
             "command: click options -> typed library",
             "calls; cli/console.py prints; cli/sysinfo.py: info"]),
    "bench": (38, 82, 28, 9.5, BENCH, "bench/",
              ["ipc, network, vector, render,",
               "agents, floor, faults, plot:",
               "the `dmxshm bench` figures"]),
    "beside": (70, 82, 29, 9.5, BESIDE, "beside the front-ends",
               ["duckiematrix/: the Duckiematrix bridge",
                "view/, logs.py: live view, log format",
                "frameworks/: sb3, rllib, the RL adapters",
                "(their imports listed, not drawn)"]),
    "marl": (45, 64.5, 18.5, 11.5, FRONT, "marl/",
             ["parallel_env: one world",
              "   of many robots (MultiLane,",
              "   batch/lanes.py),",
              "connect_parallel: a network,",
              "   as PettingZoo ParallelEnvs"]),
    "duckietown": (68, 64.5, 24, 11.5, FRONT, "duckietown/",
                   ["the gym-duckietown drop-in:",
                    "DuckietownEnv, Simulator",
                    "(legacy: the old gym API)",
                    "over DuckieLane-v1"]),
    "spine": (1, 43, 18, 17, FRONT, "spine/",
              ["loop: the pinned",
               "   fixed-rate cycle",
               "clock, law, records,",
               "   state_machine",
               "can: mock / sim CAN",
               "run: `dmxshm spine`",
               "agent, network_spine,",
               "   simulation, plot"]),
    "network": (22, 43, 27, 17, FRONT, "network/",
                ["config: NetworkConfig",
                 "plan, ports: rings by name",
                 "supervisor: Network (one run)",
                 "engine, renderer, camera,",
                 "   agent, slot (the roles)",
                 "taps, results, summary",
                 "client: dmxshm.connect (outside",
                 "   agents); replay, realtime_replay"]),
    "batch": (54, 43, 32, 17, FRONT, "batch/",
              ["env: DuckieLane-v0, one world",
               "env_v1: DuckieLane-v1",
               "vector: DmxVectorEnv, make_vec:",
               "   W workers, one segment,",
               "   go / done semaphores",
               "shard: the worlds of a worker",
               "   (1 robot, or R: lanes.MultiLane)",
               "kinds: which env a batch holds"]),
    "proc": (1, 24, 34, 14, PROCESS, "proc/",
             ["supervisor: Supervisor (children)",
              "watch: the one watch policy",
              "child: python -m dmxshm.proc",
              "program: a whole program (view)",
              "outcome, gate (the start gate),",
              "cpus, prctl: pinning, names"]),
    "sim": (45, 26, 54, 12, CORE, "sim/   the one simulation core",
            ["spec: SimSpec and PRESETS (network, v0, v1, multi, dropin)",
             "robots: robot_make, a draw -> motors, noise, physics",
             "sensing: the sensors' registry; Sensing (a block of robots)",
             "obs: the state vectors, v0's 11 floats, v1's 14 (state_v1)",
             "scoring: Scoring, lanes, distance, episodes (the engine's)"]),
    "matrix": (45, 11, 25, 11, MODELS, "matrix/",
               ["sensors and renderers:",
                "camera, lens, cameras, noise,",
                "sensors, obs (a dtype),",
                "batch_render, raycast"]),
    "world": (74, 11, 25, 11, MODELS, "world/",
              ["pybullet physics: world, robot,",
               "motor, state, maps, tiles, lanes,",
               "routes, traffic, randomize",
               "+ policies.py: the agents"]),
    "shm": (1, 0, 98, 8, SHM, "shm/   (imports nothing above it)",
            ["segment, registry, names, clean: create (O_EXCL, mode 0600), own, unlink, "
             "sweep orphans;   slot: outside agents' slots",
             "ring: blocking (gym mode) | overwrite (realtime: seqlock, fence);   "
             "barrier: the start gate of every run",
             "waiting, peers, signals: every wait bounded; a dead peer named; "
             "Ctrl-C and SIGTERM kept"]),
}

# (from, to, x where it leaves, x where it arrives, route): "from imports to".
# Routes: "down" (bottom edge to top edge), "side" (side to side, same row),
# "in" (bottom edge to the facing side of the box, near its top).
ARROWS: list[tuple[str, str, float, float, str]] = [
    ("cli", "bench", 34, 38, "side"),
    ("cli", "spine", 9, 9, "down"),
    ("cli", "network", 26, 26, "down"),
    ("bench", "network", 43, 43, "down"),
    ("bench", "batch", 65.5, 65.5, "down"),
    ("marl", "network", 47.8, 47.8, "down"),
    ("marl", "sim", 51.5, 51.5, "down"),
    ("marl", "batch", 58, 58, "down"),
    ("duckietown", "batch", 77, 77, "down"),
    ("duckietown", "sim", 89, 89, "down"),
    ("network", "spine", 22, 19, "side"),
    ("network", "proc", 30, 30, "down"),
    ("network", "sim", 46.5, 46.5, "down"),
    ("network", "shm", 40, 40, "down"),
    ("batch", "proc", 55, 35, "in"),
    ("batch", "sim", 72, 72, "down"),
    ("spine", "proc", 9, 9, "down"),
    ("proc", "shm", 18, 18, "down"),
    ("sim", "matrix", 57, 57, "down"),
    ("sim", "world", 86, 86, "down"),
    ("matrix", "world", 70, 74, "side"),
]
# One colour per importing box, so that crossing arrows can be told apart.
ARROW_COLOURS = {"cli": "#6a4c93", "bench": "#b5651d", "marl": "#8b1a6b",
                 "duckietown": "#7a7a00", "network": "#1f5fa8", "batch": "#d0741c",
                 "spine": "#2e8b57", "proc": "#2a7f7f", "sim": "#c0392b",
                 "matrix": "#555555"}

# Imports in the source that the picture does not draw as arrows, with the reason.
# The front-ends' own worlds and cameras: each front-end still makes its own World
# and sensors beside sim/ (docs/architecture.md, "The simulation core").
OWN = "the front-end's own, beside sim/'s, to move into sim/"
NOT_DRAWN: dict[tuple[str, str], str] = {
    # The entry points.
    ("cli", "dmxshm"): "the version number",
    ("cli", "shm"): "clean, signals, info's capabilities",
    ("cli", "world"): "maps, to check --map and --route; pngio for maps --render",
    ("cli", "matrix"): "maps --render's top view",
    ("cli", "profiling"): "the profile's report types, printed by cli/console.py (types only)",
    ("cli", "logs"): "run --log, log info, view (logs.py, view/)",
    ("cli", "duckiematrix"): "run --duckiematrix checks its names and starts the bridge",
    ("bench", "dmxshm"): "bench agents and faults drive outside agents (dmxshm.connect)",
    ("bench", "duckiematrix"): "bench duckiematrix starts the bridge",
    ("bench", "matrix"): "bench render's cameras",
    ("bench", "world"): "bench render's worlds, bench objects' maps, the agents' policies",
    ("bench", "proc"): "the floor's children, the outside agents' programs",
    ("bench", "shm"): "rings, raw semaphores and registries of its floors and faults",
    ("bench", "spine"): "bench plot draws dmxshm spine's typed report (a type only)",
    # dmxshm/__init__.py: names given lazily, imported when first used.
    ("dmxshm", "batch"): "dmxshm.make_vec, imported when called",
    ("dmxshm", "network"): "dmxshm.connect (network/client.py), imported when called",
    ("dmxshm", "marl"): "dmxshm.parallel_env and dmxshm.connect_parallel, imported when "
                        "called",
    # The front-ends.
    ("network", "world"): "the engine's and the renderers' World (" + OWN + "); the agents' "
                          "policies (policies.py, drawn in world)",
    ("network", "matrix"): "the renderers' cameras, lens and noise (" + OWN + ")",
    ("network", "logs"): "each process's part of an MCAP log; the view's rings (view/)",
    ("network", "profiling"): "profiling.py, in the floor: the run's process samples",
    ("batch", "world"): "each env's World, motors and routes (" + OWN + ")",
    ("batch", "matrix"): "each env's camera and time of flight (" + OWN + ")",
    ("batch", "shm"): "its one segment, go / done semaphores and fences (in the batch box)",
    ("batch", "profiling"): "profiling.py, in the floor: the workers' samples",
    ("marl", "world"): "MultiLane's World, motors, routes and scores (" + OWN + ")",
    ("marl", "matrix"): "MultiLane's cameras and noise (" + OWN + ")",
    ("duckietown", "world"): "its map, robot and motor constants",
    ("duckietown", "matrix"): "its camera, where gym-duckietown mounts it",
    ("spine", "world"): "the simulated CAN bus's World; the agent policies (policies.py, "
                        "drawn in world), when a spine agent is resolved",
    ("spine", "shm"): "the rings of its loop, CAN bus and agents",
    ("spine", "profiling"): "profiling.py, in the floor: the run's samples and steal time",
    # Beside the front-ends: the Duckiematrix bridge.
    ("duckiematrix", "dmxshm"): "the bridge is an outside agent: dmxshm.connect",
    ("duckiematrix", "logs"): "the bridge peeks at the view's pose feed (view/)",
    ("duckiematrix", "network"): "its launcher takes a NetworkConfig",
    ("duckiematrix", "proc"): "the bridge is a program started through proc/",
    ("duckiematrix", "shm"): "the slot ABI's LED names; the pose feed's ring",
    ("duckiematrix", "world"): "the map, for its layers",
    # Beside the front-ends: the log, replay and live view.
    ("logs", "sim"): "the sensors' registry: the log's topics, the view's rings",
    ("logs", "world"): "PNG encoding (pngio); the view's map",
    ("logs", "matrix"): "the view's map picture",
    ("logs", "shm"): "the view peeks at overwrite rings; the slot ABI's LED names",
    ("logs", "proc"): "the view's server process (proc/program.py)",
    # Beside the front-ends: the RL framework adapters.
    ("sb3", "batch"): "SB3's VecEnv and RLlib's envs over a batch (frameworks/)",
    ("sb3", "marl"): "frameworks/rllib.py: RLlib's multi-agent env over parallel_env",
    ("sb3", "proc"): "frameworks/rllib.py: the CPUs an EnvRunner may use",
}
FLOOR_NAMES = {"settings", "errors"}
# Small top-level modules drawn inside another box.
INSIDE = {"pngio": "world", "_pybullet": "world",
          # The built-in agents and the user's policies: shared by network and spine.
          "policies": "world",
          # In the box beside the front-ends, without arrows: their imports are listed.
          "view": "logs", "rllib": "sb3", "frameworks": "sb3",
          # Old import paths kept (the modules are in network/): dmxshm.connect, the
          # outside agent's side of the network's slots, and the replay of a run.
          "client": "network", "replay": "network"}


def _group(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "dmxshm"
    name = parts[1]
    return INSIDE.get(name, name)


def package_imports() -> set[tuple[str, str]]:
    """``(A, B)`` for every package A of dmxshm that imports something of package B."""
    def name_of(path: Path) -> str:
        rel = path.relative_to(ROOT).with_suffix("").parts
        return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)

    paths = {name_of(p): p for p in PACKAGE.rglob("*.py")}
    edges: set[tuple[str, str]] = set()
    for this, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # "from dmxshm import settings" imports the module dmxshm.settings.
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in paths
                           else node.module for a in node.names]
            else:
                continue
            for target in targets:
                if not target.startswith("dmxshm"):
                    continue
                a, b = _group(this), _group(target)
                if a != b and b not in FLOOR_NAMES:
                    edges.add((a, b))
    return edges


def check_arrows() -> tuple[list[str], bool]:
    """What the picture leaves out, and whether it is stale: an import it neither
    draws nor explains, an arrow or a listed import the source no longer has, or an
    import both drawn and listed."""
    drawn = {(a, b) for a, b, *_ in ARROWS}
    found = package_imports()
    notes = [f"not drawn: {a} imports {b} ({NOT_DRAWN[(a, b)]})"
             for a, b in sorted(found) if (a, b) in NOT_DRAWN]
    missing = [f"MISSING from the picture: {a} imports {b}"
               for a, b in sorted(found - drawn - set(NOT_DRAWN))]
    stale = [f"STALE arrow: {a} no longer imports {b}" for a, b in sorted(drawn - found)]
    stale += [f"STALE listing: {a} no longer imports {b} (delete it from NOT_DRAWN)"
              for a, b in sorted(set(NOT_DRAWN) - found)]
    stale += [f"STALE listing: {a} imports {b} is drawn (delete it from NOT_DRAWN)"
              for a, b in sorted(drawn & set(NOT_DRAWN))]
    return notes + missing + stale, bool(missing or stale)


def _ends(a: str, b: str, xa: float, xb: float, route: str
          ) -> tuple[tuple[float, float], tuple[float, float]]:
    """Start and end of an arrow from box ``a`` (at x = ``xa``) to box ``b`` (at ``xb``)."""
    _, ya, _, ha, *_ = BOXES[a]
    _, yb, _, hb, *_ = BOXES[b]
    if route == "down":
        return (xa, ya), (xb, yb + hb)
    if route == "in":
        return (xa, ya), (xb, yb + hb - 2.5)
    return (xa, ya + ha / 2), (xb, yb + hb / 2)


def _box(ax: plt.Axes, x: float, y: float, w: float, h: float, colour: str,
         dashed: bool = False) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.25,rounding_size=0.8",
                                facecolor=colour, edgecolor="#555555", linewidth=1.2,
                                linestyle="--" if dashed else "-", zorder=2))


def draw(out: Path) -> None:
    fig, ax = plt.subplots(figsize=(12.0, 10.6), dpi=110)
    ax.set_xlim(0, 100)
    ax.set_ylim(-10.5, 94.5)
    ax.axis("off")
    ax.set_title("dmxshm: the package as layers (an arrow A \u2192 B: A imports B)",
                 fontsize=14, fontweight="bold", loc="left")

    for name, (x, y, w, h, colour, title, lines) in BOXES.items():
        _box(ax, x, y, w, h, colour, dashed=name == "beside")
        ax.text(x + 0.9, y + h - 0.6, title, fontsize=11.5, fontweight="bold",
                family="monospace", va="top", zorder=3)
        ax.text(x + 0.9, y + h - 2.8, "\n".join(lines), fontsize=9, va="top",
                linespacing=1.3, zorder=3)

    # The floor: modules that import nothing of dmxshm, imported from many layers.
    _box(ax, 1, -5.6, 98, 3.6, FLOOR)
    for x, name, what in [(2, "settings.py", "every default once"),
                          (31, "errors.py", "DmxError and its leaves"),
                          (63, "profiling.py", "psutil samples of every process")]:
        ax.text(x, -3.8, name, fontsize=11, fontweight="bold", family="monospace",
                va="center", zorder=3)
        ax.text(x + 1.2 * len(name), -3.8, what, fontsize=9, va="center", zorder=3)

    for a, b, xa, xb, route in ARROWS:
        start, end = _ends(a, b, xa, xb, route)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=15,
                                     color=ARROW_COLOURS.get(a, "#333333"), linewidth=1.4,
                                     shrinkA=1, shrinkB=1, zorder=1))

    # A key of the layer colours, below the picture.
    key = [(ENTRY, "entry points"), (BENCH, "benchmarks"), (FRONT, "front-ends"),
           (CORE, "the simulation core"), (MODELS, "models"), (PROCESS, "processes"),
           (SHM, "shared memory"), (FLOOR, "the floor (imports nothing)")]
    x = 1.0
    for colour, label in key:
        ax.add_patch(FancyBboxPatch((x, -9.6), 2.0, 2.0, boxstyle="round,pad=0.1",
                                    facecolor=colour, edgecolor="#555555", linewidth=0.8))
        ax.text(x + 2.8, -8.6, label, fontsize=9, va="center")
        x += 4.6 + 0.62 * len(label)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.96, bottom=0.01)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    lines, stale = check_arrows()
    for line in lines:
        print(line)
    draw(out)
    print(f"wrote {out}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
