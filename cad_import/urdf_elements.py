"""URDF's common elements: an ``<origin>`` (rpy angles and a position) as a 4x4 transform,
and an axis as a unit vector."""

from __future__ import annotations

import numpy as np

from ..core.maths.rotations import axis_angle_matrix
from .specs import (
    transform,
)
from .xmlfile import XmlDocument


def rpy_matrix(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw [rad]: ``Rz(yaw) Ry(pitch) Rx(roll)`` (fixed axes x, y, z)."""
    r, p, y = rpy
    return (
        axis_angle_matrix(np.array([0.0, 0.0, 1.0]), y)
        @ axis_angle_matrix(np.array([0.0, 1.0, 0.0]), p)
        @ axis_angle_matrix(np.array([1.0, 0.0, 0.0]), r)
    )


def origin_transform(doc: XmlDocument, parent) -> np.ndarray:
    element = parent.find("origin")
    if element is None:
        return np.eye(4)
    xyz = doc.floats(element, "xyz", 3, [0, 0, 0])
    rpy = doc.floats(element, "rpy", 3, [0, 0, 0])
    return transform(rpy_matrix(rpy), xyz)


def unit_axis(doc: XmlDocument, element, name="xyz", default=(1.0, 0.0, 0.0)) -> np.ndarray:
    if element is None:
        return np.array(default, float)
    axis = doc.floats(element, name, 3, list(default))
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        raise doc.error(element, f"axis {name}={element.get(name)!r} is zero-length")
    return axis / norm
