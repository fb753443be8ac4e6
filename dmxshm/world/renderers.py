"""The camera renderers, and choosing between them.

* ``tiny``: pybullet's CPU renderer (ER_TINY_RENDERER). No display, no GPU,
  the same pixels everywhere; its cost grows with the image (about 1 ms at
  64x64, 4 ms at 160x120, 52 ms at 640x480 on one core).
* ``egl``: pybullet's EGL renderer plugin (OpenGL without a display). On a
  GPU it draws 640x480 in a few ms; without one it runs on Mesa's software
  OpenGL (llvmpipe), faster than ``tiny`` at 640x480 and slower at small
  sizes. The plugin draws only meshes it reads from files, so a world for
  it builds its map from OBJ files (same geometry), and the plugin must be
  loaded before the scene is built. It renders into a buffer of at most
  :data:`EGL_MAX_WH`. Its images differ from ``tiny``'s (background,
  lighting, shading): ``dmxshm bench render`` measures by how much.
* ``batch``: dmxshm's own (:mod:`dmxshm.matrix.batch_render`): every camera of a
  process in one call, by casting a ray per pixel in compiled code (numba); built
  for the Duckietown world (a flat ground, simple shapes), its images agree with
  ``tiny``'s to within a level on average. A world for it builds no visual shapes in
  pybullet (the renderer draws from the map and the states).
* ``auto``: the fastest of those that run here for the camera's size, measured once
  per process (:func:`dmxshm.matrix.renderer_choice.resolve`): ``tiny``, ``batch``, and
  ``egl`` where a GPU is present and EGL starts on a hardware renderer there.

Where EGL cannot start, pybullet's plugin ends the whole process
(``exit(1)``); so EGL is first tried in a child process (:func:`probe`),
once per process, and a failure becomes a :class:`RendererError` with what
the plugin said. The result is a value of this module (:func:`egl_device`);
a process that starts others passes it to them in their arguments, and
each takes it with :func:`adopt_probe` instead of probing again.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator

from dmxshm._pybullet import pb
from dmxshm.errors import DmxError

RENDERERS = ("tiny", "egl", "batch", "auto")
EGL_MAX_WH = (1024, 768)
"""The plugin's framebuffer; a larger camera would be drawn at this size and
stretched, so it is refused."""
PROBE_TIMEOUT_S = 60.0
SOFTWARE_GL = ("llvmpipe", "softpipe", "swrast")

_probed: str | None = None
_live_egl: set[int] = set()  # clients of this process with the EGL plugin loaded
_quiet_lock = threading.Lock()


class RendererError(DmxError, RuntimeError):
    """A renderer cannot be used here; the message says why."""


def gpu_present() -> bool:
    """A GPU device node is there (NVIDIA's, or a DRI render node)."""
    return bool(glob.glob("/dev/nvidia[0-9]*") or glob.glob("/dev/dri/renderD*"))


def egl_plugin() -> str | None:
    """The file of pybullet's EGL renderer plugin, or None when it is not built."""
    spec = importlib.util.find_spec("eglRenderer")
    return spec.origin if spec is not None else None


_PROBE = """
import pybullet as p
c = p.connect(p.DIRECT)
plugin = p.loadPlugin({path!r}, "_eglRendererPlugin", physicsClientId=c)
print("DMXSHM-EGL-PLUGIN", plugin, flush=True)
p.getCameraImage(8, 8, renderer=p.ER_BULLET_HARDWARE_OPENGL, physicsClientId=c)
print("DMXSHM-EGL-OK", flush=True)
"""


def egl_device() -> str | None:
    """The OpenGL renderer EGL started on in this process's :func:`probe` (e.g.
    ``llvmpipe (LLVM 15.0.6, 256 bits)``), or the one :func:`adopt_probe` was
    given; None when EGL was not probed here, or failed."""
    return _probed


def adopt_probe(device: str | None) -> None:
    """Take ``device`` as this process's probe result: its parent probed EGL and
    passed :func:`egl_device` in this process's arguments, so :func:`probe` need
    not start EGL again here. None (the parent did not probe): nothing changes,
    this process probes if it needs EGL.

    Raises:
        ValueError: an empty name (a probe that worked always names its renderer).
    """
    global _probed
    if device is None:
        return
    if not device:
        raise ValueError("adopt_probe() takes the renderer's name that egl_device() gave, "
                         f"not {device!r}")
    _probed = device


def probe() -> str:
    """Start EGL in a child process; the OpenGL renderer's name (e.g. ``llvmpipe
    (LLVM 15.0.6, 256 bits)`` on Mesa) if it works. Cached for this process
    (:func:`egl_device`).

    Raises:
        RendererError: no plugin, or EGL does not start here (with what the
            plugin said).
    """
    global _probed
    if _probed is not None:
        return _probed
    path = egl_plugin()
    if path is None:
        raise RendererError("this pybullet has no EGL renderer plugin (eglRenderer); use "
                            "--renderer tiny")
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE.format(path=path)],
                             capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RendererError(f"EGL did not start within {PROBE_TIMEOUT_S:g} s; use "
                            "--renderer tiny") from None
    text = out.stdout + out.stderr
    if out.returncode != 0 or "DMXSHM-EGL-OK" not in out.stdout:
        said = [line for line in text.splitlines() if line.strip()
                and not line.startswith(("DMXSHM-", "pybullet build time"))][-3:]
        raise RendererError(
            "pybullet's EGL renderer cannot start here" + (f" ({'; '.join(said)})" if said
                                                            else "")
            + ": EGL needs libEGL and a GPU driver or Mesa (Debian: libegl1 libegl-mesa0 "
            "libgl1-mesa-dri); use --renderer tiny")
    device = next((line.split("=", 1)[1].strip() for line in text.splitlines()
                   if line.startswith("Renderer =")), "unknown")
    _probed = device
    return device


def software(device: str) -> bool:
    """The OpenGL renderer is a CPU one (Mesa's llvmpipe...)."""
    return any(name in device.lower() for name in SOFTWARE_GL)


def resolve(name: str) -> str:
    """``name``, checked: ``tiny``, ``egl`` or ``batch`` (``auto`` is chosen by a
    measurement: :func:`dmxshm.matrix.renderer_choice.resolve`).

    Raises:
        RendererError: an unknown name, or ``batch`` without numba.
    """
    if name not in RENDERERS or name == "auto":
        raise RendererError(f"renderer must be one of {', '.join(RENDERERS[:-1])}, not "
                            f"{name!r}" + (" (auto is resolved by "
                                           "dmxshm.matrix.renderer_choice.resolve)"
                                           if name == "auto" else ""))
    if name == "batch" and not batch_available():
        raise RendererError("the batch renderer needs numba, which is not installed here: "
                            "pip install numba (or use --renderer tiny)")
    return name


def batch_available() -> bool:
    """numba, which compiles the batch renderer, is installed."""
    return importlib.util.find_spec("numba") is not None


def hardware_egl() -> bool:
    """A GPU is present and EGL starts on a hardware renderer there (never probed
    without a GPU)."""
    if not gpu_present() or egl_plugin() is None:
        return False
    try:
        return not software(probe())
    except RendererError:
        return False


@contextlib.contextmanager
def quiet_stdio() -> Iterator[None]:
    """Silence the C-level stdout and stderr while pybullet's EGL plugin talks (its
    vendor and version when it starts, a line when it goes). What it wrote goes
    back to stderr if the block raises. One thread at a time."""
    with _quiet_lock:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                with contextlib.suppress(Exception):
                    stream.flush()
        try:
            saved = [os.dup(1), os.dup(2)]
        except OSError:  # no stdout or stderr to silence
            yield
            return
        try:
            with tempfile.TemporaryFile() as sink:
                os.dup2(sink.fileno(), 1)
                os.dup2(sink.fileno(), 2)
                try:
                    yield
                except BaseException:
                    os.dup2(saved[1], 2)
                    sink.seek(0)
                    with contextlib.suppress(OSError):
                        os.write(2, sink.read())
                    raise
                finally:
                    os.dup2(saved[0], 1)
                    os.dup2(saved[1], 2)
        finally:
            for fd in saved:
                os.close(fd)


def load_egl(client: int) -> None:
    """Load the EGL renderer plugin into ``client`` (before its scene is built).

    Raises:
        RendererError: EGL does not start here (:func:`probe`), or another
            world of this process already renders with EGL (the plugin makes
            its OpenGL context current once, so a second one would draw into
            the first one's images).
    """
    path = egl_plugin()
    if path is None:
        raise RendererError("this pybullet has no EGL renderer plugin (eglRenderer); use "
                            "--renderer tiny")
    probe()
    if _live_egl:
        raise RendererError("a process can hold one EGL world at a time (pybullet's plugin "
                            "keeps one OpenGL context current); close the other first, or "
                            "render this one with --renderer tiny")
    with quiet_stdio():
        plugin = pb.loadPlugin(path, "_eglRendererPlugin", physicsClientId=client)
        if plugin >= 0:  # the plugin also talks on its first renders
            for _ in range(2):
                pb.getCameraImage(8, 8, renderer=pb.ER_BULLET_HARDWARE_OPENGL,
                                  physicsClientId=client)
    if plugin < 0:
        raise RendererError("pybullet's EGL renderer plugin did not load; use --renderer tiny")
    _live_egl.add(client)


def unload_egl(client: int) -> None:
    """Forget ``client`` as this process's EGL world (it is being disconnected)."""
    _live_egl.discard(client)


def flag(renderer: str) -> int:
    """pybullet's renderer flag for ``tiny`` or ``egl`` (``batch`` draws with neither:
    the tiny flag, for a camera of a batch world rendered through pybullet)."""
    return pb.ER_BULLET_HARDWARE_OPENGL if renderer == "egl" else pb.ER_TINY_RENDERER
