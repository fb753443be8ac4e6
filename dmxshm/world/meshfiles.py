"""Meshes given to pybullet as Wavefront OBJ files (what its EGL renderer plugin
draws), written once each into a private cache folder and named by their content:
the map's surfaces (:mod:`dmxshm.world.scene`) and the objects' shapes
(:mod:`dmxshm.world.objects`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile


def mesh_dir() -> str:
    """Where meshes written as OBJ files go: this user's cache folder
    (``$XDG_CACHE_HOME/dmxshm/meshes``, by default ``~/.cache/dmxshm/meshes``),
    made private; a private temporary folder of this process if that one
    cannot be used (not ours, not a folder, not writable)."""
    global _private_dir
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "dmxshm", "meshes")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="dmxshm-meshes-")
    return _private_dir


_private_dir: str | None = None


def obj_file(vertices: list[list[float]], indices: list[int],
              normals: list[list[float]] | None = None) -> str:
    """The mesh as a Wavefront OBJ file, named by its content (written once); one
    normal per vertex if given (else all up)."""
    lines = [f"v {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in vertices]
    if normals is None:
        lines.append("vn 0 0 1")
        lines += [f"f {a + 1}//1 {b + 1}//1 {c + 1}//1"
                  for a, b, c in zip(indices[::3], indices[1::3], indices[2::3], strict=True)]
    else:
        lines += [f"vn {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in normals]
        lines += [f"f {a + 1}//{a + 1} {b + 1}//{b + 1} {c + 1}//{c + 1}"
                  for a, b, c in zip(indices[::3], indices[1::3], indices[2::3], strict=True)]
    text = "\n".join(lines) + "\n"
    folder = mesh_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, hashlib.sha256(text.encode()).hexdigest()[:24] + ".obj")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)  # atomic: processes building the same scene at once agree
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return path
