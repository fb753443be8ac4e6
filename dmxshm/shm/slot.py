"""Agent slots: the shared-memory ABI through which programs the network did not
start drive its robots (docs/abi.md is the reference; this module implements it).

A slot is one segment (``/dmx-<pid>-<token>-slot.<N>``) and two semaphores
(``<segment>.obs``, ``<segment>.cmd``). Layout, ABI version 1, little-endian,
every offset in bytes from the start of the segment::

    0    header, written once by the network before it serves the slot
         u8[8] magic "DMXSLOT\\x01"; u32 abi; u32 mode (0 gym, 1 realtime);
         u32 slot; u32 robots n; u32 record_bytes; u32 fields; u32 field_table;
         u32 robot_ids; u32 obs; u32 cmd; u32 descr; u32 descr_bytes;
         f64 max_wheel_speed_rad_s
    64   network line (the network writes, clients read)
         u64 obs_seq: 2q+1 while observation q is written, 2q+2 once complete
         u64 status: 1 serving, 2 ended, 3 failed; u64 accepted; u64 rejected;
         u64 network pid; u64 awaiting (gym: the step whose command it waits for);
         u64 examined (the cmd_seq of the last command it took or rejected);
         u64 units of the commands, written before the header: 0 wheel speeds
         (rad/s), 1 PWM duty in [-1, 1] (--action pwm)
    128  holder line (the client that holds the slot writes it after its claim)
         u64 pid; f64 claimed at (Unix time); u8[32] name
    192  field table: one 32-byte entry per field of an observation record:
         char name[16]; u32 offset; u32 count; u8 kind ('u' 'i' 'f'); u8 size
    ...  u32 robot ids[n]; the record's numpy descr as JSON
    obs  observation (64-aligned): u64 step; f64 sim time; +64: n records;
         then f64 reward[n]; u8 terminated[n]; u8 truncated[n] (a gym run with
         --episodes writes them; otherwise reserved, 0)
    cmd  command (64-aligned, the client writes): u64 cmd_seq (2m+1 while
         command m is written, 2m+2 once complete); u64 step (the observation
         it answers); f64 sent (CLOCK_MONOTONIC s); u32 reset request
         (realtime: 1 puts the slot's robots back at their start poses before
         the wheels apply; gym with --episodes: the same, and their episodes
         start over; gym without: reserved, 0); u32 flags (1: lights set, 2:
         lights only, no wheels); +64: f64 wheels[n][2], in the units of the
         network line; then f32 lights[n][4][4], RGBA of front left, front right,
         back left and back right

The network rings ``.obs`` after each observation, the client ``.cmd`` after
each command; both are bells (a wake-up, capped at 1): the sequence words say
what is new. Claims are Linux open-file-description locks (``F_OFD_SETLK``),
which the kernel drops when their holder dies, in any PID namespace: the
network holds byte 0 while it serves the slot, the client byte 1 while it
holds it. Taking the lock is the claim: no check-then-set race.

The whole segment is writable by its holder (ABI 1), so the network trusts none
of it: it keeps its own copy of what it wrote (the header, the field table and
descr, the network line, the last observation) and writes back whatever a client
wrote over (:meth:`SlotSegment.restore`); it gives each new holder a clean command
area and holder line (:meth:`SlotSegment.reset_commands`, under byte 1 so that
no claim lands half way); and it names a holder's pid only once the kernel's lock
table shows that process holding the claim (:func:`holds_claim`).
"""

from __future__ import annotations

import functools
import json
import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import posix_ipc

from dmxshm.errors import DmxError, LayoutError, SegmentMissingError
from dmxshm.shm.fence import NEEDS_FENCE, fence
from dmxshm.shm.names import SHM_DIR
from dmxshm.shm.registry import Registry
from dmxshm.shm.ring import _tuplify
from dmxshm.shm.segment import REMOVE_IPC_HINT, Segment
from dmxshm.shm.slot_lock import holds_claim, is_locked, try_lock, unlock

MAGIC = b"DMXSLOT\x01"
ABI_VERSION = 1
MODES = {"gym": 0, "realtime": 1}
SERVING, ENDED, FAILED = 1, 2, 3
NOT_AWAITING = 2**64 - 1
NETWORK_BYTE, CLIENT_BYTE = 0, 1
FIELD_ENTRY = struct.Struct("<16sIIcB6x")
HEADER = struct.Struct("<8sIIIIIIIIIIIId")
# Byte offsets of the words each side writes.
NET_LINE, HOLDER_LINE, TABLE = 64, 128, 192
O_OBS_SEQ, O_STATUS, O_ACCEPTED, O_REJECTED, O_NET_PID, O_AWAITING, O_EXAMINED = (
    NET_LINE + 8 * i for i in range(7))
O_UNITS = NET_LINE + 56
UNITS = {"wheel-speed": 0, "pwm": 1}
O_HOLDER_PID, O_HOLDER_AT, O_HOLDER_NAME = HOLDER_LINE, HOLDER_LINE + 8, HOLDER_LINE + 16
HOLDER_NAME_BYTES = 32
CMD_HEAD = 64
LIGHTS = ("front_left", "front_right", "back_left", "back_right")
"""The Duckiebot's LEDs, in the order of a command's lights (RGBA each, 0 to 1)."""
LIGHTS_BYTES = 4 * 4 * len(LIGHTS)  # f32 RGBA per LED, per robot
LIGHTS_SET, LIGHTS_ONLY = 1, 2
"""Bits of a command's ``flags``: it carries lights; it carries lights only (the
network keeps the robots' last wheel command and its expiry)."""
OBS_HEAD = 64


SEQ_WRAP = 2**62
"""A client that finds ``cmd_seq`` at or above this at its claim starts its
commands at 0 (see :func:`first_command`)."""


def first_command(seq: int) -> int:
    """The number ``m`` of the first command of a client that finds ``cmd_seq`` at
    ``seq`` when it claims the slot: after whatever is there (``(seq + 1) // 2``), or
    0 if that is so close to 2^64 that the sequence words would run out (what a
    departed client left; the network takes a new holder's sequence afresh).

    Example:
        >>> first_command(0), first_command(7), first_command(2**64 - 2)
        (0, 4, 0)
    """
    m = (seq + 1) // 2
    return m if 2 * m < SEQ_WRAP else 0


def _printable(text: str) -> str:
    """``text`` with what is not printable replaced (a holder's name is the client's)."""
    return "".join(c if c.isprintable() else "?" for c in text)


class SlotTakenError(DmxError):
    """Another client holds the slot.

    Attributes:
        pid: the holder's pid, once shown to hold the claim (0: it could not be, e.g.
            a holder still claiming or of another PID namespace).
    """

    def __init__(self, message: str, *, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


SCORE_FIELDS = ("reward", "terminated", "truncated")
"""The fields after an observation's records (a gym run with --episodes fills them)."""


def scores_dtype(robots: int) -> np.dtype:
    """The fields after the records of ``robots``: f64 reward, u8 terminated, u8
    truncated, one each per robot."""
    return np.dtype([("reward", "<f8", (robots,)), ("terminated", "u1", (robots,)),
                     ("truncated", "u1", (robots,))])


def _align(n: int) -> int:
    return -(-n // 64) * 64


def field_table(record: np.dtype) -> list[tuple[str, int, int, str, int]]:
    """``(name, offset, count, kind, size)`` of each field of ``record``: what a C
    client looks up (``kind`` u, i or f; ``size`` bytes of one element).

    Example:
        >>> from dmxshm.matrix.obs import obs_dtype
        >>> [row for row in field_table(obs_dtype(None)) if row[0] == "lane"]
        [('lane', 84, 3, 'f', 4)]
    """
    rows: list[tuple[str, int, int, str, int]] = []
    assert record.fields is not None
    for name, (sub, offset, *_) in record.fields.items():
        base, shape = sub.base, sub.shape
        rows.append((str(name), int(offset), int(np.prod(shape)) if shape else 1, str(base.kind),
                     int(base.itemsize)))
    return rows


@dataclass(frozen=True)
class Layout:
    """Where each part of a slot lies (bytes from the segment's start)."""

    robots: int
    record: np.dtype
    robot_ids: int
    descr: int
    descr_bytes: int
    obs: int
    cmd: int
    size: int

    @classmethod
    def of(cls, robots: int, record: np.dtype) -> Layout:
        descr = len(json.dumps(np.lib.format.dtype_to_descr(record)).encode())
        ids = TABLE + FIELD_ENTRY.size * len(record.names or ())
        at_descr = ids + 4 * robots
        obs = _align(at_descr + descr)
        obs_bytes = OBS_HEAD + robots * record.itemsize + 10 * robots
        cmd = _align(obs + obs_bytes)
        return cls(robots, record, ids, at_descr, descr, obs, cmd,
                   _align(cmd + CMD_HEAD + 16 * robots + LIGHTS_BYTES * robots))

    @property
    def records(self) -> int:
        return self.obs + OBS_HEAD

    @property
    def reward(self) -> int:
        return self.records + self.robots * self.record.itemsize


class SlotSegment:
    """One agent slot: the segment, its bells and its lock descriptor.

    The network makes it with :meth:`create` and serves it (:class:`SlotServer`
    in :mod:`dmxshm.network.slot`); a client opens it with :meth:`attach`.
    """

    def __init__(self, name: str, buf: mmap.mmap, fd: int,
                 bells: tuple[posix_ipc.Semaphore, posix_ipc.Semaphore]) -> None:
        self.name = name
        self.buf = buf
        self.fd = fd
        self.obs_bell, self.cmd_bell = bells
        # The network's side (serve): what it wrote, to write back what a client
        # wrote over; the lock orders publish (a thread in realtime) and restore.
        self._guard = threading.Lock()
        self._line: np.ndarray | None = None  # the network line as the network wrote it
        self._own: tuple[bytes, bytes] = (b"", b"")  # header; field table to the obs area
        self._obs_copy: np.ndarray | None = None  # the observation area as last published
        self._q = 0  # observations published
        head = HEADER.unpack_from(buf, 0)
        (magic, abi, mode, index, robots, record_bytes, nfields, table, ids, obs, cmd,
         descr, descr_bytes, self.max_wheel_speed) = head
        if magic != MAGIC or abi != ABI_VERSION:
            raise LayoutError(
                f"{name} is not a dmxshm agent slot of ABI {ABI_VERSION} (magic {magic!r}, "
                f"abi {abi}). If its network runs, a departed client wrote over the header "
                "and the network writes it back when it next looks at the slot (within "
                "50 ms): connect again, or give dmxshm.connect a timeout_s")
        self.mode = "gym" if mode == 0 else "realtime"
        units = struct.unpack_from("<Q", buf, O_UNITS)[0]
        self.action = next((a for a, u in UNITS.items() if u == units), None)
        if self.action is None:
            raise LayoutError(f"{name}: unknown command units {units} (this client knows "
                              f"{', '.join(f'{u} {a}' for a, u in UNITS.items())})")
        self.index, self.n = int(index), int(robots)
        self.record = np.lib.format.descr_to_dtype(_tuplify(json.loads(
            bytes(buf[descr:descr + descr_bytes]).decode())))
        if self.record.itemsize != record_bytes:
            raise LayoutError(f"slot {name}: its header does not match its record")
        self.layout = Layout.of(self.n, self.record)
        self._seen = self._header_bytes()  # the header and field table as read here
        self.robots = tuple(int(r) for r in np.frombuffer(buf, "<u4", self.n, ids))
        self._u64 = np.frombuffer(buf, "<u8", 16, NET_LINE)  # network and holder lines
        n, lay = self.n, self.layout
        self.obs_head = np.frombuffer(buf, np.dtype([("step", "<u8"), ("sim_time_s", "<f8")]),
                                      1, lay.obs)
        self.records = np.frombuffer(buf, self.record, n, lay.records)
        self.obs_bytes = np.frombuffer(buf, np.uint8, n * self.record.itemsize, lay.records)
        # The reserved fields after the records: each robot's reward and episode flags
        # (a gym run with --episodes fills them; otherwise 0).
        self.scores = np.frombuffer(buf, scores_dtype(n), 1, lay.reward)
        # Of the observation area, the bytes a publish without scores does not write:
        # the padding after its head and all after its records (the scores).
        records = lay.records - lay.obs
        self._rest = np.r_[self.obs_head.itemsize:records,
                           records + self.obs_bytes.size:self._obs_bytes()]
        self.cmd_head = np.frombuffer(
            buf, np.dtype([("seq", "<u8"), ("step", "<u8"), ("sent_time_s", "<f8"),
                           ("reset", "<u4"), ("flags", "<u4")]), 1, lay.cmd)
        self.wheels = np.frombuffer(buf, "<f8", 2 * n, lay.cmd + CMD_HEAD).reshape(n, 2)
        self.lights = np.frombuffer(buf, "<f4", 16 * n, lay.cmd + CMD_HEAD + 16 * n).reshape(
            n, len(LIGHTS), 4)

    # -- making and opening -----------------------------------------------------
    @classmethod
    def create(cls, registry: Registry, index: int, mode: str, robots: tuple[int, ...],
               record: np.dtype, max_wheel_speed: float, action: str = "wheel-speed"
               ) -> SlotSegment:
        """The slot ``index`` of a network (the registry unlinks it)."""
        lay = Layout.of(len(robots), record)
        seg = registry.create_segment(f"slot.{index}", lay.size)
        buf = seg.buf
        table = field_table(record)
        for i, (name, offset, count, kind, size) in enumerate(table):
            FIELD_ENTRY.pack_into(buf, TABLE + FIELD_ENTRY.size * i, name.encode()[:16],
                                  offset, count, kind.encode(), size)
        np.frombuffer(buf, "<u4", len(robots), lay.robot_ids)[:] = robots
        descr = json.dumps(np.lib.format.dtype_to_descr(record)).encode()
        buf[lay.descr:lay.descr + len(descr)] = descr
        struct.pack_into("<Q", buf, O_UNITS, UNITS[action])
        HEADER.pack_into(buf, 0, b"\0" * 8, ABI_VERSION, MODES[mode], index, len(robots),
                         record.itemsize, len(table), TABLE, lay.robot_ids, lay.obs, lay.cmd,
                         lay.descr, len(descr), float(max_wheel_speed))
        buf[0:8] = MAGIC  # last: an attacher never sees half a header
        bells = tuple(registry.create_semaphore(f"{seg.name}.{b}", 0) for b in ("obs", "cmd"))
        fd = os.open(_path(seg.name), os.O_RDWR)
        return cls(seg.name, buf, fd, (bells[0], bells[1]))

    @classmethod
    def attach(cls, name: str) -> SlotSegment:
        """Open the slot ``name`` (a client, or the network's server process).

        Raises:
            SegmentMissingError: it is gone (the network ended).
            LayoutError: it is not an agent slot of this ABI.
        """
        seg = Segment.attach(name)
        fd = -1
        bells: list[posix_ipc.Semaphore] = []
        try:
            fd = os.open(_path(name), os.O_RDWR)
            for b in ("obs", "cmd"):
                try:
                    bells.append(posix_ipc.Semaphore(f"{name}.{b}", 0))
                except posix_ipc.ExistentialError as exc:
                    raise SegmentMissingError(
                        f"semaphore {name}.{b} of slot {name} does not exist. "
                        f"{REMOVE_IPC_HINT}") from exc
            if seg.size_bytes < TABLE:
                raise LayoutError(f"{name} is not a dmxshm agent slot (too small)")
            try:
                return cls(name, seg.buf, fd, (bells[0], bells[1]))
            except (ValueError, TypeError, KeyError, IndexError, struct.error) as exc:
                if isinstance(exc, LayoutError):
                    raise
                # A header half written back (or damaged past what the checks see): as
                # a damaged header, which the network writes back (connect retries it).
                raise LayoutError(f"{name}: its header does not parse ({exc}); a departed "
                                  "client may have written over it: connect again") from exc
        except BaseException:
            for bell in bells:
                bell.close()
            if fd >= 0:
                os.close(fd)
            seg.close()
            raise

    def close(self) -> None:
        """Let go of everything (a lock held through this descriptor is dropped); a
        second call does nothing."""
        if self._u64 is None:
            return
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        for bell in (self.obs_bell, self.cmd_bell):
            bell.close()
        self.records = self.obs_bytes = self.wheels = self.lights = None  # type: ignore[assignment]
        self.scores = None  # type: ignore[assignment]
        self._u64 = self.obs_head = self.cmd_head = None  # type: ignore[assignment]

    # -- the words ---------------------------------------------------------------
    def word(self, offset: int) -> int:
        return int(self._u64[(offset - NET_LINE) // 8])

    def set_word(self, offset: int, value: int) -> None:
        i = (offset - NET_LINE) // 8
        self._u64[i] = value
        if self._line is not None and i < len(self._line):
            self._line[i] = value  # the network's own copy of its line

    @property
    def status(self) -> int:
        return self.word(O_STATUS)

    def holder(self) -> tuple[int, float, str]:
        """``(pid, claimed at, name)`` as the holder last wrote them (stale once it left;
        the pid unverified: see :meth:`holds`; a time that is not a plausible Unix
        time is 0, a name's unprintable characters ``?``)."""
        raw = bytes(self.buf[O_HOLDER_NAME:O_HOLDER_NAME + HOLDER_NAME_BYTES])
        at = float(np.frombuffer(self.buf, "<f8", 1, O_HOLDER_AT)[0])
        plausible = math.isfinite(at) and 0 < at < time.time() + 86400
        return (self.word(O_HOLDER_PID), at if plausible else 0.0,
                _printable(raw.split(b"\0")[0].decode("utf-8", "replace")))

    def holds(self, pid: int) -> bool:
        """Whether process ``pid`` holds the client's claim on this slot now (what a
        pid from the holder line must pass before anyone names it)."""
        return holds_claim(pid, _path(self.name), CLIENT_BYTE)

    def held(self) -> bool:
        """Whether a client holds the slot now."""
        return is_locked(self.fd, CLIENT_BYTE)

    def served(self) -> bool:
        """Whether the network serves the slot now (its process holds byte 0)."""
        return is_locked(self.fd, NETWORK_BYTE)

    def ring(self, bell: posix_ipc.Semaphore) -> None:
        """Ring ``bell`` (capped at 1: a wake-up, never a count)."""
        if bell.value == 0:
            bell.release()

    # -- the network's side -------------------------------------------------------
    def serve(self, network_pid: int) -> None:
        """Take byte 0: the slot is served from now on (until this descriptor closes)."""
        if not try_lock(self.fd, NETWORK_BYTE):
            raise DmxError(f"slot {self.name} is already served by another process")
        self._own = (bytes(self.buf[0:NET_LINE]), bytes(self.buf[TABLE:self.layout.obs]))
        self._line = self._u64[:(HOLDER_LINE - NET_LINE) // 8].copy()
        self._line[:(O_UNITS - NET_LINE) // 8] = 0  # nothing published, taken or examined
        self.set_word(O_NET_PID, network_pid)
        self.set_word(O_AWAITING, NOT_AWAITING)
        self.set_word(O_STATUS, SERVING)
        self.restore()
        self.reset_commands()

    def restore(self) -> tuple[str, ...]:
        """Write back what a client wrote over of the network's own (the header, the
        field table with the robot ids and descr, the network line, the observation
        area): the parts it found changed (none: ``()``).

        A changed observation is published again, whole, under a new sequence number,
        so that no client takes a copy that was half written over. Not before
        :meth:`serve`.
        """
        if self._line is None:
            raise DmxError(f"slot {self.name}: restore() before serve()")
        buf, lay, damaged = self.buf, self.layout, []
        header, table = self._own
        with self._guard:
            if buf[0:NET_LINE] != header or buf[TABLE:lay.obs] != table:
                damaged.append("header")
                buf[0:8] = b"\0" * 8  # the magic last, as at creation
                buf[TABLE:lay.obs] = table
                buf[8:NET_LINE] = header[8:]
                if NEEDS_FENCE:
                    fence()
                buf[0:8] = header[:8]
            line = self._u64[:len(self._line)]
            if (line != self._line).any():
                damaged.append("network line")
                line[:] = self._line
            area = np.frombuffer(buf, np.uint8, self._obs_bytes(), lay.obs)
            copy = self._obs_copy
            if copy is not None and not np.array_equal(area, copy):
                damaged.append("observation")
                self._publish_raw(functools.partial(np.copyto, area, copy))
        if "observation" in damaged:
            self.ring(self.obs_bell)
        return tuple(damaged)

    def reset_commands(self) -> bool:
        """Give a free slot a clean command area and holder line (all 0; ``examined``
        0), so that the next client starts from nothing whatever the last one left.
        Byte 1 is held meanwhile, so that no claim lands half way. False (nothing
        done) if a client holds the slot."""
        if not try_lock(self.fd, CLIENT_BYTE):
            return False
        try:
            lay = self.layout
            self.buf[lay.cmd:lay.size] = bytes(lay.size - lay.cmd)
            self.buf[HOLDER_LINE:TABLE] = bytes(TABLE - HOLDER_LINE)
            self.set_word(O_EXAMINED, 0)
        finally:
            unlock(self.fd, CLIENT_BYTE)
        return True

    def commands_clean(self) -> bool:
        """Whether the command area and the holder line are all 0 (as a new holder
        should find them)."""
        lay = self.layout
        return not (np.frombuffer(self.buf, np.uint8, lay.size - lay.cmd, lay.cmd).any()
                    or np.frombuffer(self.buf, np.uint8, TABLE - HOLDER_LINE, HOLDER_LINE).any())

    def _header_bytes(self) -> bytes:
        """The header and the field table (what no one but the network writes)."""
        return bytes(self.buf[0:NET_LINE]) + bytes(self.buf[TABLE:self.layout.obs])

    def _obs_bytes(self) -> int:
        return self.layout.reward + scores_dtype(self.n).itemsize - self.layout.obs

    def _publish_raw(self, write: Callable[[], None]) -> None:
        """Observation number ``self._q``: the sequence word odd, ``write()``, even
        (the caller holds the guard)."""
        q = self._q
        self.set_word(O_OBS_SEQ, 2 * q + 1)
        if NEEDS_FENCE:
            fence()
        write()
        if NEEDS_FENCE:
            fence()
        self.set_word(O_OBS_SEQ, 2 * q + 2)
        self._q = q + 1

    def publish(self, step: int, sim_time_s: float, obs: np.ndarray,
                scores: np.ndarray | None = None) -> int:
        """Write the next observation (seqlock) and ring the client's bell; its
        sequence word (``scores``: a record with ``reward``, ``terminated`` and
        ``truncated`` per robot, for the reserved fields; None leaves them 0)."""
        lay = self.layout

        def write() -> None:
            self.obs_head["step"] = step
            self.obs_head["sim_time_s"] = sim_time_s
            self.obs_bytes[:] = np.frombuffer(obs, np.uint8)
            if scores is not None:
                for key in SCORE_FIELDS:
                    self.scores[key][0] = scores[key]
            if self._line is None:  # not served: nothing to write back later
                return
            area = np.frombuffer(self.buf, np.uint8, self._obs_bytes(), lay.obs)
            copy = self._obs_copy
            if copy is None:
                self._obs_copy = area.copy()
                return
            if scores is None:  # the scores (and padding) as published last: whatever a
                rest = self._rest  # client wrote there goes
                area[rest] = copy[rest]
            np.copyto(copy, area)  # one copy into the buffer kept, no allocation

        with self._guard:
            self._publish_raw(write)
            seq = 2 * self._q
        self.ring(self.obs_bell)
        return seq

    def end(self, status: int = ENDED) -> None:
        """Say the network ended (``ENDED``) or failed, and wake the client."""
        self.set_word(O_AWAITING, NOT_AWAITING)
        self.set_word(O_STATUS, status)
        self.ring(self.obs_bell)

    # -- the client's side --------------------------------------------------------
    def claim(self, pid: int, name: str) -> None:
        """Take byte 1 and write the holder line.

        Raises:
            SlotTakenError: another client holds it (the message names its pid).
        """
        if not try_lock(self.fd, CLIENT_BYTE):
            holder, at, who = self.holder()
            holder = holder if holder and self.holds(holder) else 0
            since = (f", since {time.strftime('%H:%M:%S', time.localtime(at))}" if at else "")
            raise SlotTakenError(
                f"slot {self.index} (robots {', '.join(map(str, self.robots))}) is held by "
                + (f"pid {holder}" + (f" ({who})" if who else "") + since if holder else
                   "a client whose pid cannot be verified (still claiming, of another PID "
                   "namespace, or the network readying the slot): try again"),
                pid=holder)
        if self._header_bytes() != self._seen:
            # The header changed since this process read it (the network writing back
            # what a departed client damaged): the layout read then may be wrong.
            unlock(self.fd, CLIENT_BYTE)
            raise LayoutError(f"slot {self.name}: its header changed since it was opened "
                              "(the network rewrote what a departed client damaged): "
                              "connect again")
        self.set_word(O_HOLDER_PID, 0)  # first: the last holder's record is void
        raw = name.encode()[:HOLDER_NAME_BYTES - 1]
        self.buf[O_HOLDER_NAME:O_HOLDER_NAME + HOLDER_NAME_BYTES] = raw.ljust(
            HOLDER_NAME_BYTES, b"\0")
        np.frombuffer(self.buf, "<f8", 1, O_HOLDER_AT)[0] = time.time()
        self.set_word(O_HOLDER_PID, pid)  # last: it makes the record valid
        self.ring(self.cmd_bell)

    def obs_moved(self, seen: int) -> bool:
        """Whether the observation sequence word moved on from ``seen``."""
        return self.word(O_OBS_SEQ) != seen

    def cmd_moved(self, seen: int) -> bool:
        """Whether the command sequence word moved on from ``seen``."""
        return int(self.cmd_head["seq"][0]) != seen

    def unexamined(self) -> bool:
        """Whether a complete command is there that the network has not looked at yet."""
        seq = int(self.cmd_head["seq"][0])
        return seq % 2 == 0 and seq != self.word(O_EXAMINED)

    def read_obs(self, after: int) -> tuple[int, int, float, np.ndarray, np.ndarray] | None:
        """The observation if its sequence word is complete and not ``after``: ``(seq,
        step, sim time, records copy, scores copy)`` (``scores``: one record of the
        reserved fields, ``reward``, ``terminated`` and ``truncated``, an entry per
        robot); None if none is newer, or one is being written."""
        for _ in range(1000):
            before = self.word(O_OBS_SEQ)
            # != rather than >: a word a departed client wrote over and the network
            # wrote back may go back; every observation the network publishes differs
            if before == after or before % 2:
                return None
            if NEEDS_FENCE:
                fence()
            step = int(self.obs_head["step"][0])
            sim = float(self.obs_head["sim_time_s"][0])
            data = self.records.copy()
            scores = self.scores[0].copy()
            if NEEDS_FENCE:
                fence()
            if self.word(O_OBS_SEQ) == before:
                return before, step, sim, data, scores
        return None

    def write_cmd(self, m: int, step: int, wheels: np.ndarray, reset: bool = False,
                  sent_time_s: float | None = None, lights: np.ndarray | None = None,
                  lights_only: bool = False) -> None:
        """Write command number ``m`` answering ``step`` and ring the network's bell
        (``reset``: realtime, the slot's robots back at their start poses first;
        ``sent_time_s``: when it was made, ``time.monotonic()``; None: now;
        ``lights``: ``(n, 4, 4)`` RGBA of :data:`LIGHTS`; ``lights_only``: no wheels)."""
        head = self.cmd_head
        head["seq"] = 2 * m + 1
        if NEEDS_FENCE:
            fence()
        head["step"] = step
        head["sent_time_s"] = time.monotonic() if sent_time_s is None else sent_time_s
        head["reset"] = int(reset)
        head["flags"] = (0 if lights is None else LIGHTS_SET) | (LIGHTS_ONLY * lights_only)
        self.wheels[...] = wheels
        if lights is not None:
            self.lights[...] = lights
        if NEEDS_FENCE:
            fence()
        head["seq"] = 2 * m + 2
        self.ring(self.cmd_bell)


def _path(name: str) -> str:
    return os.path.join(SHM_DIR, name.lstrip("/"))
