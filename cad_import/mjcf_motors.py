"""The motors of an MJCF model: their limits (the file's, the ``looprig:`` custom data),
the servo each one names or hints at, and the limits a servo's rpm implies."""

from __future__ import annotations

import numpy as np

from ..core.model.parts import LIMIT_FIELDS
from ..core.model.servos import match_servo
from .errors import FileFormatError
from .mjcf_compile import element_name
from .specs import (
    TreeJointSpec,
)

#: ``<custom>`` element names of looprig's MJCF convention for motor limits and servos
LIMIT_NUMERIC = "looprig:{limit}:{actuator}"  # <numeric data="value">, joint units


SERVO_TEXT = "looprig:servo:{actuator}"  # <text data="XC330-M288-T">


USER_TEXT = "looprig:actuator_user"  # <text data="rpm">: actuator user[0] is the motor's rpm


def servo_hints(spec, a: int, joint: str, actuator: str) -> list[tuple[str, str]]:
    """Where the catalogue may find the servo of actuator ``a``: the default class of the
    actuator, then of its joint, then the actuator's name."""
    hints = [(spec.actuators[a].classname.name, "actuator class")]
    spec_joint = spec.joint(joint)
    if spec_joint is not None:
        hints.append((spec_joint.classname.name, "joint class"))
    return [(name, f"{what} {name!r}") for name, what in hints] + [(actuator, f"actuator name {actuator!r}")]


def file_limits(spec, model, motors: dict[str, TreeJointSpec], path, notes: list[str]) -> None:
    """Motor limits and servos the file states in looprig's ``<custom>`` convention
    (:data:`LIMIT_NUMERIC`, :data:`SERVO_TEXT`, :data:`USER_TEXT`), set on the joints;
    a note names the servo classes the file defines when some motor's class names none.

    Errors name the ``<numeric>`` or ``<text>`` element: an unknown limit or actuator,
    not one finite number, a velocity or acceleration limit not positive.
    """
    known = ", ".join(motors) or "(none)"

    def motor(name: str, element: str) -> TreeJointSpec:
        if name not in motors:
            raise FileFormatError(path, f"no actuator {name!r}; actuators are: {known}", element)
        return motors[name]

    for numeric in spec.numerics:
        parts = numeric.name.split(":")
        if parts[0] != "looprig":
            continue
        element = f"<numeric name={numeric.name!r}>"
        if len(parts) != 3 or parts[1] not in LIMIT_FIELDS:
            raise FileFormatError(
                path, "expected looprig:<lower|upper|velocity|acceleration>:<actuator>", element
            )
        joint, data = motor(parts[2], element), list(numeric.data)
        if len(data) != 1 or not np.isfinite(data[0]):
            raise FileFormatError(path, f"data must be one finite number, got {data}", element)
        if parts[1] in ("velocity", "acceleration") and not data[0] > 0:
            raise FileFormatError(path, f"a {parts[1]} limit must be positive, got {data[0]:g}", element)
        setattr(joint, parts[1], float(data[0]))
    for text in spec.texts:
        element = f"<text name={text.name!r}>"
        if text.name == USER_TEXT:
            if text.data.strip() != "rpm":
                raise FileFormatError(path, f"data must be 'rpm', got {text.data!r}", element)
            user_rpm(model, motors, path, element)
        elif text.name.startswith(SERVO_TEXT.format(actuator="")):
            motor(text.name.removeprefix(SERVO_TEXT.format(actuator="")), element).servo = text.data.strip()
        elif text.name.startswith("looprig:"):
            raise FileFormatError(path, "expected looprig:servo:<actuator> or looprig:actuator_user", element)
    if model.nuser_actuator and not any(t.name == USER_TEXT for t in spec.texts):
        notes.append(
            "actuators carry user data; if user[0] is each motor's top speed [rev/min] before its gear "
            f"(Cassie's files), add <custom><text name={USER_TEXT!r} data='rpm'/></custom> to read it"
        )
    generic = [
        j for j in motors.values() if not j.servo and not any(match_servo(n) for n, _ in j.servo_hints)
    ]
    defined = [name for name in default_classes(spec) if match_servo(name)] if generic else []
    if defined:
        classes = sorted({n for j in generic for n, what in j.servo_hints[:2] if n != "main"}) or ["main"]
        names = ", ".join(j.actuator_name or j.name for j in generic)
        notes.append(
            f"motors {names} use class {', '.join(map(repr, classes))}, which names no servo; the file "
            f"defines servo classes {', '.join(defined)}: name each motor's servo in the mapping "
            '("servo": {"motor": "model"}) for catalogue limits'
        )


def user_rpm(model, motors: dict[str, TreeJointSpec], path, element: str) -> None:
    """Velocity limits from actuator ``user[0]`` [rev/min of the motor] and ``gear``:
    ``user[0] 2 pi / 60 / |gear|`` [rad/s or m/s of the joint]."""
    for a in range(model.nu):
        joint = motors.get(element_name(model, "actuator", a, f"actuator{a}"))
        rpm, gear = float(model.actuator_user[a, 0]), abs(float(model.actuator_gear[a, 0]))
        if joint is None or rpm == 0:
            continue
        if not (rpm > 0 and gear > 0):
            problem = f"actuator {a}: user rpm {rpm:g} and gear {gear:g} must be positive"
            raise FileFormatError(path, problem, element)
        joint.velocity = rpm * 2 * np.pi / 60 / gear


def default_classes(spec) -> list[str]:
    """The ``<default class>`` names the file defines (MuJoCo's merged XML)."""
    from xml.etree import ElementTree

    try:
        root = ElementTree.fromstring(spec.to_xml())
    except (ValueError, ElementTree.ParseError):
        # MuJoCo cannot write every model back (some plugins), nor write names XML cannot hold
        # (control characters it accepted): no classes to name
        return []
    return [d.get("class") for d in root.iter("default") if d.get("class")]


def servo_limits(mujoco, model, a: int, joint: TreeJointSpec, path, length_to_joint=None) -> None:
    """Narrow a joint's limits by a position servo's control range.

    A servo with fixed gain ``k = gainprm[0] > 0`` and affine bias
    ``biasprm[0] + biasprm[1] q`` (``biasprm[1] < 0``) holds the actuator length
    ``gear * x`` at ``(k ctrl + biasprm[0]) / -biasprm[1]``, ``x`` the joint value or,
    for a tendon, its length (``length_to_joint`` maps it to the joint's value).
    """
    if not model.actuator_ctrllimited[a]:
        return
    if int(model.actuator_gaintype[a]) != int(mujoco.mjtGain.mjGAIN_FIXED):
        return
    if int(model.actuator_biastype[a]) != int(mujoco.mjtBias.mjBIAS_AFFINE):
        return
    gain, b0, b1 = model.actuator_gainprm[a, 0], model.actuator_biasprm[a, 0], model.actuator_biasprm[a, 1]
    gear = model.actuator_gear[a, 0]
    if not (gain > 0 and b1 < 0 and gear != 0):
        return
    ends = [(gain * c + b0) / (-b1) / gear for c in model.actuator_ctrlrange[a]]
    ends = sorted(ends if length_to_joint is None else [length_to_joint(x) for x in ends])
    joint.lower = max(joint.lower, float(ends[0]))
    joint.upper = min(joint.upper, float(ends[1]))
    if joint.lower > joint.upper:
        raise FileFormatError(
            path, "the servo's control range and the joint range do not overlap", joint.element
        )
