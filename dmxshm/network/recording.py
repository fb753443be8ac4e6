"""Where a run writes its files: the ``--record`` folder and the ``--log`` path.

Checked before a run starts, so that a run never mixes its frames with an
earlier run's, nor replaces a log unasked. The record folder's layout is
named here once: each camera frame is ``robotNN_<unit>KKKKKK.png``
(:data:`FRAME_GLOB` matches every one, whatever the unit: ``step`` in gym
mode, ``frame`` in realtime), beside :data:`CONTACT_SHEET`.

Example:
    >>> frame_name(3, "step", 40)
    'robot03_step000040.png'
    >>> import fnmatch
    >>> fnmatch.fnmatch(frame_name(3, "frame", 7), FRAME_GLOB)
    True
"""

from __future__ import annotations

import glob
import os

from dmxshm.errors import RefusedError

FRAME_GLOB = "robot[0-9][0-9]_*.png"
"""Every camera frame a run records (:func:`frame_name`)."""

CONTACT_SHEET = "contact_sheet.png"
"""The contact sheet of a recorded run, beside its frames."""


class RecordFolderError(RefusedError):
    """The record folder cannot be used: it holds an earlier run's frames (and no
    overwrite was asked for), or it cannot be made or cleared."""


def frame_name(robot: int, unit: str, k: int) -> str:
    """The file name of robot ``robot``'s frame at tick ``k`` (``unit``: ``step`` in
    gym mode, ``frame`` in realtime), as the renderers write it."""
    return f"robot{robot:02d}_{unit}{k:06d}.png"


def earlier_frames(path: str) -> list[str]:
    """The files of an earlier recorded run in the folder ``path`` (its frames and
    its contact sheet), sorted; nothing else there is counted."""
    return sorted(glob.glob(os.path.join(glob.escape(path), FRAME_GLOB))
                  + glob.glob(os.path.join(glob.escape(path), CONTACT_SHEET)))


def prepare_record_dir(path: str, overwrite: bool) -> None:
    """Make ``path`` ready for a run's frames: made if missing, and refused when it
    holds an earlier run's frames, unless ``overwrite`` (which removes those, and only
    those). Call it last before the run starts: it deletes files.

    (A record folder without a camera is refused by the configuration.)

    Raises:
        RecordFolderError: earlier frames without ``overwrite``, or the folder cannot
            be made or cleared (the message says why).
    """
    old = earlier_frames(path)
    if old and not overwrite:
        raise RecordFolderError(f"{path} holds {len(old)} frame(s) of an earlier run; new "
                                "frames would mix with them. Choose an empty folder, or add "
                                "--overwrite to remove them first.")
    try:
        for name in old:
            os.remove(name)
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise RecordFolderError(f"cannot use {path} for the recorded frames: "
                                f"{exc.strerror}") from None


def check_log_path(path: str, overwrite: bool) -> None:
    """A log that can be written at ``path``, and no earlier log replaced unless
    ``overwrite``.

    Raises:
        LogRefusedError: the log extra is missing, the folder does not exist, a run
            still going writes there, or a file is there and no ``overwrite``.
    """
    from dmxshm.logs import LogRefusedError, check_writable

    check_writable(path)
    if os.path.exists(path) and not overwrite:
        raise LogRefusedError(f"{path} exists; give --overwrite to replace it, or another "
                              "path")
