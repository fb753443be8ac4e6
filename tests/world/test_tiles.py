"""Tile kinds, rotations and lane dimensions."""

from __future__ import annotations

import pytest

from dmxshm.world.tiles import (
    LANE_OFFSET_M,
    LANE_WIDTH_M,
    TILE_SIZE_M,
    WHITE_LINE_WIDTH_M,
    YELLOW_LINE_WIDTH_M,
    Tile,
    opposite_edge,
    rotate_edge,
    rotate_xy,
)


@pytest.mark.parametrize(
    ("tile", "edges"),
    [
        (Tile("grass"), set()),
        (Tile("asphalt", 90), set()),
        (Tile("straight", 0), {"W", "E"}),
        (Tile("straight", 90), {"S", "N"}),
        (Tile("straight", 180), {"W", "E"}),
        (Tile("curve", 0), {"E", "S"}),
        (Tile("curve", 90), {"N", "E"}),
        (Tile("curve", 180), {"W", "N"}),
        (Tile("curve", 270), {"S", "W"}),
        (Tile("3way", 0), {"W", "E", "S"}),
        (Tile("3way", 90), {"S", "N", "E"}),
        (Tile("3way", 180), {"E", "W", "N"}),
        (Tile("3way", 270), {"N", "S", "W"}),
        (Tile("4way", 270), {"N", "S", "W", "E"}),
    ],
)
def test_edges_follow_rotation(tile: Tile, edges: set[str]) -> None:
    assert tile.edges == edges


@pytest.mark.parametrize("edge", ["E", "N", "W", "S"])
def test_four_quarter_turns_are_identity(edge: str) -> None:
    assert rotate_edge(edge, 360) == edge
    assert rotate_edge(rotate_edge(edge, 90), 270) == edge
    assert opposite_edge(opposite_edge(edge)) == edge


def test_rotate_xy_is_exact() -> None:
    assert rotate_xy(0.1, 0.2, 90) == (-0.2, 0.1)
    assert rotate_xy(0.1, 0.2, 180) == (-0.1, -0.2)
    assert rotate_xy(0.1, 0.2, 270) == (0.2, -0.1)


def test_lane_dimensions_add_up_to_a_tile() -> None:
    total = 2 * WHITE_LINE_WIDTH_M + YELLOW_LINE_WIDTH_M + 2 * LANE_WIDTH_M
    assert total == pytest.approx(TILE_SIZE_M)
    offset = YELLOW_LINE_WIDTH_M / 2 + LANE_WIDTH_M / 2
    assert offset == pytest.approx(LANE_OFFSET_M)
    # A Duckiebot (0.10 m wide chassis, 0.13 m over the wheels) fits in a lane.
    assert LANE_WIDTH_M > 0.13
