"""Planar reference mechanisms with closed-form kinematics (tests and bench).

All move in the world x-y plane with hinge axes along +z; bodies are
world-aligned in the initial configuration with their CoM at mid-link.
"""

import numpy as np

from ..model.mechanism import Mechanism
from ..model.parts import ActuatedMotion, Actuator, Body, Frame, Joint, JointKind
from ._build import X_AXIS, Z_AXIS, hinge, link

#: The crank motor of the four-bar and the slider-crank [rad, rad/s].
CRANK_MOTOR = Actuator(ActuatedMotion.ANGLE, velocity_limit=6.0, hardware_id=1)


def fourbar_closed_form(crank_angle, ground=0.3, crank=0.1, coupler=0.35, rocker=0.3):
    """Rocker angle [rad] of the open branch by circle intersection (Freudenstein).

    Ground pivots at (0, 0) and (ground, 0); returns (rocker_angle, coupler_joint_B)
    where B is the coupler-rocker pin, both for crank_angle (scalar or array) [rad].
    """
    theta = np.asarray(crank_angle, dtype=float)
    A = np.stack([crank * np.cos(theta), crank * np.sin(theta)], -1)
    O4 = np.array([ground, 0.0])
    d = np.linalg.norm(O4 - A, axis=-1)
    # B lies on circle(A, coupler) and circle(O4, rocker); take the upper (open) branch
    a = (coupler**2 - rocker**2 + d**2) / (2 * d)
    h = np.sqrt(np.maximum(coupler**2 - a**2, 0.0))
    e = (O4 - A) / d[..., None]
    normal = np.stack([-e[..., 1], e[..., 0]], -1)
    B = A + a[..., None] * e + h[..., None] * normal
    rocker_angle = np.arctan2(B[..., 1], B[..., 0] - ground)
    return rocker_angle, B


def fourbar(crank_angle: float = np.pi / 2) -> Mechanism:
    """Grashof crank-rocker: ground 0.3 m, crank 0.1 m, coupler 0.35 m, rocker 0.3 m.

    The crank joint is actuated (angle measured from the initial crank angle);
    frame ``coupler_point`` sits at the coupler's midpoint, 5 cm off the link.
    """
    _, B = fourbar_closed_form(crank_angle)
    O2, O4 = np.zeros(3), np.array([0.3, 0.0, 0.0])
    A = np.array([0.1 * np.cos(crank_angle), 0.1 * np.sin(crank_angle), 0.0])
    B = np.array([B[0], B[1], 0.0])
    mid = 0.5 * (A + B)
    along = (B - A) / np.linalg.norm(B - A)
    coupler_point = mid + 0.05 * np.cross(Z_AXIS, along)
    bodies = [
        Body("ground", position=0.5 * O4, mass=1.0, grounded=True),
        link("crank", O2, A),
        link("coupler", A, B),
        link("rocker", O4, B),
    ]
    joints = [
        hinge("crank_joint", "ground", "crank", O2, actuator=CRANK_MOTOR),
        hinge("coupler_joint", "crank", "coupler", A),
        hinge("rocker_coupler_joint", "coupler", "rocker", B),
        hinge("rocker_joint", "ground", "rocker", O4),
    ]
    frames = [Frame("coupler_point", "coupler", position=coupler_point)]
    return Mechanism(bodies, joints, frames, name="fourbar")


def slider_crank_closed_form(crank_angle, crank=0.1, rod=0.3):
    """Slider x position [m] of an in-line slider-crank: r cos t + sqrt(l^2 - r^2 sin^2 t)."""
    t = np.asarray(crank_angle, dtype=float)
    return crank * np.cos(t) + np.sqrt(rod**2 - (crank * np.sin(t)) ** 2)


def slider_crank(crank_angle: float = np.pi / 3) -> Mechanism:
    """In-line slider-crank: crank 0.1 m about the origin, rod 0.3 m, slider on the x axis.

    The crank is actuated; the slider joint is a prismatic along x. The loop is
    planar, so its constraints are partly redundant.
    """
    A = np.array([0.1 * np.cos(crank_angle), 0.1 * np.sin(crank_angle), 0.0])
    S = np.array([slider_crank_closed_form(crank_angle), 0.0, 0.0])
    bodies = [
        Body("ground", position=np.zeros(3), mass=1.0, grounded=True),
        link("crank", np.zeros(3), A),
        link("rod", A, S),
        Body("slider", position=S, mass=0.2),
    ]
    joints = [
        hinge("crank_joint", "ground", "crank", np.zeros(3), actuator=CRANK_MOTOR),
        hinge("crank_rod_joint", "crank", "rod", A),
        hinge("rod_slider_joint", "rod", "slider", S),
        Joint("slider_joint", JointKind.PRISMATIC, "ground", "slider", anchor=S, axis=X_AXIS),
    ]
    frames = [Frame("slider_tip", "slider", position=S)]
    return Mechanism(bodies, joints, frames, name="slider_crank")


def two_link_arm(upper: float = 0.3, lower: float = 0.25) -> Mechanism:
    """Planar 2R arm along +x with links ``upper`` and ``lower`` [m]; frame ``tip``."""
    elbow, tip = np.array([upper, 0.0, 0.0]), np.array([upper + lower, 0.0, 0.0])
    bodies = [
        Body("base", grounded=True),
        link("upper_arm", np.zeros(3), elbow),
        link("forearm", elbow, tip),
    ]
    joints = [
        hinge("shoulder", "base", "upper_arm", np.zeros(3), actuator=Actuator(hardware_id=1)),
        hinge("elbow", "upper_arm", "forearm", elbow, actuator=Actuator(hardware_id=2)),
    ]
    return Mechanism(bodies, joints, [Frame("tip", "forearm", position=tip)], name="two_link_arm")
