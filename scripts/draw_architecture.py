"""Draw the package map of dmxshm: docs/architecture.png.

Boxes are the packages and top-level modules of ``dmxshm``, arranged as
layers (a layer imports only from layers below it); an arrow A -> B means
"A imports B". ``settings.py`` and ``errors.py`` are imported by every layer
and import nothing of dmxshm: they are drawn as the floor, without arrows.

The arrows are the package-level imports read from the source with ``ast``
(absolute imports, as the package writes them) at the time of drawing; the script
prints the imports the picture leaves out on purpose, and exits with
status 1 (after drawing) when the source has an import the picture neither
draws nor explains, or lost one it draws: a stale picture is noticed when it
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
ENTRY, BENCH, ROLES, PROCESS, SHM, FLOOR = (
    "#e8e0f4", "#f6e3d0", "#d9e8f6", "#dcefdc", "#fbf1c7", "#e6e6e6")

# name: (x, y, width, height, colour, title, lines of contents)
BOXES: dict[str, tuple[float, float, float, float, str, str, list[str]]] = {
    "cli": (27, 64.0, 46, 8.0, ENTRY, "cli.py  +  console.py",
            ["the `dmxshm` command: click options -> typed",
             "library calls; console.py prints; sysinfo.py: info"]),
    "bench": (35, 51.5, 30, 8.5, BENCH, "bench/",
              ["ipc, network, vector, plot:", "the `dmxshm bench` figures;",
               "floor (FloorRounds), faults"]),
    "network": (1, 33.5, 30, 13.5, ROLES, "network/",
                ["config: NetworkConfig",
                 "plan: rings, slots, start gate",
                 "supervisor: Network (one run)",
                 "engine, renderer, agent, slot",
                 "results, summary; + client.py:",
                 "   dmxshm.connect (outside agents)"]),
    "batch": (35, 33.5, 28, 13.5, ROLES, "batch/",
              ["env: DuckieLane-v0,",
               "   one world in-process",
               "vector: DmxVectorEnv, make_vec:",
               "   W workers, one segment,",
               "   go / done semaphores"]),
    "spine": (67, 33.5, 32, 13.5, ROLES, "spine/",
              ["clock, law, records, state_machine",
               "loop: the pinned fixed-rate cycle",
               "can: the mock / sim CAN bus",
               "agent, run (`dmxshm spine`),",
               "network_spine, simulation, plot"]),
    "proc": (1, 14.0, 21, 13.5, PROCESS, "proc/",
             ["supervisor: Supervisor", "child: python -m", "   dmxshm.proc FD NAME",
              "outcome, gate,", "cpus, prctl"]),
    "matrix": (32, 14.0, 20, 13.5, PROCESS, "matrix/",
               ["camera, lens, cameras", "batch_render, raycast:", "   many cameras a call",
                "sensors, noise,", "obs (a dtype)"]),
    "world": (58, 14.0, 20, 13.5, PROCESS, "world/",
              ["world: a pybullet", "   client, physics", "robot, state, starts",
               "maps, tiles, lanes, scene", "+ policies.py: the agents"]),
    "profiling": (84, 14.0, 15, 13.5, PROCESS, "profiling.py",
                  ["psutil samples", "of every process;", "imported by",
                   "network, batch", "and spine"]),
    "shm": (1, 1.5, 98, 10.0, SHM, "shm/   (imports nothing above it)",
            ["segment, registry, names, clean: create (O_EXCL, mode 0600), own, unlink, "
             "sweep orphans",
             "ring: blocking (gym mode) | overwrite (realtime: seqlock, fence);   "
             "barrier: the start gate of every run",
             "waiting, peers, signals: every wait bounded; a dead peer named; "
             "Ctrl-C and SIGTERM kept"]),
}

# (from, to, x where it leaves, x where it arrives, route): "from imports to".
# Routes: "down" (bottom edge to top edge), "side" (side to side, same row),
# "over" (top to top, bending over the boxes between).
ARROWS: list[tuple[str, str, float, float, str]] = [
    ("cli", "bench", 50, 50, "down"),
    ("cli", "network", 30, 22, "down"),
    ("cli", "spine", 70, 78, "down"),
    ("bench", "network", 38, 28, "down"),
    ("bench", "batch", 50, 50, "down"),
    ("network", "spine", 27, 73, "over"),
    ("network", "proc", 11, 11, "down"),
    ("network", "shm", 27, 27, "down"),
    ("network", "matrix", 30, 35, "down"),
    ("batch", "proc", 36.5, 15, "down"),
    ("batch", "matrix", 44, 44, "down"),
    ("batch", "world", 61, 61, "down"),
    ("batch", "shm", 55, 55, "down"),
    ("spine", "proc", 68, 20, "down"),
    ("spine", "world", 76, 76, "down"),
    ("spine", "shm", 81, 81, "down"),
    ("spine", "profiling", 92, 92, "down"),
    ("proc", "shm", 11, 11, "down"),
    ("matrix", "world", 52, 58, "side"),
]
# One colour per importing box, so that crossing arrows can be told apart.
ARROW_COLOURS = {"cli": "#6a4c93", "bench": "#b5651d", "network": "#1f5fa8",
                 "batch": "#d0741c", "spine": "#2e8b57", "proc": "#2e8b57",
                 "matrix": "#555555"}

# Imports in the source that the picture does not draw as arrows, with the reason.
NOT_DRAWN: dict[tuple[str, str], str] = {
    ("cli", "shm"): "clean, signals",
    ("cli", "world"): "maps, to check --map",
    ("bench", "shm"): "rings and raw semaphores",
    ("network", "world"): "engine and renderer build a World",
    ("network", "profiling"): "listed in the profiling box",
    ("batch", "profiling"): "listed in the profiling box",
    ("cli", "dmxshm"): "the version number",
    ("dmxshm", "batch"): "dmxshm.make_vec, imported when called",
    ("dmxshm", "network"): "dmxshm.connect (client.py, drawn in network), imported when "
                           "called",
    ("bench", "matrix"): "bench render's cameras",
    ("bench", "dmxshm"): "bench agents and faults drive outside agents (dmxshm.connect)",
    ("bench", "duckiematrix"): "bench duckiematrix starts the bridge",
    ("cli", "duckiematrix"): "run --duckiematrix checks its names and starts the bridge",
    ("duckiematrix", "dmxshm"): "the bridge is an outside agent: dmxshm.connect",
    ("duckiematrix", "logs"): "the bridge peeks at the view's pose feed (view/)",
    ("duckiematrix", "network"): "its launcher takes a NetworkConfig",
    ("duckiematrix", "proc"): "the bridge is a program started through proc/",
    ("duckiematrix", "shm"): "the slot ABI's LED names; the pose feed's ring",
    ("duckiematrix", "world"): "the map, for its layers",
    ("bench", "world"): "bench render's worlds",
    ("bench", "proc"): "the floor's children",
    ("bench", "spine"): "bench plot draws dmxshm spine's typed report (a type only)",
    ("cli", "matrix"): "maps --render's top view",
    ("cli", "profiling"): "the profile's report types, printed by console.py (types only)",
    ("cli", "logs"): "run --log, log info, replay, view (logs.py, replay.py, view/)",
    ("network", "logs"): "each process's part of an MCAP log; the view's rings",
    ("logs", "world"): "PNG encoding (pngio)",
    ("logs", "matrix"): "the view's map picture",
    ("logs", "shm"): "the view peeks at overwrite rings",
    ("logs", "network"): "replay runs a gym network; a realtime replay hashes as the "
                         "network's digest taps (realtime_replay.py)",
    ("spine", "world"): "the agent policies (policies.py, drawn in world), when a spine "
                        "agent is resolved",
    ("cli", "proc"): "the live view's server process (proc/program.py)",
    ("logs", "proc"): "the view stops its server process (proc/program.py)",
    ("sb3", "batch"): "SB3's VecEnv over a batch (sb3.py, rllib.py)",
    ("sb3", "proc"): "rllib.py: the CPUs an EnvRunner may use",
    ("duckietown", "batch"): "the gym-duckietown drop-in is DuckieLane-v1 (batch/env_v1.py)",
    ("duckietown", "matrix"): "its camera, where gym-duckietown mounts it",
    ("duckietown", "world"): "its map, robot and motor constants",
}
FLOOR_NAMES = {"settings", "errors"}
# Small top-level modules drawn inside another box.
INSIDE = {"console": "cli", "sysinfo": "cli", "pngio": "world", "_pybullet": "world",
          # The built-in agents and the user's policies: shared by network and spine.
          "policies": "world",
          # Not drawn as boxes; their imports are listed in NOT_DRAWN.
          "replay": "logs", "realtime_replay": "logs", "view": "logs", "rllib": "sb3",
          # dmxshm.connect: the outside agent's side of the network's slots.
          "client": "network"}


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
    draws nor explains, or an arrow the source no longer has."""
    drawn = {(a, b) for a, b, *_ in ARROWS}
    found = package_imports()
    notes = [f"not drawn: {a} imports {b} ({NOT_DRAWN[(a, b)]})"
             for a, b in sorted(found) if (a, b) in NOT_DRAWN]
    missing = [f"MISSING from the picture: {a} imports {b}"
               for a, b in sorted(found - drawn - set(NOT_DRAWN))]
    stale = [f"STALE arrow: {a} no longer imports {b}" for a, b in sorted(drawn - found)]
    return notes + missing + stale, bool(missing or stale)


def _ends(a: str, b: str, xa: float, xb: float, route: str
          ) -> tuple[tuple[float, float], tuple[float, float], float]:
    """Start, end and bend of an arrow from box ``a`` (at x = ``xa``) to box ``b`` (at ``xb``)."""
    _, ya, _, ha, *_ = BOXES[a]
    _, yb, _, hb, *_ = BOXES[b]
    if route == "down":
        return (xa, ya), (xb, yb + hb), 0.0
    if route == "over":
        return (xa, ya + ha), (xb, yb + hb), -0.08
    return (xa, ya + ha / 2), (xb, yb + hb / 2), 0.0


def draw(out: Path) -> None:
    fig, ax = plt.subplots(figsize=(12.0, 8.4), dpi=110)
    ax.set_xlim(0, 100)
    ax.set_ylim(-9.5, 75)
    ax.axis("off")
    ax.set_title("dmxshm: the package as layers (an arrow A \u2192 B: A imports B)",
                 fontsize=14, fontweight="bold", loc="left")

    for x, y, w, h, colour, title, lines in BOXES.values():
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.25,rounding_size=0.8",
                                    facecolor=colour, edgecolor="#555555", linewidth=1.2,
                                    zorder=2))
        ax.text(x + 0.9, y + h - 0.7, title, fontsize=11.5, fontweight="bold",
                family="monospace", va="top", zorder=3)
        ax.text(x + 0.9, y + h - 3.2, "\n".join(lines), fontsize=9, va="top",
                linespacing=1.35, zorder=3)

    # The floor: settings.py and errors.py, imported by every layer.
    ax.add_patch(FancyBboxPatch((1, -3.3), 98, 3.6, boxstyle="round,pad=0.25,rounding_size=0.8",
                                facecolor=FLOOR, edgecolor="#555555", linewidth=1.2, zorder=2))
    ax.text(2, -1.5, "settings.py", fontsize=11, fontweight="bold", family="monospace",
            va="center", zorder=3)
    ax.text(15.5, -1.5, "every default once (spin, timeouts)", fontsize=9, va="center", zorder=3)
    ax.text(48, -1.5, "errors.py", fontsize=11, fontweight="bold", family="monospace",
            va="center", zorder=3)
    ax.text(59.5, -1.5, "DmxError and its leaves   (both imported by every layer)",
            fontsize=9, va="center", zorder=3)

    for a, b, xa, xb, route in ARROWS:
        start, end, rad = _ends(a, b, xa, xb, route)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=15,
                                     connectionstyle=f"arc3,rad={rad}",
                                     color=ARROW_COLOURS.get(a, "#333333"), linewidth=1.4,
                                     shrinkA=1, shrinkB=1, zorder=1))

    # A key of the layer colours, below the picture.
    key = [(ENTRY, "entry points"), (BENCH, "benchmarks"),
           (ROLES, "what runs: a network, a batch, a spine"),
           (PROCESS, "processes, sensors, physics, profiles"), (SHM, "shared memory"),
           (FLOOR, "leaves")]
    x = 1.0
    for colour, label in key:
        ax.add_patch(FancyBboxPatch((x, -8.2), 2.2, 2.2, boxstyle="round,pad=0.1",
                                    facecolor=colour, edgecolor="#555555", linewidth=0.8))
        ax.text(x + 3.0, -7.1, label, fontsize=9, va="center")
        x += 5.0 + 0.56 * len(label)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.95, bottom=0.01)
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
