"""The errors of reading a map, in a module of their own: the map formats'
readers (:mod:`dmxshm.world.maps`, :mod:`dmxshm.world.dtmaps`) both raise them and
neither imports the other for it. :mod:`dmxshm.world.maps` exports them too."""

from __future__ import annotations

from dmxshm.errors import DmxError


class MapError(DmxError, ValueError):
    """A map file is missing, malformed, or cannot hold what is asked of it."""


class MapNotFoundError(MapError, FileNotFoundError):
    """Neither a bundled map of that name nor a file at that path exists."""
