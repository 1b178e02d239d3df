"""Validation mechanisms of the paper's Fig. 6 (Schumacher, Knoop & Bächer 2021, Sec. V-1).

``all_joints`` (Fig. 6a) is a 1-DoF mechanism that uses every joint kind;
``chain_6r6p`` (Fig. 6b) is a serial chain of 6 revolute and 6 prismatic
actuators. World axes: z up.
"""

import numpy as np

from ..model.mechanism import Mechanism
from ..model.parts import ActuatedMotion, Actuator, Body, Frame, Joint, JointKind
from ._build import X_AXIS, Y_AXIS, Z_AXIS, hinge, link, point, servo, unit


def all_joints() -> Mechanism:
    """A 1-DoF spatial linkage with revolute, spherical, universal, cylindrical,
    prismatic, fixed, planar and parallel joints, driven by one crank servo.

    Geometry [m] in the initial pose (grounded ``base``):

    * RSUR loop: ``crank`` turns about z through O = (0, 0, 0) (actuated,
      radius 5 cm to A = (0.05, 0, 0)); ``coupler`` A-B with a spherical joint
      at A and a universal joint at B = (0, 0.2, 0.02); ``rocker`` turns about x
      through O4 = (0, 0.2, 0.12). The universal's axes (normal to the coupler
      and x) stop the coupler spinning about its own line, so the loop has
      exactly the crank's DoF.
    * A second arm of the rocker, C = O4 + (0, 0.1, 0), pushes the ``slider``
      (prismatic along x through D = C + (0.15, 0, -0.1)) through the ``link``
      C-D, spherical at C and universal at D (axes normal to the link).
    * The ``carriage`` sits on a cylindrical joint (axis y through
      G = D + (0.05, 0, 0)) on the slider; a planar joint with the base, plane
      normal (0, 1, 1)/sqrt(2) through G, takes away its turn about and its
      slide along y, while letting it follow the slider along x.
    * The ``follower`` keeps the crank's orientation (parallel joint) and is
      held at the coupler point E = (A + B)/2 + (0, 0, 0.03) by a spherical
      joint; the ``effector`` is bolted to it (fixed joint) at
      F = E + (0, 0, 0.04), where frame ``effector`` sits, world-aligned.

    9 bodies, 12 joints, 4 independent loops; Grübler count 0 but mobility 1:
    one of the planar joint's orientation rows repeats what the prismatic and
    cylindrical joints already impose. Removing any joint
    detaches a body or adds a DoF. The crank turns fully; the slider then
    strokes about 8 cm. Masses 0.02-0.1 kg.
    The crank servo: XH430-W350 (see :mod:`._build`), full turn, hardware id 1.
    """
    O, A = point(0, 0, 0), point(0.05, 0, 0)
    O4, B = point(0, 0.2, 0.12), point(0, 0.2, 0.02)
    C = O4 + point(0, 0.1, 0)
    D = C + point(0.15, 0, -0.1)
    G = D + point(0.05, 0, 0)
    E = 0.5 * (A + B) + point(0, 0, 0.03)
    F = E + point(0, 0, 0.04)
    coupler_normal = unit(np.cross(B - A, X_AXIS))
    link_normal = unit(np.cross(D - C, Y_AXIS))
    bodies = [
        Body("base", position=point(0, 0.1, 0), mass=1.0, grounded=True),
        link("crank", O, A, mass=0.05),
        link("coupler", A, B, mass=0.05),
        link("rocker", B, C, mass=0.05),
        link("link", C, D, mass=0.04),
        Body("slider", position=D, mass=0.1),
        Body("carriage", position=G + point(0, 0.02, 0), mass=0.05),
        Body("follower", position=E, mass=0.02),
        Body("effector", position=F, mass=0.03),
    ]
    joints = [
        hinge("motor", "base", "crank", O, Z_AXIS, servo(1)),
        Joint("crank_coupler", JointKind.SPHERICAL, "crank", "coupler", anchor=A),
        Joint(
            "coupler_rocker",
            JointKind.UNIVERSAL,
            "coupler",
            "rocker",
            anchor=B,
            axis=coupler_normal,
            secondary_axis=X_AXIS,
        ),
        hinge("rocker_pivot", "base", "rocker", O4, X_AXIS),
        Joint("rocker_link", JointKind.SPHERICAL, "rocker", "link", anchor=C),
        Joint(
            "link_slider",
            JointKind.UNIVERSAL,
            "link",
            "slider",
            anchor=D,
            axis=link_normal,
            secondary_axis=unit(np.cross(D - C, link_normal)),
        ),
        Joint("slider_rail", JointKind.PRISMATIC, "base", "slider", anchor=D, axis=X_AXIS),
        Joint("carriage_rod", JointKind.CYLINDRICAL, "slider", "carriage", anchor=G, axis=Y_AXIS),
        Joint(
            "carriage_guide",
            JointKind.PLANAR,
            "base",
            "carriage",
            anchor=G,
            axis=unit(point(0, 1, 1)),
        ),
        Joint("follower_parallel", JointKind.PARALLEL, "crank", "follower", anchor=E),
        Joint("coupler_follower", JointKind.SPHERICAL, "coupler", "follower", anchor=E),
        Joint("effector_mount", JointKind.FIXED, "follower", "effector", anchor=F),
    ]
    return Mechanism(bodies, joints, [Frame("effector", "effector", position=F)], name="all_joints")


def _linear_actuator(hardware_id: int) -> Actuator:
    """A 10 cm stroke linear actuator, 0.1 m/s, 1 m/s^2, centred on the initial pose."""
    return Actuator(
        ActuatedMotion.DISPLACEMENT,
        lower=-0.05,
        upper=0.05,
        velocity_limit=0.1,
        acceleration_limit=1.0,
        hardware_id=hardware_id,
    )


def chain_6r6p(segment: float = 0.08) -> Mechanism:
    """A serial chain of 6 prismatic and 6 revolute actuators, alternating (Fig. 6b).

    From the grounded ``base`` at the origin: slider ``s1`` (prismatic along
    x), ``r1`` (revolute about z), ``s2`` (along y), ``r2`` (about x), ``s3``
    (along z), ``r3`` (about y), and the same again for ``s4`` .. ``r6``. Each
    slider spans ``segment`` [m] along its own slide axis and each revolute body
    along the next slider's, so the chain climbs away from the base like a
    staircase; frame ``effector`` sits at the tip of ``r6``,
    world-aligned. Prismatic strokes +-5 cm (0.1 m/s), revolutes XH430-W350
    servos (+-pi rad); hardware ids 1-12 from the base outwards. 12 DoF, so one
    tracked frame leaves 6 of them to the regularizer (paper Sec. V-1).
    """
    slides = [X_AXIS, Y_AXIS, Z_AXIS]
    hinges = [Z_AXIS, X_AXIS, Y_AXIS]
    bodies = [Body("base", position=point(0, 0, 0), mass=1.0, grounded=True)]
    joints = []
    anchor = point(0, 0, 0)
    parent = "base"
    for k in range(12):
        i = k // 2
        name = f"s{i + 1}" if k % 2 == 0 else f"r{i + 1}"
        end = anchor + segment * slides[(k + 1) // 2 % 3]
        bodies.append(link(name, anchor, end, mass=0.1))
        if k % 2 == 0:
            joints.append(
                Joint(
                    f"{name}_joint",
                    JointKind.PRISMATIC,
                    parent,
                    name,
                    anchor=anchor,
                    axis=slides[i % 3],
                    actuator=_linear_actuator(k + 1),
                )
            )
        else:
            joints.append(hinge(f"{name}_joint", parent, name, anchor, hinges[i % 3], servo(k + 1)))
        parent, anchor = name, end
    return Mechanism(bodies, joints, [Frame("effector", parent, position=anchor)], name="chain_6r6p")
