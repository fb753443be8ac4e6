"""Recording a run to MCAP, reading it back, and what replay needs from it.

``dmxshm run --log run.mcap`` records, per robot, the camera images (PNG in
Foxglove's ``CompressedImage``), the pose (``PoseInFrame``), the wheel
commands as applied, and the IMU, encoder and time-of-flight readings (JSON
with their schemas), each with its simulated time (``sim_time_s``, or the
message's ``timestamp``) and its wall time (the MCAP log time), plus the
run's configuration and summary (``/dmxshm/config``, ``/dmxshm/summary``).

Each process writes its own part while the run goes (the engine its poses
and commands, each renderer its sensors), so no process waits for another
to log; the supervisor merges the parts into one file, in log-time order,
when the run ends. Topics:

======================  ===================  ================================
topic                   schema               written
======================  ===================  ================================
``/dmxshm/config``      JSON                 once, at the start
``/dmxshm/summary``     JSON                 once, at the end
``/robotNN/pose``       foxglove.PoseInFrame every engine step (state k)
``/robotNN/wheels``     JSON                 every engine step: the command
                                             physics applied in step k
``/robotNN/camera``     foxglove.Compressed- every camera frame
                        Image (png)
``/robotNN/imu``        JSON                 every IMU reading
``/robotNN/encoders``   JSON                 every encoder reading
``/robotNN/tof``        JSON                 every time-of-flight reading
``/robotNN/lights``     JSON                 each LED pattern an outside agent
                                             set (RGBA, 0 to 1, per LED)
======================  ===================  ================================

The parts folder (``run.mcap.parts``) holds an owner file naming the run
that writes it (its pid and start time): a second run given the same log
path is refused while that run lives, and a folder whose run is gone is
cleared. A part cut short (its process killed before it closed the file)
is merged up to its last whole record, and the cut is reported
(``cut_parts`` in :func:`info` and :func:`finish`, kept in the merged file
as the metadata record :data:`CUT_METADATA`); any other damage is an error.

Writing needs the ``log`` extra (``pip install 'dmxshm[log]'``: the ``mcap``
library and Foxglove's SDK for its message schemas).
"""

from __future__ import annotations

import heapq
import importlib
import json
import os
import secrets
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

from dmxshm.errors import DmxError, RefusedError
from dmxshm.pngio import encode_png
from dmxshm.shm.peers import process_create_time
from dmxshm.sim import sensing

CONFIG_TOPIC = "/dmxshm/config"
SUMMARY_TOPIC = "/dmxshm/summary"
FLUSH_S = 0.25  # a part reaches its file at least this often (a killed process loses less)
PNG_LEVEL = 1  # zlib level of logged camera frames: fast, about 2/3 of level 6's ratio
SENSOR_TOPICS = sensing.SENSOR_NAMES  # /robotNN/<sensor>: the registry's timed sensors
LOG_FORMAT = 2  # the layout of the topics above; replay checks it (2: every sample hashed)
OWNER_FILE = "owner.json"  # in a parts folder: the run writing it (pid, start time)
CUT_METADATA = "dmxshm.cut_parts"  # in a merged log: the parts that were cut short
_SAME_START_S = 1.0  # a pid whose process started this close to the owner's is the owner
# The same, in clock ticks since boot (the owner file's own reading, exact to a tick);
# the wall-clock start above moves by a whole second when /proc/stat's boot time does.
_SAME_BOOT_START_S = 0.05

_SCHEMAS: dict[str, dict[str, Any]] = {  # a sensor's: its registration's (LogFields)
    "wheels": {"left_rad_s": "number", "right_rad_s": "number", "expired": "boolean"},
    "lights": {"front_left": "array", "front_right": "array", "back_left": "array",
               "back_right": "array"},
}


class LogError(DmxError):
    """A log cannot be written or read: the extra is missing, or the file is bad."""


class LogRefusedError(LogError, RefusedError):
    """A log refused before anything started: the extra is missing, the folder does
    not exist, there is no log at the path."""


class LogInUseError(LogRefusedError):
    """The log's parts folder belongs to a run that is still going.

    Attributes:
        pid: that run's process (its supervisor).
    """

    def __init__(self, message: str, *, pid: int) -> None:
        super().__init__(message)
        self.pid = pid


def robot_topic(robot: int, what: str) -> str:
    """``/robot03/camera``..."""
    return f"/robot{robot:02d}/{what}"


def parts_dir(path: str) -> str:
    """Where the processes of a run write their parts of the log at ``path``."""
    return f"{path}.parts"


def _require(module: str, doing: str) -> Any:
    """``module`` imported, or a LogError naming the extra (``doing``: for what)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise LogRefusedError(f"{doing} needs the log extra: pip install 'dmxshm[log]'") \
            from None


def _require_writer() -> Any:
    return _require("foxglove", "recording to MCAP")


def _require_reader() -> Any:
    return _require("mcap.reader", "reading MCAP logs")


def check_writable(path: str) -> None:
    """Fail now, not at the end of a run, when the log cannot be written.

    Raises:
        LogRefusedError: the extra is missing, or the folder does not exist.
        LogInUseError: a run that is still going writes a log to ``path``.
    """
    _require_writer()
    _require_reader()
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise LogRefusedError(f"cannot write the log {path}: the folder {folder} does not "
                              "exist; create it, or give another path")
    _refuse_if_in_use(path)


def _owner_record(path: str) -> tuple[int, float, float | None, str] | None:
    """``(pid, start time, start since boot or None, claim)`` of the owner file of the
    parts of ``path``, or None (no folder, or one left by a run that never wrote its
    owner file). The start since boot is absent from an older dmxshm's file."""
    try:
        with open(os.path.join(parts_dir(path), OWNER_FILE)) as f:
            data = json.load(f)
        boot = data.get("started_since_boot_s")
        return (int(data["pid"]), float(data["started_s"]),
                None if boot is None else float(boot), str(data["claim"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def owner(path: str) -> int | None:
    """The pid of the live run whose parts of a log to ``path`` are being written, or
    None: no parts folder, or one whose run is gone (no owner file, or its process
    ended; a pid taken since by another process does not count, its start time
    differs)."""
    record = _owner_record(path)
    if record is None:
        return None
    pid, started_s, since_boot_s, _ = record
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if since_boot_s is not None:  # clock ticks since boot: no wall clock in it
            alive = abs(process_create_time(pid) - since_boot_s) < _SAME_BOOT_START_S
        else:  # psutil's, as the wall clock tells the boot time now
            alive = abs(proc.create_time() - started_s) < _SAME_START_S
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:  # another user's process: assume it is the owner
        return pid
    return pid if alive else None


def _refuse_if_in_use(path: str) -> None:
    pid = owner(path)
    if pid is not None:
        who = f"pid {pid}, this process" if pid == os.getpid() else f"pid {pid}"
        raise LogInUseError(
            f"the log {path} is being written by a run still going ({who}): its parts are "
            f"in {parts_dir(path)}. Wait for that run to end, or give another --log path",
            pid=pid)


def _claim_parts(path: str) -> str:
    """Make the parts folder of ``path`` this process's: created whole with its owner
    file (a rename, so another run never sees it without one); a folder left by a run
    that is gone is removed first. Returns the claim (a token in the owner file).

    Raises:
        LogInUseError: a run that is still going owns it.
    """
    folder = parts_dir(path)
    base = os.path.dirname(os.path.abspath(folder))
    claim = secrets.token_hex(8)
    new = tempfile.mkdtemp(prefix=f"{os.path.basename(folder)}.new-", dir=base)
    try:
        with open(os.path.join(new, OWNER_FILE), "w") as f:
            json.dump({"pid": os.getpid(), "started_s": psutil.Process().create_time(),
                       "started_since_boot_s": process_create_time(os.getpid()),
                       "claim": claim}, f)
        for _ in range(3):  # another run may claim a stale folder between two tries
            try:
                os.rename(new, folder)
                return claim
            except OSError:
                if not os.path.lexists(folder):
                    raise
            if os.path.islink(folder) or not os.path.isdir(folder):
                raise LogRefusedError(f"{folder} is in the way of the log's parts folder (it "
                                      "is not a folder); move it, or give another --log path")
            _refuse_if_in_use(path)
            stale = tempfile.mkdtemp(prefix=f"{os.path.basename(folder)}.stale-", dir=base)
            try:
                os.rename(folder, os.path.join(stale, "parts"))
            except FileNotFoundError:
                pass  # another run removed it first
            shutil.rmtree(stale, ignore_errors=True)
        _refuse_if_in_use(path)
        raise LogRefusedError(f"cannot claim the parts folder {folder}: another run keeps "
                              "creating it; give another --log path")
    finally:
        shutil.rmtree(new, ignore_errors=True)


def _owned_here(path: str, claim: str | None) -> bool:
    """The parts folder of ``path`` was claimed by this process (:func:`start`), with
    ``claim`` (None: any claim of this process)."""
    record = _owner_record(path)
    return (record is not None and record[0] == os.getpid() and owner(path) == os.getpid()
            and claim in (None, record[3]))


def _json_schema(kind: str) -> dict[str, Any]:
    props: dict[str, Any] = {"step": {"type": "integer"}, "sim_time_s": {"type": "number"},
                             "wall_time_s": {"type": "number"}}
    fields = _SCHEMAS.get(kind)
    if fields is None and kind in sensing.SENSOR_NAMES:
        log = sensing.get(kind).log
        fields = dict(log.types) if log is not None else None
    props |= {k: {"type": v} for k, v in (fields or {}).items()}
    return {"type": "object", "properties": props}


def make_channel(context: Any, topic: str, kind: str) -> Any:
    """The channel of ``topic`` in the foxglove ``context``, with the log's schema for
    ``kind``: Foxglove's ``CompressedImage`` (``camera``), ``PoseInFrame`` (``pose``),
    else JSON with the jsonschema ``dmxshm.<kind>``. The log's parts and Foxglove
    live (:mod:`dmxshm.view.foxglove`) make their channels here, so a live run
    and its log have the same topics with the same schemas.

    Raises:
        LogRefusedError: foxglove-sdk is not installed.
    """
    fg = _require_writer()
    from foxglove import channels

    if kind == "camera":
        return channels.CompressedImageChannel(topic, context=context)
    if kind == "pose":
        return channels.PoseInFrameChannel(topic, context=context)
    schema = fg.Schema(name=f"dmxshm.{kind}", encoding="jsonschema",
                       data=json.dumps(_json_schema(kind)).encode())
    return fg.Channel(topic, schema=schema, message_encoding="json", context=context)


_messages: Any = None  # foxglove.messages once imported (an optional extra; see _fg_messages)


def _fg_messages() -> Any:
    """foxglove.messages, imported once: an import statement in the messages' makers
    below costs 1.5 us a message, a quarter of a pose's."""
    global _messages
    if _messages is None:
        _messages = importlib.import_module("foxglove.messages")
    return _messages


def stamp(sim_time_s: float) -> Any:
    """A message's ``timestamp``: the simulated time ``sim_time_s`` (foxglove's Timestamp)."""
    sec, nsec = divmod(round(sim_time_s * 1e9), 1_000_000_000)
    return _fg_messages().Timestamp(int(sec), int(nsec))


def pose_message(sim_time_s: float, xyz: tuple[float, float, float],
                 quat_xyzw: tuple[float, float, float, float]) -> Any:
    """A robot's pose in the ``map`` frame, stamped with ``sim_time_s`` (``PoseInFrame``)."""
    m = _fg_messages()
    (x, y, z), (qx, qy, qz, qw) = xyz, quat_xyzw
    return m.PoseInFrame(timestamp=stamp(sim_time_s), frame_id="map",
                         pose=m.Pose(position=m.Vector3(x=x, y=y, z=z),
                                     orientation=m.Quaternion(x=qx, y=qy, z=qz, w=qw)))


def image_message(robot: int, image: np.ndarray, sim_time_s: float) -> Any:
    """Robot ``robot``'s camera frame as PNG, stamped with ``sim_time_s``
    (``CompressedImage``)."""
    return _fg_messages().CompressedImage(timestamp=stamp(sim_time_s),
                                          frame_id=f"robot{robot:02d}/camera",
                                          data=encode_png(image, PNG_LEVEL), format="png")


class LogPart:
    """One process's part of a run's log: an MCAP file of its own topics.

    Args:
        path: the final log's path (the part goes to its parts folder).
        role: the process's name (``engine``, ``renderer-0``, ``supervisor``).
    """

    def __init__(self, path: str, role: str) -> None:
        fg = _require_writer()
        os.makedirs(parts_dir(path), exist_ok=True)
        self.path = os.path.join(parts_dir(path), f"{role}.mcap")
        self._ctx = fg.Context()
        # Unchunked and uncompressed: each message reaches the file as it is
        # logged (a killed process's part keeps what it wrote), and no process
        # of the run compresses in its loop; the merge compresses, once.
        self._writer = fg.open_mcap(self.path, context=self._ctx, allow_overwrite=True,
                                    writer_options=fg.mcap.MCAPWriteOptions(
                                        use_chunks=False, compression=None))
        self._channels: dict[str, Any] = {}
        self.seconds = 0.0  # time spent logging (encoding included)
        self._flush_at = time.monotonic() + FLUSH_S

    def _channel(self, topic: str, kind: str) -> Any:
        ch = self._channels.get(topic)
        if ch is None:
            ch = self._channels[topic] = make_channel(self._ctx, topic, kind)
        return ch

    def record(self, topic: str, kind: str, payload: dict[str, Any],
               wall_ns: int | None = None) -> None:
        """A JSON message (``kind`` names its schema)."""
        t0 = time.perf_counter()
        self._channel(topic, kind).log(payload, log_time=wall_ns or time.time_ns())
        self.seconds += time.perf_counter() - t0
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        now = time.monotonic()
        if now >= self._flush_at:
            self._writer.flush()
            self._flush_at = now + FLUSH_S

    def pose(self, robot: int, state: np.void, step: int, sim_time_s: float,
             wall_ns: int) -> None:
        """Robot ``robot``'s pose from its state record, in the ``map`` frame."""
        t0 = time.perf_counter()
        x, y, z = (float(v) for v in state["pos_m"])
        qx, qy, qz, qw = (float(v) for v in state["quat_xyzw"])
        self._channel(robot_topic(robot, "pose"), "pose").log(
            pose_message(sim_time_s, (x, y, z), (qx, qy, qz, qw)), log_time=wall_ns)
        self.seconds += time.perf_counter() - t0
        self._maybe_flush()

    def wheels(self, step: int, sim_time_s: float, wall_ns: int, applied: np.ndarray,
               expired: np.ndarray | None = None) -> None:
        """The command physics applied to every robot in engine step ``step``."""
        wall_s = wall_ns / 1e9
        for robot, (left, right) in enumerate(applied.tolist()):
            self.record(robot_topic(robot, "wheels"), "wheels",
                        {"step": step, "sim_time_s": sim_time_s, "wall_time_s": wall_s,
                         "left_rad_s": left, "right_rad_s": right,
                         "expired": bool(expired[robot]) if expired is not None else False},
                        wall_ns)

    def lights(self, step: int, sim_time_s: float, wall_ns: int, lights: np.ndarray,
               rows: np.ndarray) -> None:
        """The LEDs of robots ``rows`` were set (``lights``: every robot's ``(4, 4)``)."""
        from dmxshm.shm.slot import LIGHTS

        for robot in rows.tolist():
            payload: dict[str, Any] = {"step": step, "sim_time_s": sim_time_s,
                                       "wall_time_s": wall_ns / 1e9}
            payload |= {led: [round(float(v), 6) for v in rgba]
                        for led, rgba in zip(LIGHTS, lights[robot], strict=True)}
            self.record(robot_topic(robot, "lights"), "lights", payload, wall_ns)

    def sensors(self, robots: tuple[int, ...], obs: np.ndarray, due: tuple[str, ...],
                wall_ns: int) -> None:
        """The ``due`` sensors' newest readings of ``robots`` (one obs record each)."""
        t0 = time.perf_counter()
        wall_s = wall_ns / 1e9
        names = obs.dtype.names or ()
        for j, robot in enumerate(robots):
            o = obs[j]
            step = int(o["step"])
            base = {"step": step, "wall_time_s": wall_s}
            for sensor in sensing.timed():
                if sensor.name not in due or sensor.field not in names:
                    continue
                sim_time_s = float(o[sensor.time_field])
                if sensor.log is None:  # the camera's image
                    self._image(robot, o[sensor.field], sim_time_s, wall_ns)
                    continue
                self._channel(robot_topic(robot, sensor.name), sensor.name).log(
                    base | {"sim_time_s": sim_time_s, **sensor.log.encode(o[sensor.field])},
                    log_time=wall_ns)
        self.seconds += time.perf_counter() - t0
        self._maybe_flush()

    def _image(self, robot: int, image: np.ndarray, sim_time_s: float, wall_ns: int) -> None:
        self._channel(robot_topic(robot, "camera"), "camera").log(
            image_message(robot, image, sim_time_s), log_time=wall_ns)

    def images(self, robots: tuple[int, ...], images: np.ndarray, sim_time_s: float,
               wall_ns: int) -> None:
        """One camera frame of each of ``robots`` (a camera process's ``(n, H, W, 3)``)."""
        t0 = time.perf_counter()
        for j, robot in enumerate(robots):
            self._image(robot, images[j], sim_time_s, wall_ns)
        self.seconds += time.perf_counter() - t0
        self._maybe_flush()

    def close(self) -> None:
        """Finish the part's file (its summary and index)."""
        self._writer.close()


def start(path: str, config: dict[str, Any]) -> str:
    """Before a run: check that its log can be written, make its parts folder this
    process's (clearing one left by a run that is gone), and write the
    configuration (the supervisor's first part).

    Returns:
        the claim on the parts folder: give it to :func:`finish_unfinished`, so
        that only the run that made the parts merges them (two runs of one
        process on one path are told apart by it, not by their pid).

    Raises:
        LogRefusedError: the extra is missing, or the folder does not exist.
        LogInUseError: a run that is still going writes a log to ``path``
            (its parts are never touched).
    """
    check_writable(path)
    claim = _claim_parts(path)
    part = LogPart(path, "supervisor-config")
    part.record(CONFIG_TOPIC, "config", {"log_format": LOG_FORMAT, **config})
    part.close()
    return claim


def finish(path: str, summary: dict[str, Any] | None) -> LogInfo:
    """Merge the parts of the log at ``path`` into it, with the run's summary
    (None: the run did not finish, and the log says so by lacking it).

    Returns:
        :func:`info` of the merged log, without its configuration and summary
        (the run's summary has them); ``cut_parts`` lists the parts cut short.
        In a run's summary JSON it is written without ``config`` and ``summary``.

    Raises:
        LogInUseError: another run that is still going owns the parts folder.
        LogError: a part is damaged otherwise than cut short.
    """
    if owner(path) not in (None, os.getpid()):  # never merge another run's parts
        _refuse_if_in_use(path)
    if summary is not None:
        part = LogPart(path, "supervisor-summary")
        part.record(SUMMARY_TOPIC, "summary", summary)
        part.close()
    folder = parts_dir(path)
    parts = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".mcap"))
    counts, cuts = merge(parts, path)
    shutil.rmtree(folder, ignore_errors=True)
    return _log_info(path, counts, None, None, cuts)


def _records(path: str, cuts: list[dict[str, Any]]) -> Iterator[tuple[int, Any, Any]]:
    """``(log_time, (channel, schema), message)`` of a part, in written order.

    A part cut short (its process killed before it closed the file: no footer,
    maybe half a record at the end) gives the messages of its whole records,
    and ``{"part": role, "at_byte": n, "lost_bytes": k}`` is appended to ``cuts``
    (``n``: where its last whole record ends; ``k``: the bytes after it).
    A cut shows as the reader running out of bytes (mcap's ``EndOfFile``, or
    ``struct.error`` on a field cut in two) at the end of the file.

    Raises:
        LogError: the part is damaged before its end (a bad magic, a record
            longer than the limit, a message of an unknown channel).
    """
    from mcap.exceptions import EndOfFile, McapError
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader

    schemas: dict[int, Any] = {}
    channels: dict[int, Any] = {}
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        whole = 0  # the end of the last whole record read
        try:
            for rec in StreamReader(f).records:
                whole = f.tell()
                if isinstance(rec, Schema):
                    schemas[rec.id] = rec
                elif isinstance(rec, Channel):
                    channels[rec.id] = (rec, schemas.get(rec.schema_id))
                elif isinstance(rec, Message):
                    channel = channels.get(rec.channel_id)
                    if channel is None:
                        raise LogError(f"the log part {path} is corrupted: a message at byte "
                                       f"{whole} is on channel {rec.channel_id}, never "
                                       "declared")
                    yield rec.log_time, channel, rec
        except (EndOfFile, struct.error, McapError, UnicodeDecodeError) as exc:
            if isinstance(exc, (EndOfFile, struct.error)) and f.tell() >= size:
                cuts.append({"part": os.path.basename(path).removesuffix(".mcap"),
                             "at_byte": whole, "lost_bytes": size - whole})
                return
            raise LogError(f"the log part {path} is corrupted after byte {whole} (of "
                           f"{size}): {type(exc).__name__}: {exc}") from exc


def finish_unfinished(path: str, claim: str | None = None) -> LogInfo | None:
    """After a run that failed or was stopped: merge what its parts hold (no
    summary: replay refuses such a log). None when there was nothing left, or
    when the parts are not this run's: another process's, or, with ``claim``
    (what :func:`start` returned), another claim's. A part cut short is named
    in a warning."""
    if not os.path.isdir(parts_dir(path)) or not _owned_here(path, claim):
        return None
    try:
        done = finish(path, None)
    except Exception as exc:  # noqa: BLE001 - never hide the run's own error behind this
        print(f"dmxshm: warning: the log {path} could not be finished: {exc}", file=sys.stderr)
        return None
    for line in cut_warnings(path, done.cut_parts):
        print(line, file=sys.stderr)
    return done


def cut_warnings(path: str, cut_parts: list[dict[str, Any]]) -> list[str]:
    """One warning line per part of the log at ``path`` that was cut short."""
    return [f"dmxshm: warning: the log {path} lacks the end of the part {c['part']}: its "
            f"process ended before closing it; its records up to byte {c['at_byte']} are in "
            f"the log, {c['lost_bytes']} byte(s) after them were lost" for c in cut_parts]


def merge(parts: list[str], out: str) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """One MCAP file of the messages of ``parts``, in log-time order (zstd chunks).

    Returns:
        per topic, what :func:`info` counts (so the merged file need not be read
        again for it); and the parts that were cut short (see :func:`_records`),
        also kept in the merged file (metadata :data:`CUT_METADATA`).

    Raises:
        LogError: a part is damaged otherwise than cut short (nothing is written).
    """
    _require_reader()
    from mcap.writer import CompressionType, Writer

    tmp = f"{out}.tmp"
    try:
        with open(tmp, "wb") as f:
            w = Writer(f, compression=CompressionType.ZSTD)
            w.start(profile="", library="dmxshm")
            schema_ids: dict[tuple[str, str, bytes], int] = {}
            channel_ids: dict[str, int] = {}
            counts: dict[str, list[Any]] = {}
            cuts: list[dict[str, Any]] = []
            # Each part is in written order, which is its log-time order (one
            # process, one clock); heapq.merge interleaves them lazily.
            ordered = heapq.merge(*(_records(p, cuts) for p in parts), key=lambda item: item[0])
            for _, (channel, schema), msg in ordered:
                cid = channel_ids.get(channel.topic)
                if cid is None:
                    sid = 0
                    if schema is not None:
                        key = (schema.name, schema.encoding, schema.data)
                        if key not in schema_ids:
                            schema_ids[key] = w.register_schema(schema.name, schema.encoding,
                                                                schema.data)
                        sid = schema_ids[key]
                    cid = channel_ids[channel.topic] = w.register_channel(
                        channel.topic, channel.message_encoding, sid, dict(channel.metadata))
                w.add_message(cid, msg.log_time, msg.data, msg.publish_time, msg.sequence)
                _count(counts, channel.topic, schema, msg.log_time)
            cuts.sort(key=lambda c: c["part"])
            if cuts:
                w.add_metadata(CUT_METADATA, {"parts": json.dumps(cuts)})
            w.finish()
        os.replace(tmp, out)
        return counts, cuts
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass
class TopicInfo:
    """One topic of a log: its schema, message count and rate."""

    topic: str
    schema: str
    messages: int
    first_s: float
    last_s: float

    @property
    def rate_hz(self) -> float:
        span = self.last_s - self.first_s
        return (self.messages - 1) / span if self.messages > 1 and span > 0 else 0.0


@dataclass
class LogInfo:
    """What ``dmxshm log info`` shows."""

    path: str
    size_bytes: int
    duration_s: float
    topics: list[TopicInfo] = field(default_factory=list)
    config: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    cut_parts: list[dict[str, Any]] = field(default_factory=list)
    """The parts cut short when the log was merged: ``part``, ``at_byte``, ``lost_bytes``."""

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size_bytes": self.size_bytes, "duration_s": self.duration_s,
                "topics": [{"topic": t.topic, "schema": t.schema, "messages": t.messages,
                            "rate_hz": t.rate_hz} for t in self.topics],
                "config": self.config, "summary": self.summary, "cut_parts": self.cut_parts}


def _open(path: str) -> Any:
    reader = _require_reader()
    if not os.path.isfile(path):
        raise LogRefusedError(f"no log at {path}")
    f = open(path, "rb")  # noqa: SIM115 - the caller closes it
    try:
        return f, reader.make_reader(f)
    except Exception as exc:  # the mcap reader raises its own errors on a bad file
        f.close()
        raise LogError(f"{path} is not a readable MCAP file: {exc}") from None


def messages(path: str, topics: list[str] | None = None) -> Iterator[tuple[str, Any, Any]]:
    """``(topic, schema, message)`` of the log at ``path``, in log-time order.

    Raises:
        LogError: the file is missing, truncated or corrupted.
    """
    f, r = _open(path)
    try:
        for schema, channel, msg in r.iter_messages(topics=topics, log_time_order=True):
            yield channel.topic, schema, msg
    except LogError:
        raise
    except Exception as exc:
        raise LogError(f"{path} is damaged (truncated or corrupted): "
                       f"{type(exc).__name__}: {exc}") from None
    finally:
        f.close()


def info(path: str) -> LogInfo:
    """Topics, message counts, rates, duration, configuration and summary of a log,
    and the parts that were cut short when it was merged (``cut_parts``).

    Reads every message (so a damaged file is found), not only the summary.
    """
    counts: dict[str, list[Any]] = {}
    config = summary = None
    for topic, schema, msg in messages(path):
        _count(counts, topic, schema, msg.log_time)
        if topic == CONFIG_TOPIC:
            config = json.loads(msg.data)
        elif topic == SUMMARY_TOPIC:
            summary = json.loads(msg.data)
    return _log_info(path, counts, config, summary, cut_parts(path))


def cut_parts(path: str) -> list[dict[str, Any]]:
    """The parts of the log at ``path`` that were cut short when it was merged
    (its :data:`CUT_METADATA` record; none in a log merged whole)."""
    f, r = _open(path)
    try:
        for meta in r.iter_metadata():
            if meta.name == CUT_METADATA:
                return list(json.loads(meta.metadata["parts"]))
        return []
    except Exception as exc:  # the mcap reader raises its own errors on a bad file
        raise LogError(f"{path} is damaged (truncated or corrupted): "
                       f"{type(exc).__name__}: {exc}") from None
    finally:
        f.close()


def _count(counts: dict[str, list[Any]], topic: str, schema: Any, log_time_ns: int) -> None:
    """Tally one message: ``[schema name, count, first s, last s]`` per topic."""
    t = log_time_ns / 1e9
    row = counts.get(topic)
    if row is None:
        counts[topic] = [schema.name if schema else "", 1, t, t]
    else:
        row[1] += 1
        row[2], row[3] = min(row[2], t), max(row[3], t)


def _log_info(path: str, counts: dict[str, list[Any]], config: dict[str, Any] | None,
              summary: dict[str, Any] | None, cuts: list[dict[str, Any]]) -> LogInfo:
    topics = [TopicInfo(topic, *row) for topic, row in sorted(counts.items())]
    first = min((t.first_s for t in topics), default=0.0)
    last = max((t.last_s for t in topics), default=0.0)
    return LogInfo(path, os.path.getsize(path), last - first, topics, config, summary, cuts)
