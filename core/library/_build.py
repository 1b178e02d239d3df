"""Small helpers shared by the reference mechanism builders.

Geometry is in world coordinates of the initial configuration [m]; bodies are
world-aligned there (identity orientation), as the paper assumes.
"""

import numpy as np

from ..model.parts import ActuatedMotion, Actuator, Body, Joint, JointKind

X_AXIS = np.array([1.0, 0.0, 0.0])
Y_AXIS = np.array([0.0, 1.0, 0.0])
Z_AXIS = np.array([0.0, 0.0, 1.0])

#: No-load speed of a Dynamixel XH430-W350 at 12 V: 30 rev/min = pi rad/s
#: (ROBOTIS e-Manual, XH430-W350 specifications,
#: https://emanual.robotis.com/docs/en/dxl/x/xh430-w350/). The paper's robots
#: all use XH-430 servos (Schumacher et al. 2021, Sec. V).
XH430_W350_SPEED = 30.0 * 2.0 * np.pi / 60.0  # [rad/s]
#: Acceleration limit of the servo's trapezoidal profile as used here; the
#: datasheet gives none, so this is a conservative choice for the models.
XH430_W350_ACCELERATION = 30.0  # [rad/s^2]


def point(x: float, y: float, z: float) -> np.ndarray:
    """A (3,) world point [m]."""
    return np.array([x, y, z], dtype=float)


def unit(vector) -> np.ndarray:
    """``vector`` scaled to unit length."""
    v = np.asarray(vector, dtype=float)
    return v / np.linalg.norm(v)


def link(name: str, start, end, mass: float = 0.1) -> Body:
    """A world-aligned body with its CoM at the midpoint of ``start``-``end`` [m]."""
    return Body(name, position=0.5 * (np.asarray(start, float) + np.asarray(end, float)), mass=mass)


def hinge(name: str, parent: str, child: str, anchor, axis=Z_AXIS, actuator: Actuator | None = None) -> Joint:
    """A revolute joint about ``axis`` through ``anchor`` [m]."""
    return Joint(
        name,
        JointKind.REVOLUTE,
        parent,
        child,
        anchor=np.asarray(anchor, float),
        axis=np.asarray(axis, float),
        actuator=actuator,
    )


def servo(hardware_id: int, lower: float = -np.pi, upper: float = np.pi) -> Actuator:
    """A Dynamixel XH430-W350 angle actuator with position range [rad]."""
    return Actuator(
        ActuatedMotion.ANGLE,
        lower=lower,
        upper=upper,
        velocity_limit=XH430_W350_SPEED,
        acceleration_limit=XH430_W350_ACCELERATION,
        hardware_id=hardware_id,
    )
