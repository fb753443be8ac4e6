"""The two camera renderers, and choosing between them.

* ``tiny``: pybullet's CPU renderer (ER_TINY_RENDERER). No display, no GPU,
  the same pixels everywhere; its cost grows with the image (about 1 ms at
  64x64, 4 ms at 160x120, 55 ms at 640x480 on one core).
* ``egl``: pybullet's EGL renderer plugin (OpenGL without a display). On a
  GPU it draws 640x480 in a few ms; without one it runs on Mesa's software
  OpenGL (llvmpipe), about 2x faster than ``tiny`` at 640x480 and slower at
  small sizes. The plugin draws only meshes it reads from files, so a world
  for it builds its map from OBJ files (same geometry), and the plugin must
  be loaded before the scene is built. Its images differ from ``tiny``'s
  (background, lighting, shading): ``dmxshm bench render`` measures by how
  much.
* ``auto``: ``egl`` where a GPU is present (an NVIDIA device or a DRI render
  node), ``tiny`` elsewhere.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pkgutil
from collections.abc import Iterator

from dmxshm._pybullet import pb
from dmxshm.errors import DmxError

RENDERERS = ("tiny", "egl", "auto")


class RendererError(DmxError, RuntimeError):
    """The EGL renderer cannot be loaded here; the message says why."""


def gpu_present() -> bool:
    """A GPU device node is there (NVIDIA's, or a DRI render node)."""
    return bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/dri/renderD*"))


def resolve(name: str) -> str:
    """``tiny`` or ``egl`` for ``name`` (``auto``: ``egl`` where a GPU is present).

    Raises:
        RendererError: an unknown name.
    """
    if name not in RENDERERS:
        raise RendererError(f"renderer must be one of {', '.join(RENDERERS)}, not {name!r}")
    if name == "auto":
        return "egl" if gpu_present() and egl_plugin() is not None else "tiny"
    return name


def egl_plugin() -> str | None:
    """The file of pybullet's EGL renderer plugin, or None when it is not built."""
    loader = pkgutil.get_loader("eglRenderer")
    return loader.get_filename() if loader is not None else None  # type: ignore[attr-defined]


@contextlib.contextmanager
def quiet_stdio() -> Iterator[None]:
    """Silence the C-level stdout and stderr (the EGL plugin prints its vendor and
    version when it loads, and a line when it goes)."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def load_egl(client: int) -> None:
    """Load the EGL renderer plugin into ``client`` (before its scene is built).

    Raises:
        RendererError: the plugin is not built, or EGL cannot start here (no
            libEGL, no GPU driver and no Mesa).
    """
    path = egl_plugin()
    if path is None:
        raise RendererError("this pybullet has no EGL renderer plugin (eglRenderer); use "
                            "--renderer tiny")
    with quiet_stdio():
        plugin = pb.loadPlugin(path, "_eglRendererPlugin", physicsClientId=client)
    if plugin < 0:
        raise RendererError("pybullet's EGL renderer did not load: EGL needs libEGL and a GPU "
                            "driver or Mesa (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri); "
                            "use --renderer tiny")


def flag(renderer: str) -> int:
    """pybullet's renderer flag for ``tiny`` or ``egl``."""
    return pb.ER_BULLET_HARDWARE_OPENGL if renderer == "egl" else pb.ER_TINY_RENDERER
