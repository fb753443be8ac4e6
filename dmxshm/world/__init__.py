"""Worlds: road maps, the Duckiebot, and pybullet physics."""
