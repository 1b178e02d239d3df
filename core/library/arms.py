"""Serial arms: the paper's Boxer (Schumacher, Knoop & Bächer 2021, Sec. V-2, Fig. 7).

World axes: x forward, y to the robot's left, z up.
"""

import numpy as np

from ..model.mechanism import Mechanism
from ..model.parts import Body, Frame
from ._build import X_AXIS, Y_AXIS, Z_AXIS, hinge, link, point, servo

#: Shoulder roll angle [rad] at which the Boxer's shoulder is singular: the arm
#: is raised sideways to the horizontal and the pitch axis lines up with the yaw axis.
BOXER_SINGULAR_ROLL = np.pi / 2


def boxer(upper_arm: float = 0.25, forearm: float = 0.25) -> Mechanism:
    """The Boxer's left arm: a 3-DoF shoulder and an elbow, four XH430-W350 servos.

    Geometry [m], neutral (initial) pose: the shoulder centre S = (0, 0.2, 0.5)
    sits on the grounded ``torso``; the upper arm hangs straight down to the
    elbow E = S - (0, 0, upper_arm) and the forearm points forward to the hand
    H = E + (forearm, 0, 0) (elbow bent 90 degrees). Frame ``hand`` sits at H
    with the world's axes (x along the forearm).

    Joints, all actuated revolutes through S except the elbow (in chain order):
    ``shoulder_yaw`` about z (torso -> ``shoulder_yaw_link``), ``shoulder_roll``
    about x (-> ``shoulder_roll_link``), ``shoulder_pitch`` about y
    (-> ``upper_arm``), ``elbow`` about y through E (-> ``forearm``). The three
    shoulder axes intersect at S and are mutually orthogonal in the neutral pose.

    Singularity: at shoulder roll = ``BOXER_SINGULAR_ROLL`` (pi/2, the arm
    raised sideways to the horizontal) the pitch axis coincides with the yaw
    axis and the shoulder loses a rotational degree of freedom (gimbal lock);
    raising the hand sideways to shoulder height drives the arm through it.

    Masses [kg]: servos 0.082 (XH430 datasheet) on each shoulder link, 0.25
    upper arm and 0.2 forearm (servo + bracket), torso 2.0. Actuators: XH430-W350
    speed limit pi rad/s (30 rev/min no-load at 12 V, ROBOTIS e-Manual,
    https://emanual.robotis.com/docs/en/dxl/x/xh430-w350/), ranges [rad] that
    include the singular roll; hardware ids 1-4 from the shoulder outwards.
    """
    S = point(0.0, 0.2, 0.5)
    E = S - upper_arm * Z_AXIS
    H = E + forearm * X_AXIS
    bodies = [
        Body("torso", position=point(0.0, 0.0, 0.35), mass=2.0, grounded=True),
        Body("shoulder_yaw_link", position=S + point(0.0, 0.0, 0.03), mass=0.082),
        Body("shoulder_roll_link", position=S + point(-0.03, 0.0, 0.0), mass=0.082),
        link("upper_arm", S, E, mass=0.25),
        link("forearm", E, H, mass=0.2),
    ]
    joints = [
        hinge("shoulder_yaw", "torso", "shoulder_yaw_link", S, Z_AXIS, servo(1, -np.pi, np.pi)),
        hinge(
            "shoulder_roll",
            "shoulder_yaw_link",
            "shoulder_roll_link",
            S,
            X_AXIS,
            servo(2, -0.5, 2.5),
        ),
        hinge("shoulder_pitch", "shoulder_roll_link", "upper_arm", S, Y_AXIS, servo(3, -np.pi, 1.0)),
        hinge("elbow", "upper_arm", "forearm", E, Y_AXIS, servo(4, -1.0, 1.5)),
    ]
    return Mechanism(bodies, joints, [Frame("hand", "forearm", position=H)], name="boxer")
