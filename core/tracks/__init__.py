"""Tracked motion in: the looprig tracks file (JSON/NPZ), BVH, the samples the
solver reads, chaining and retiming clips."""

from .format import read_tracks, write_tracks

__all__ = ["read_tracks", "write_tracks"]
