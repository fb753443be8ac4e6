"""Names of dmxshm objects in /dev/shm.

Every segment and semaphore is named ``/dmx-<pid>-<token>-<what>``: the
creator's pid lets a sweep find objects whose creator is dead, and the random
per-network token keeps two networks of the same user from colliding. Linux
lists a segment as ``/dev/shm/dmx-...`` and a semaphore as
``/dev/shm/sem.dmx-...``.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass

PREFIX = "dmx"
SHM_DIR = "/dev/shm"
SEM_PREFIX = "sem."

_WHAT_RE = re.compile(r"^[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*$")
_ENTRY_RE = re.compile(rf"^(?P<sem>{re.escape(SEM_PREFIX)})?{PREFIX}-(?P<pid>\d+)-"
                       r"(?P<token>[0-9a-f]+)-(?P<what>.+)$")
# A POSIX semaphore name becomes "sem.<name>" in a 255-byte file name.
MAX_NAME_LEN = 240


def new_token() -> str:
    """Return a fresh random network token (8 hex digits)."""
    return secrets.token_hex(4)


def make_name(token: str, what: str, pid: int | None = None) -> str:
    """Build the POSIX name of an object.

    Args:
        token: the network token (hex).
        what: what the object is, e.g. ``"obs.0"``; letters, digits, ``_``,
            ``.`` and single ``-`` separators.
        pid: the creator's pid; defaults to this process.

    Returns:
        A name such as ``/dmx-1234-0badcafe-obs.0``.

    Raises:
        ValueError: when ``token`` or ``what`` holds characters that cannot
            appear in a name, or the name is too long.

    Example:
        >>> make_name("0badcafe", "obs.0", pid=1234)
        '/dmx-1234-0badcafe-obs.0'
    """
    if not re.fullmatch(r"[0-9a-f]+", token):
        raise ValueError(f"network token must be lower-case hex, got {token!r}")
    if not _WHAT_RE.fullmatch(what):
        raise ValueError(f"object name part must match {_WHAT_RE.pattern}, got {what!r}")
    name = f"/{PREFIX}-{os.getpid() if pid is None else pid}-{token}-{what}"
    if len(name) > MAX_NAME_LEN:
        raise ValueError(f"name {name!r} is longer than {MAX_NAME_LEN} characters")
    return name


@dataclass(frozen=True)
class Entry:
    """One dmxshm object as listed in /dev/shm.

    Attributes:
        kind: ``"segment"`` or ``"semaphore"``.
        name: the POSIX name, with its leading ``/``.
        path: the file in /dev/shm.
        pid: the creator's pid.
        token: the network token.
        what: the rest of the name.
    """

    kind: str
    name: str
    path: str
    pid: int
    token: str
    what: str


def parse_entry(filename: str, shm_dir: str = SHM_DIR) -> Entry | None:
    """Parse a /dev/shm file name; None when it is not a dmxshm object.

    Example:
        >>> parse_entry("sem.dmx-12-ab-ring.free").kind
        'semaphore'
        >>> parse_entry("other") is None
        True
    """
    m = _ENTRY_RE.fullmatch(filename)
    if m is None:
        return None
    is_sem = m.group("sem") is not None
    name = "/" + (filename[len(SEM_PREFIX):] if is_sem else filename)
    return Entry(
        kind="semaphore" if is_sem else "segment",
        name=name,
        path=os.path.join(shm_dir, filename),
        pid=int(m.group("pid")),
        token=m.group("token"),
        what=m.group("what"),
    )


def list_entries(shm_dir: str = SHM_DIR) -> list[Entry]:
    """List every dmxshm object in ``shm_dir`` (empty when it does not exist)."""
    try:
        files = sorted(os.listdir(shm_dir))
    except FileNotFoundError:
        return []
    return [e for e in (parse_entry(f, shm_dir) for f in files) if e is not None]
