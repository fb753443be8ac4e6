"""The tag36h11 family: its code table and layout (checked by the family's own distance,
and by Duckietown's detector where it installs), and ids outside it refused."""

from __future__ import annotations

import numpy as np
import pytest

from dmxshm.world import tag36h11 as tags
from dmxshm.world.objects import MapObject, ObjectError
from tests.apriltags import detector


def _rotations(tag_id: int) -> list[int]:
    """Tag ``tag_id``'s code read back from its cells turned 0, 90, 180 and 270 degrees."""
    out = []
    cells = tags.cells(tag_id)
    for k in range(4):
        turned = np.rot90(cells, k)
        code = 0
        for x, y in zip(tags.BIT_X, tags.BIT_Y, strict=True):
            code = (code << 1) | int(turned[y + 1, x + 1])
        out.append(code)
    return out


def test_the_tables_codes_are_as_far_apart_as_the_family_promises() -> None:
    codes = np.array(tags.CODES, np.uint64)
    assert len(codes) == tags.IDS == 587 and len(set(tags.CODES)) == 587
    assert int(codes.max()) < 1 << tags.BITS
    turned = np.array([_rotations(i) for i in range(tags.IDS)], np.uint64)  # (587, 4)
    assert (turned[:, 0] == codes).all()  # the layout reads each code back
    # every code against every other code's four rotations, and its own three turns:
    # at least 11 bits apart (a code or a cell out of place brings two closer)
    xor = codes[:, None, None] ^ turned[None, :, :]
    dist = np.unpackbits(xor[..., None].view(np.uint8), axis=-1).sum(axis=-1)
    dist[np.arange(tags.IDS), np.arange(tags.IDS), 0] = 99  # (a code against itself)
    assert int(dist.min()) == tags.MIN_HAMMING


def test_a_tag_is_a_white_ring_a_black_ring_and_its_bits() -> None:
    c = tags.cells(0)
    assert c.shape == (10, 10) and c.dtype == np.uint8
    ring0 = np.concatenate([c[0], c[-1], c[:, 0], c[:, -1]])
    ring1 = np.concatenate([c[1, 1:9], c[8, 1:9], c[1:9, 1], c[1:9, 8]])
    assert ring0.all() and not ring1.any()
    # id 0 is 0xd7e00984b: its first bit (1) at cell (2, 2), its last (1) at (5, 4)
    assert c[2, 2] == 1 and c[tags.BIT_Y[-1] + 1, tags.BIT_X[-1] + 1] == 1
    assert int(c[2:8, 2:8].sum()) == bin(tags.CODES[0]).count("1")


@pytest.mark.parametrize("bad", [-1, 587, 10_000, True, 3.0, "7"])
def test_an_id_outside_the_family_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match=r"is not a tag36h11 id \(0-586\)"):
        tags.cells(bad)  # type: ignore[arg-type]
    with pytest.raises(ObjectError, match=r"object 's': tag_id .* is not a tag36h11 id"):
        MapObject("s", "sign_stop", 1.0, 1.0, tag_id=bad)  # type: ignore[arg-type]


def _image(tag_id: int, px: int = 12, margin: int = 3) -> np.ndarray:
    """Tag ``tag_id`` upright on white, ``px`` pixels a cell (uint8 grey)."""
    big = np.kron(tags.cells(tag_id), np.ones((px, px), np.uint8)) * 255
    return np.pad(big, margin * px, constant_values=255).astype(np.uint8)


def test_duckietowns_detector_reads_every_id() -> None:
    detect = detector().detect
    ids = list(range(tags.IDS))
    sheet = [_image(i) for i in ids]
    for i, img in zip(ids, sheet, strict=True):
        found = detect(img)
        assert [(d.tag_id, d.hamming) for d in found] == [(i, 0)], i
