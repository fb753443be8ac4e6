"""Names of dmxshm objects in /dev/shm.

Every segment and semaphore is named ``/dmx-<pid>-<token>-<what>``: the
creator's pid lets a sweep find objects whose creator is dead, and the random
per-network token keeps two networks of the same user from colliding. Linux
lists a segment as ``/dev/shm/dmx-...`` and a semaphore as
``/dev/shm/sem.dmx-...``. Outside tools parse this grammar: it does not change.

A pid only means something in the PID namespace it was given in, and two
containers that share /dev/shm (one IPC namespace) need not share one: a
live network of the other container then looks dead. So a token made by
:func:`new_token` carries its creator's PID namespace: 8 random hex digits,
then the 8 hex digits of the inode of ``/proc/self/ns/pid`` (the namespace's
identity, unique among live namespaces), e.g. ``0badcafeeffffffc``. It is
still just lower-case hex, so the grammar holds. A token of any other length
(an older one, or one given to :class:`~dmxshm.shm.registry.Registry`) says
nothing of its namespace (:attr:`Entry.pidns` is None), and so does every
token where ``/proc`` does not tell. :mod:`dmxshm.shm.clean` reads it to leave
the objects of other namespaces alone.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass

PREFIX = "dmx"
SHM_DIR = "/dev/shm"
SEM_PREFIX = "sem."

# A token of new_token(): 8 random hex digits, then 8 of the PID namespace.
_RANDOM_HEX = 8
_PIDNS_HEX = 8
_PIDNS_PATH = "/proc/self/ns/pid"
_WHAT_RE = re.compile(r"^[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*$")
_ENTRY_RE = re.compile(rf"^(?P<sem>{re.escape(SEM_PREFIX)})?{PREFIX}-(?P<pid>\d+)-"
                       r"(?P<token>[0-9a-f]+)-(?P<what>.+)$")
# A POSIX semaphore name becomes "sem.<name>" in a 255-byte file name.
MAX_NAME_LEN = 240


_pidns: tuple[int, int | None] | None = None  # (pid that read it, namespace)


def own_pidns() -> int | None:
    """This process's PID namespace (the inode of ``/proc/self/ns/pid``, 32 bits);
    None where /proc does not say (not Linux, /proc not mounted)."""
    global _pidns
    pid = os.getpid()
    if _pidns is None or _pidns[0] != pid:  # a forked child may be in a new namespace
        try:
            ns: int | None = os.stat(_PIDNS_PATH).st_ino % 2**32
        except OSError:
            ns = None
        _pidns = (pid, ns)
    return _pidns[1]


def new_token() -> str:
    """Return a fresh network token: 8 random hex digits, then this process's PID
    namespace in 8 hex digits (just the 8 random ones where it is unknown).

    Example:
        >>> len(new_token()) in (8, 16)
        True
    """
    ns = own_pidns()
    return secrets.token_hex(_RANDOM_HEX // 2) + ("" if ns is None else f"{ns:0{_PIDNS_HEX}x}")


def token_pidns(token: str) -> int | None:
    """The PID namespace that :func:`new_token` put in ``token``; None if it has none.

    Example:
        >>> token_pidns("0badcafeeffffffc"), token_pidns("0badcafe")
        (4026531836, None)
    """
    if len(token) != _RANDOM_HEX + _PIDNS_HEX:
        return None
    return int(token[_RANDOM_HEX:], 16)


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
        pid: the creator's pid (in its own PID namespace, see :attr:`pidns`).
        token: the network token.
        what: the rest of the name.
    """

    kind: str
    name: str
    path: str
    pid: int
    token: str
    what: str

    @property
    def pidns(self) -> int | None:
        """The creator's PID namespace, where the token carries it (see the module doc)."""
        return token_pidns(self.token)


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
