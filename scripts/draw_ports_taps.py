"""Draw a network's roles, the named ports between them and the taps on them:
docs/ports-taps.png.

Roles are boxes, each port of ``dmxshm.network.ports.PORTS`` an arrow from its
writer to its reader, labelled with its name; each role's built-in taps hang
under it with the points they watch (``dmxshm.network.taps``). The script
checks that every port and tap point it draws exists in the code, and exits
with status 1 (after drawing) when the code has a port the picture does not draw.

Run: python scripts/draw_ports_taps.py [OUT.png]   (needs matplotlib)
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "ports-taps.png"

from dmxshm.network.ports import PORTS  # noqa: E402
from dmxshm.network.taps import POINTS  # noqa: E402

ROLE, TAP, OUTSIDE = "#d9e8f6", "#fbf1c7", "#e8e0f4"

# name: (x, y, w, h, colour, title, subtitle, built-in taps with the points they watch)
BOXES = {
    "engine": (2, 28, 27, 24, ROLE, "engine", "physics; checks commands",
               [("StateDigest", "state, commands, end"), ("PoseDigest", "state, end"),
                ("Lanes", "state"), ("StateLog", "state, commands"),
                ("StatePoses", "state, end"), ("given: floor, ...", "any point")]),
    "renderer": (40, 28, 25, 24, ROLE, "renderer-N", "sensor samples, link by link",
                 [("SampleDigest", "samples"), ("SampleLog", "samples, sent"),
                  ("SampleImages", "samples, sent"), ("Recorder", "samples, sent")]),
    "agent": (78, 40, 20, 10, ROLE, "agent-N / slot-N", "policy / outside -> wheels", []),
    "outside": (74, 66, 24, 9, OUTSIDE, "outside agent", "dmxshm.connect, C (abi.md)", []),
    "camera": (40, 64, 25, 14, ROLE, "camera-N", "realtime: images at its rate",
               [("SampleDigest", "images"), ("ImageLog", "images"), ("Recorder", "images")]),
    "spine": (78, 13, 20, 10, ROLE, "spine", "realtime --spine: CAN", []),
    "supervisor": (2, 66, 27, 10, OUTSIDE, "supervisor", "Network: rings, watch, summary",
                   []),
    "view": (40, 1, 25, 9, OUTSIDE, "view / foxglove",
             "peek; nobody waits (view.meta: supervisor's)", []),
}

# (start, end, port label, label position, curvature, both ways)
ARROWS = [
    ((29.5, 48), (39.5, 48), "state.renderer.N", (34.5, 49.3), 0.0, False),
    ((65.5, 48), (77.5, 48), "obs.R.A (ObsLink)", (71.5, 49.3), 0.0, False),
    ((88, 50.5), (15, 52.5), "cmd.agent.N", (51, 61.0), 0.22, False),
    ((25, 52.5), (39.5, 68), "state.camera.N", (27.5, 62.5), 0.0, False),
    ((52.5, 63.5), (52.5, 52.5), "camera.N", (56.5, 57.5), 0.0, False),
    ((88, 39.5), (88, 23.5), "cmd.agent.N (spine's)", (88, 31), 0.0, False),
    ((77.5, 17), (15, 27.5), "spine.frames / spine.replies", (50, 23.3), 0.0, True),
    ((77.5, 14), (65.5, 6), "spine.records", (75, 8.5), 0.0, False),
    ((8, 27.5), (39.5, 5), "view.state", (20, 13), 0.0, False),
    ((52.5, 27.5), (52.5, 10.5), "view.obs.N", (57, 16.5), 0.0, False),
    ((94, 65.5), (94, 50.5), "slot.N", (96, 58), 0.0, True),
]
DRAWN_PORTS = {"state.renderer.N", "state.camera.N", "camera.N", "cmd.agent.N",
               "spine.frames", "spine.replies", "spine.records", "view.meta", "view.state",
               "view.obs.N", "slot.N", "obs.R.A"}


def main(out: Path) -> int:
    fig, ax = plt.subplots(figsize=(13, 9))
    ax.set_xlim(0, 100)
    ax.set_ylim(-1, 82)
    ax.axis("off")
    for _name, (x, y, w, h, colour, title, sub, taps) in BOXES.items():
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.4", fc=colour,
                                    ec="#555", lw=1.2))
        ax.text(x + w / 2, y + h - 2.4, title, ha="center", va="center", fontsize=12,
                weight="bold", family="monospace")
        ax.text(x + w / 2, y + h - 5.2, sub, ha="center", va="center", fontsize=8.5)
        for i, (tap, points) in enumerate(taps):
            ax.text(x + 1.2, y + h - 9.4 - 3.1 * i, f"{tap}: {points}", fontsize=7.8,
                    family="monospace", bbox=dict(fc=TAP, ec="#a08a2a", pad=0.35))
    for start, end, port, (lx, ly), rad, both in ARROWS:
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="<|-|>" if both else "-|>",
                                     mutation_scale=15, lw=1.4, color="#2b5d8a",
                                     connectionstyle=f"arc3,rad={rad}", zorder=0))
        ax.text(lx, ly, port, ha="center", va="center", fontsize=8.5, family="monospace",
                color="#2b5d8a", bbox=dict(fc="white", ec="none", alpha=0.9, pad=0.4))
    ax.text(50, 81, "A network run: roles over named ports (plan.ring(name)), "
            "cross-cutting work as taps (yellow) at declared points", ha="center",
            fontsize=12)
    ax.text(70, 31.5, "tap points:\n" + "\n".join(f"  {p}" for p in POINTS)
            + "\nonce per step or tick,\nevery robot at once", fontsize=8,
            family="monospace", va="center", ha="left")
    fig.savefig(out, dpi=110, bbox_inches="tight")
    missing = {p.name for p in PORTS if p.name not in DRAWN_PORTS}
    if missing:
        print(f"ports in the code the picture does not draw: {sorted(missing)}")
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
