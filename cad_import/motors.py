"""The motors of an imported tree: the names their curves take, the catalogue servo each one
is, and the limits the catalogue gives where the file leaves them open."""

from __future__ import annotations

import numpy as np

from ..core.model.parts import Actuator, LimitSource
from ..core.model.servos import ServoError, ServoMatch, ServoModel, match_servo, servo_model
from .specs import (
    TreeJointSpec,
    TreeModel,
)


# --------------------------------------------------------------------- mechanism
def motor_curve_names(model: TreeModel, notes: list[str]) -> dict[str, str | None]:
    """The name each actuated joint's motor takes: the file's actuator name, else None
    (the joint's). A name that two joints' motors share (one transmission driving
    several joints) or that names another joint is dropped for the joint names, with
    a note."""
    joint_names = {j.name for j in model.joints}
    wanted = {j.name: j.actuator_name or j.name for j in model.joints if j.actuated}
    counts: dict[str, int] = {}
    for name in wanted.values():
        counts[name] = counts.get(name, 0) + 1
    names = {}
    for joint, name in wanted.items():
        if name != joint and (counts[name] > 1 or name in joint_names):
            why = "drives several joints" if counts[name] > 1 else "is the name of another joint"
            notes.append(f"actuator {name!r} {why}; its curve on joint {joint!r} is named {joint!r}")
            name = joint
        names[joint] = None if name == joint else name
    return names


def catalogue_servo(
    model: TreeModel, joint: TreeJointSpec, matched: dict[str, list[str]]
) -> ServoMatch | None:
    """The catalogue servo of an actuated joint: the one the file names (an unknown name
    is an error naming the joint), else the first of its hints the catalogue recognises.
    Records how it was found in ``matched`` (how -> motor names)."""
    if joint.servo is not None:
        try:
            found = ServoMatch(servo_model(joint.servo), f"{joint.servo!r} named in the file")
        except ServoError as error:
            raise model.error(str(error), joint.element, joint.line) from None
    else:
        found = next(filter(None, (match_servo(name, what) for name, what in joint.servo_hints)), None)
    if found is not None:
        matched.setdefault(f"{found.model.name} ({found.how})", []).append(joint.actuator_name or joint.name)
    return found


def with_catalogue_limits(actuator: Actuator, servo: ServoModel) -> Actuator:
    """The actuator of a ``servo``: its limits the file leaves open (infinite) taken
    from the catalogue (the velocity limit: the no-load speed at the nominal voltage)."""
    values = {}
    if not np.isfinite(actuator.velocity_limit) and servo.velocity_limit is not None:
        values["velocity"] = servo.velocity_limit
    return actuator.with_limits(values, LimitSource.CATALOGUE, servo=servo.name)
