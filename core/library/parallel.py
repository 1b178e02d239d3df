"""Parallel robots with closed-form inverse kinematics: a Stewart 6-UPS platform
and a delta with parallelogram forearms (tests of exact retargeting, the Reachy
Mini head's kinds).

World axes: z up; both robots are symmetric about z by thirds of a turn.
"""

import numpy as np

from ..model.mechanism import Mechanism
from ..model.parts import ActuatedMotion, Actuator, Body, Frame, Joint, JointKind
from ._build import Z_AXIS, hinge, link, servo, unit

#: Stewart platform geometry [m, rad]: anchor radii, half the angle between the two
#: anchors of a pair (base pairs centred on 0, 120, 240 degrees, platform pairs on
#: 60, 180, 300) and the platform height in the file pose.
STEWART_BASE_RADIUS = 0.15
STEWART_PLATFORM_RADIUS = 0.10
STEWART_BASE_HALF_ANGLE = np.radians(12.0)
STEWART_PLATFORM_HALF_ANGLE = np.radians(18.0)
STEWART_HEIGHT = 0.20

#: Delta geometry [m, rad]: motor axes on a circle of radius ``DELTA_BASE_RADIUS`` at
#: 0, 120, 240 degrees about z, arms ``DELTA_ARM``, rods ``DELTA_ROD``, rod ends on
#: the platform at ``DELTA_PLATFORM_RADIUS``; arms ``DELTA_ARM_ANGLE`` below the
#: horizontal in the file pose. Each forearm is a parallelogram of two rods
#: ``DELTA_ROD_SPACING`` apart along the motor axis, centred on the leg's plane.
DELTA_BASE_RADIUS = 0.10
DELTA_ARM = 0.10
DELTA_ROD = 0.25
DELTA_PLATFORM_RADIUS = 0.03
DELTA_ARM_ANGLE = 0.5
DELTA_ROD_SPACING = 0.04
DELTA_AZIMUTHS = np.radians([0.0, 120.0, 240.0])


def _on_circle(radius: float, angles) -> np.ndarray:
    """(k, 3) points at ``angles`` [rad] on a circle of ``radius`` [m] about z, at z = 0."""
    angles = np.asarray(angles, dtype=float)
    return radius * np.stack([np.cos(angles), np.sin(angles), 0.0 * angles], -1)


def stewart_anchors() -> tuple[np.ndarray, np.ndarray]:
    """Leg anchors of the Stewart platform: on the base a (6, 3) in world [m], on the
    platform b (6, 3) relative to the platform centre in platform axes [m]. Leg i
    joins a[i] to b[i]; the legs of a base pair go to neighbouring platform pairs."""
    centres = np.radians([0.0, 120.0, 240.0])
    base = np.ravel([[c - STEWART_BASE_HALF_ANGLE, c + STEWART_BASE_HALF_ANGLE] for c in centres])
    platform = np.ravel(
        [
            [c - np.pi / 3 + STEWART_PLATFORM_HALF_ANGLE, c + np.pi / 3 - STEWART_PLATFORM_HALF_ANGLE]
            for c in centres
        ]
    )
    return _on_circle(STEWART_BASE_RADIUS, base), _on_circle(STEWART_PLATFORM_RADIUS, platform)


def stewart_leg_lengths(positions, rotations) -> np.ndarray:
    """Leg lengths |p + R b_i - a_i| (..., 6) [m] for platform centre positions p (..., 3)
    [m] and orientations R (..., 3, 3) (platform axes in world)."""
    a, b = stewart_anchors()
    p, R = np.asarray(positions, float), np.asarray(rotations, float)
    ends = p[..., None, :] + np.einsum("...ij,kj->...ki", R, b)
    return np.linalg.norm(ends - a, axis=-1)


def stewart() -> Mechanism:
    """A Stewart 6-UPS platform: six prismatic legs between a grounded base and a platform.

    Leg i (``leg{i}``, i = 1..6): ``leg{i}_lower`` hangs from the base anchor a_i by a
    universal joint (first axis horizontal across the leg, second across both), and
    ``leg{i}_upper`` slides in it along the leg (prismatic ``leg{i}``, the actuator:
    the leg's length minus its file-pose length [m]) and holds the platform anchor
    b_i by a spherical joint. The platform's centre is ``STEWART_HEIGHT`` above the
    base centre in the file pose, axes aligned with the world's; frame ``platform``
    sits there. Anchors: :func:`stewart_anchors`. Actuators: 0.1 m stroke each way,
    0.5 m/s, 5 m/s^2.
    """
    a, b = stewart_anchors()
    centre = np.array([0.0, 0.0, STEWART_HEIGHT])
    bodies = [
        Body("base", mass=2.0, grounded=True),
        Body("platform", position=centre, mass=0.5),
    ]
    joints = []
    for i in range(6):
        top = centre + b[i]
        along = unit(top - a[i])
        across = unit(np.cross(along, Z_AXIS))
        name = f"leg{i + 1}"
        bodies += [
            link(f"{name}_lower", a[i], 0.5 * (a[i] + top)),
            link(f"{name}_upper", 0.5 * (a[i] + top), top),
        ]
        motor = Actuator(
            ActuatedMotion.DISPLACEMENT,
            lower=-0.1,
            upper=0.1,
            velocity_limit=0.5,
            acceleration_limit=5.0,
            hardware_id=i + 1,
        )
        joints += [
            Joint(
                f"{name}_base",
                JointKind.UNIVERSAL,
                "base",
                f"{name}_lower",
                anchor=a[i],
                axis=across,
                secondary_axis=np.cross(along, across),
            ),
            Joint(
                name,
                JointKind.PRISMATIC,
                f"{name}_lower",
                f"{name}_upper",
                anchor=0.5 * (a[i] + top),
                axis=along,
                actuator=motor,
            ),
            Joint(f"{name}_top", JointKind.SPHERICAL, f"{name}_upper", "platform", anchor=top),
        ]
    return Mechanism(bodies, joints, [Frame("platform", "platform", position=centre)], name="stewart")


def delta_file_height() -> float:
    """Height z [m] of the delta platform's centre in the file pose (negative: below the motors)."""
    reach = DELTA_BASE_RADIUS + DELTA_ARM * np.cos(DELTA_ARM_ANGLE) - DELTA_PLATFORM_RADIUS
    return -DELTA_ARM * np.sin(DELTA_ARM_ANGLE) - np.sqrt(DELTA_ROD**2 - reach**2)


def delta_arm_angles(positions) -> np.ndarray:
    """Closed-form inverse kinematics of the delta with its platform level: arm angles
    (..., 3) [rad] below the horizontal for platform centres (..., 3) [m].

    In leg k's frame (x out along azimuth phi_k, z up) the elbow is
    E = (R + a cos t, 0, -a sin t) and the rod end P = (x, y, z) = Rz(-phi_k) p + (r, 0, 0);
    |E - P| = l gives A cos t + B sin t = C with A = 2 a (R - x), B = 2 a z,
    C = l^2 - (R - x)^2 - y^2 - z^2 - a^2, so t = atan2(B, A) + acos(C / sqrt(A^2 + B^2))
    (the elbows-out branch of the file pose).
    """
    p = np.asarray(positions, dtype=float)
    c, s = np.cos(DELTA_AZIMUTHS), np.sin(DELTA_AZIMUTHS)
    x = c * p[..., :1] + s * p[..., 1:2] + DELTA_PLATFORM_RADIUS
    y = -s * p[..., :1] + c * p[..., 1:2]
    z = p[..., 2:3] + 0.0 * x
    a, dx = DELTA_ARM, DELTA_BASE_RADIUS - x
    A, B = 2 * a * dx, 2 * a * z
    C = DELTA_ROD**2 - dx**2 - y**2 - z**2 - a**2
    return np.arctan2(B, A) + np.arccos(C / np.hypot(A, B))


def delta() -> Mechanism:
    """A delta robot (Clavel's): three motors on a grounded base, each turning an arm
    whose forearm, a parallelogram of two equal rods, holds a platform. The three
    parallelograms keep the platform parallel to the base: the motors set its
    position, and its orientation is held by the mechanism (3 DoF, 3 motors).

    Motor k (``motor{k}``, k = 1..3, at azimuth ``DELTA_AZIMUTHS[k-1]``) turns
    ``arm{k}`` about the horizontal tangent t_k of the base circle; positive turns
    the arm down. Rods ``rod{k}a`` and ``rod{k}b`` run from the elbow +-s/2 t_k
    (s = ``DELTA_ROD_SPACING``) to the platform's rod ends +-s/2 t_k, each hanging
    from the arm by a universal joint (``elbow{k}a``/``b``: across the arm, then
    across the rod; the rod cannot spin about itself, so no idle freedom) and
    holding the platform by a ball (``wrist{k}a``/``b``). A translated platform
    keeps each rod pair parallel and equal, so the leg's centre line obeys the
    single-rod closed form :func:`delta_arm_angles`. File pose: arms
    ``DELTA_ARM_ANGLE`` below the horizontal, the platform level at
    :func:`delta_file_height`; frame ``platform`` at its centre, world-aligned.
    Motors: XH430-W350 servos.
    """
    centre = np.array([0.0, 0.0, delta_file_height()])
    bodies = [Body("base", mass=1.0, grounded=True), Body("platform", position=centre, mass=0.2)]
    joints = []
    for k, phi in enumerate(DELTA_AZIMUTHS):
        out, tangent = np.array([np.cos(phi), np.sin(phi), 0.0]), np.array([-np.sin(phi), np.cos(phi), 0.0])
        shoulder = DELTA_BASE_RADIUS * out
        elbow = shoulder + DELTA_ARM * (np.cos(DELTA_ARM_ANGLE) * out - np.sin(DELTA_ARM_ANGLE) * Z_AXIS)
        end = centre + DELTA_PLATFORM_RADIUS * out
        across_rod = unit(np.cross(end - elbow, tangent))
        name = f"{k + 1}"
        bodies.append(link(f"arm{name}", shoulder, elbow))
        joints.append(
            hinge(
                f"motor{name}", "base", f"arm{name}", shoulder, tangent, servo(k + 1, -np.pi / 2, np.pi / 2)
            )
        )
        for side, sign in (("a", 1.0), ("b", -1.0)):
            offset = 0.5 * sign * DELTA_ROD_SPACING * tangent
            rod = f"rod{name}{side}"
            bodies.append(link(rod, elbow + offset, end + offset, mass=0.02))
            joints += [
                Joint(
                    f"elbow{name}{side}",
                    JointKind.UNIVERSAL,
                    f"arm{name}",
                    rod,
                    anchor=elbow + offset,
                    axis=tangent,
                    secondary_axis=across_rod,
                ),
                Joint(f"wrist{name}{side}", JointKind.SPHERICAL, rod, "platform", anchor=end + offset),
            ]
    return Mechanism(bodies, joints, [Frame("platform", "platform", position=centre)], name="delta")
