"""dmxshm.network.recording: the record folder's guard and the log path's."""

from __future__ import annotations

import os

import pytest

from dmxshm.errors import RefusedError
from dmxshm.network.recording import (
    CONTACT_SHEET,
    RecordFolderError,
    check_log_path,
    earlier_frames,
    frame_name,
    prepare_record_dir,
)

pytestmark = pytest.mark.timeout(30)


def test_an_earlier_runs_frames_are_refused_and_only_they_are_removed(tmp_path) -> None:  # noqa: ANN001
    frames = [frame_name(0, "step", 0), frame_name(12, "frame", 30), CONTACT_SHEET]
    for name in [*frames, "notes.txt", "robot1_step000000.png", "robot00.txt"]:
        (tmp_path / name).write_text("x")
    assert earlier_frames(str(tmp_path)) == sorted(str(tmp_path / n) for n in frames)
    with pytest.raises(RecordFolderError, match="3 frame"):
        prepare_record_dir(str(tmp_path), overwrite=False)
    assert len(earlier_frames(str(tmp_path))) == 3  # a refusal removes nothing
    prepare_record_dir(str(tmp_path), overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "robot00.txt",
                                            "robot1_step000000.png"]


def test_a_missing_folder_is_made_and_a_file_in_the_way_refused(tmp_path) -> None:  # noqa: ANN001
    prepare_record_dir(str(tmp_path / "new" / "rec"), overwrite=False)
    assert (tmp_path / "new" / "rec").is_dir()
    (tmp_path / "a-file").write_text("mine")
    with pytest.raises(RecordFolderError, match="cannot use"):
        prepare_record_dir(str(tmp_path / "a-file"), overwrite=False)
    assert issubclass(RecordFolderError, RefusedError)  # exit 2 in the CLI


def test_a_folder_named_like_a_pattern_is_read_as_a_name(tmp_path) -> None:  # noqa: ANN001
    odd = tmp_path / "run[1]"
    odd.mkdir()
    (odd / frame_name(0, "step", 0)).write_text("x")
    assert earlier_frames(str(odd)) == [str(odd / frame_name(0, "step", 0))]


def test_an_existing_log_is_kept_unless_overwrite(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("foxglove")
    pytest.importorskip("mcap")
    log = tmp_path / "run.mcap"
    check_log_path(str(log), overwrite=False)  # nothing there: fine
    log.write_bytes(b"old")
    with pytest.raises(RefusedError, match="--overwrite"):
        check_log_path(str(log), overwrite=False)
    check_log_path(str(log), overwrite=True)
    assert log.read_bytes() == b"old"  # checked, not touched
    with pytest.raises(RefusedError, match="does not exist"):
        check_log_path(str(tmp_path / "no" / "run.mcap"), overwrite=True)
