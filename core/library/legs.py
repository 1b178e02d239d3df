"""Legged reference mechanisms: the paper's Dancer and Walker (Sec. V-3, V-4).

World axes: x forward, y to the robot's left, z up; the ground is z = 0.
Both robots have a serial hip (yaw about z, roll about x, pitch about y, three
axes through one hip centre) and slightly bent knees, so no initial pose is
singular. Angles are zero in the initial pose; masses are those of
XH430-class servos (0.082 kg each) plus brackets.
"""

import numpy as np

from ..model.mechanism import Mechanism
from ..model.parts import Body, Frame, Joint, JointKind
from ._build import X_AXIS, Y_AXIS, Z_AXIS, hinge, link, point, servo, unit

SIDES = {"left": 1.0, "right": -1.0}
#: (ankle height, thigh, shank, knee ahead of the hip-ankle line) [m]
DANCER_LEG = (0.05, 0.25, 0.25, 0.05)
WALKER_LEG = (0.05, 0.22, 0.22, 0.04)


def _sagittal_leg(hip_y: float, ankle_height: float, thigh: float, shank: float, knee_ahead: float):
    """Hip H, knee K and ankle A (3,) [m] of a leg in the plane y = hip_y, knee bent forward."""
    A = point(0.0, hip_y, ankle_height)
    drop = np.sqrt(shank**2 - knee_ahead**2)
    K = A + point(knee_ahead, 0.0, drop)
    H = K + point(-knee_ahead, 0.0, np.sqrt(thigh**2 - knee_ahead**2))
    return H, K, A


def _hip(side: str, H, parent: str, first_id: int, masses=(0.1, 0.1), yaw_servo: bool = True):
    """Serial hip of one leg: yaw (z), roll (x), pitch (y) joints through H.

    Returns bodies ``{side}_hip_yaw_link``, ``{side}_hip_roll_link`` and the
    three joints; the pitch joint drives ``{side}_thigh`` (built by the caller).
    Servos get hardware ids from ``first_id`` on; without ``yaw_servo`` the yaw
    joint is passive.
    """
    yaw_link, roll_link = f"{side}_hip_yaw_link", f"{side}_hip_roll_link"
    ids = iter(range(first_id, first_id + 3))
    bodies = [
        Body(yaw_link, position=H + point(0.0, 0.0, 0.03), mass=masses[0]),
        Body(roll_link, position=H + point(-0.03, 0.0, 0.0), mass=masses[1]),
    ]
    yaw = servo(next(ids), -0.8, 0.8) if yaw_servo else None
    joints = [
        hinge(f"{side}_hip_yaw", parent, yaw_link, H, Z_AXIS, yaw),
        hinge(f"{side}_hip_roll", yaw_link, roll_link, H, X_AXIS, servo(next(ids), -0.5, 0.5)),
        hinge(f"{side}_hip_pitch", roll_link, f"{side}_thigh", H, Y_AXIS, servo(next(ids), -1.5, 1.5)),
    ]
    return bodies, joints


def dancer() -> Mechanism:
    """Two 6R legs between a grounded floor and a 6-DoF pelvis, 8 servos for 6 DoF.

    Like the paper's Dancer (Fig. 8): the feet are fixed to the ground, so the
    legs and the pelvis close one kinematic loop; 12 bodies, 12 revolute joints
    (per leg: hip yaw/roll/pitch, knee, ankle pitch, ankle roll). The pelvis has
    6 DoF; 8 servos (per leg hip roll, hip pitch, knee, ankle pitch)
    over-determine it, so actuator values must be consistent (read them off an
    assembled state). Hip yaw and ankle roll stay passive: of the 15 ways to
    leave two joints per leg passive, only hip yaw with hip roll or with ankle
    roll leaves no motion once the servos hold; with passive ankles (a
    universal joint at each ankle) the held robot could still tip about the
    line through the ankles.

    Geometry [m]: hips at (0, +-0.09, 0.54), knees 5 cm ahead of the hip-ankle
    line (bent about 23 degrees), ankles at (0, +-0.09, 0.05); thigh and shank
    0.25. The grounded ``floor`` carries both feet. Frame ``pelvis_frame`` at
    the pelvis CoM (0, 0, 0.6), world-aligned. Masses [kg]: pelvis 1.0, thighs
    0.25 (knee servo), shanks 0.15, hip links 0.1 (one servo each), ankle links
    0.05. Servos: XH430-W350 (see :mod:`._build`), ids 1-4 left, 5-8 right,
    hip outwards.
    """
    pelvis_c = point(0.0, 0.0, 0.6)
    bodies = [
        Body("floor", position=point(0.0, 0.0, 0.0), mass=1.0, grounded=True),
        Body("pelvis", position=pelvis_c, mass=1.0),
    ]
    joints: list[Joint] = []
    for k, (side, sign) in enumerate(SIDES.items()):
        H, K, A = _sagittal_leg(sign * 0.09, *DANCER_LEG)
        hip_bodies, hip_joints = _hip(side, H, "pelvis", 4 * k + 1, yaw_servo=False)
        bodies += [
            *hip_bodies,
            link(f"{side}_thigh", H, K, mass=0.25),
            link(f"{side}_shank", K, A, mass=0.15),
            Body(f"{side}_ankle_link", position=A, mass=0.05),
        ]
        knee, ankle = servo(4 * k + 3, -0.3, 2.0), servo(4 * k + 4, -0.8, 0.8)
        joints += [
            *hip_joints,
            hinge(f"{side}_knee", f"{side}_thigh", f"{side}_shank", K, Y_AXIS, knee),
            hinge(f"{side}_ankle_pitch", f"{side}_shank", f"{side}_ankle_link", A, Y_AXIS, ankle),
            hinge(f"{side}_ankle_roll", f"{side}_ankle_link", "floor", A, X_AXIS),
        ]
    frames = [Frame("pelvis_frame", "pelvis", position=pelvis_c)]
    return Mechanism(bodies, joints, frames, name="dancer")


def _walker_leg(side: str, sign: float, first_id: int):
    """One serial-parallel Walker leg: 14 bodies, 18 joints (6 actuated), 4 loops.

    The knee and the ankle pitch are driven by servos coaxial with the hip
    pitch through parallelograms (crank radius 4 cm, cranks perpendicular to
    the links in the initial pose): knee crank -> rod -> lever on the shank;
    ankle crank -> upper rod -> idler on the knee axis -> lower rod -> lever on
    the ankle link. The ankle roll servo sits on the foot and drives the ankle
    link through a 3 cm parallelogram in the y-z plane.
    """

    H, K, A = _sagittal_leg(sign * 0.1, *WALKER_LEG)
    thigh, shank = K - H, A - K
    r = 0.04  # crank radius [m]
    back = r * unit(np.cross(Y_AXIS, thigh))  # knee crank, perpendicular to the thigh
    ahead = -back  # ankle crank
    ahead_shank = r * unit(np.cross(shank, Y_AXIS))  # idler's lower arm and ankle lever
    knee_plane, ankle_plane = point(0, sign * 0.03, 0), point(0, -sign * 0.03, 0)
    Hk, Kk = H + knee_plane, K + knee_plane
    Ha, Ka, Aa = H + ankle_plane, K + ankle_plane, A + ankle_plane
    # ankle roll parallelogram behind the ankle: servo axis M below A, crank outwards
    behind = point(-0.04, 0.0, 0.0)
    M = A + behind + point(0.0, 0.0, -0.03)
    outwards = point(0.0, sign * 0.03, 0.0)
    D = A + behind + outwards

    def part(name):
        return f"{side}_{name}"

    def pin(name, parent, child, anchor, axis, actuator=None):
        return hinge(part(name), part(parent), part(child), anchor, axis, actuator)

    hip_bodies, hip_joints = _hip(side, H, "pelvis", first_id, masses=(0.15, 0.4))
    bodies = [
        *hip_bodies,
        link(part("thigh"), H, K, mass=0.15),
        link(part("shank"), K, A, mass=0.12),
        Body(part("ankle_link"), position=A, mass=0.05),
        Body(part("foot"), position=point(0.02, A[1], 0.02), mass=0.2),
        link(part("knee_crank"), Hk, Hk + back, mass=0.02),
        link(part("knee_rod"), Hk + back, Kk + back, mass=0.03),
        link(part("ankle_crank"), Ha, Ha + ahead, mass=0.02),
        link(part("ankle_upper_rod"), Ha + ahead, Ka + ahead, mass=0.03),
        link(part("knee_idler"), Ka + ahead, Ka + ahead_shank, mass=0.02),
        link(part("ankle_lower_rod"), Ka + ahead_shank, Aa + ahead_shank, mass=0.03),
        link(part("roll_crank"), M, M + outwards, mass=0.01),
        link(part("roll_rod"), M + outwards, D, mass=0.01),
    ]
    servo_id = first_id + 3
    joints = [
        *hip_joints,
        pin("knee", "thigh", "shank", K, Y_AXIS),
        pin("ankle_pitch", "shank", "ankle_link", A, Y_AXIS),
        pin("ankle_roll", "ankle_link", "foot", A, X_AXIS),
        # knee drive
        pin("knee_motor", "hip_roll_link", "knee_crank", Hk, Y_AXIS, servo(servo_id, -1.5, 1.5)),
        pin("knee_crank_rod", "knee_crank", "knee_rod", Hk + back, Y_AXIS),
        pin("knee_rod_shank", "knee_rod", "shank", Kk + back, Y_AXIS),
        # ankle pitch drive
        pin(
            "ankle_motor",
            "hip_roll_link",
            "ankle_crank",
            Ha,
            Y_AXIS,
            servo(servo_id + 1, -1.2, 1.2),
        ),
        pin("ankle_crank_rod", "ankle_crank", "ankle_upper_rod", Ha + ahead, Y_AXIS),
        pin("upper_rod_idler", "ankle_upper_rod", "knee_idler", Ka + ahead, Y_AXIS),
        pin("idler", "thigh", "knee_idler", Ka, Y_AXIS),
        pin("idler_lower_rod", "knee_idler", "ankle_lower_rod", Ka + ahead_shank, Y_AXIS),
        pin("lower_rod_ankle", "ankle_lower_rod", "ankle_link", Aa + ahead_shank, Y_AXIS),
        # ankle roll drive
        pin("roll_motor", "foot", "roll_crank", M, X_AXIS, servo(servo_id + 2, -0.6, 0.6)),
        pin("roll_crank_rod", "roll_crank", "roll_rod", M + outwards, X_AXIS),
        pin("roll_rod_ankle", "roll_rod", "ankle_link", D, X_AXIS),
    ]
    sole = point(0.02, A[1], 0.0)
    return bodies, joints, Frame(part("foot"), part("foot"), position=sole)


def walker() -> Mechanism:
    """A serial-parallel biped after Gim, Kim & Yamane (ICRA/IROS 2018), the paper's Walker.

    Floating base: the grounded ``world`` joins the ``pelvis`` by a ``free``
    joint. Each leg (see :func:`_walker_leg`) has a serial hip (yaw, roll,
    pitch servos), knee and ankle pitch driven by hip-mounted servos through
    parallelograms, and an ankle roll servo on the foot: 6 servos, 12 passive
    joints and 4 planar loops per leg. In total 30 bodies, 37 joints (24
    passive, 12 actuated, 1 free), 8 loops; with the servos free the mechanism
    has 6 (floating base) + 12 DoF.

    Geometry [m]: hip centres (0, +-0.1, 0.48), thigh and shank 0.22 with the
    knee 4 cm ahead, ankles 5 cm above the ground; frames ``left_foot`` and
    ``right_foot`` on the soles (2 cm ahead of the ankle, z = 0), world-aligned;
    ``pelvis_frame`` at the pelvis CoM. Masses [kg]: pelvis 1.5 (battery,
    electronics, hip yaw servos), hip roll links 0.4 (three pitch servos),
    feet 0.2 (roll servo); 4.0 in total. The ``world`` body has a
    negligible mass (1e-6) so that it does not shift the centre of mass.
    Servos: XH430-W350, ids 1-6 left, 7-12 right.
    """
    hip = _sagittal_leg(0.0, *WALKER_LEG)[0]
    pelvis_c = hip + point(0.0, 0.0, 0.06)
    bodies = [Body("world", mass=1e-6, grounded=True), Body("pelvis", position=pelvis_c, mass=1.5)]
    joints = [Joint("floating_base", JointKind.FREE, "world", "pelvis", anchor=pelvis_c)]
    frames = []
    for k, (side, sign) in enumerate(SIDES.items()):
        leg_bodies, leg_joints, foot = _walker_leg(side, sign, 6 * k + 1)
        bodies += leg_bodies
        joints += leg_joints
        frames.append(foot)
    frames.append(Frame("pelvis_frame", "pelvis", position=pelvis_c))
    return Mechanism(bodies, joints, frames, name="walker")
