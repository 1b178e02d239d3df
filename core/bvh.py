"""BVH motion capture (:func:`read_bvh`), importable here as the docs show; it lives in :mod:`.tracks.bvh`."""

from .tracks.bvh import read_bvh

__all__ = ["read_bvh"]
