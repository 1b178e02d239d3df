"""The mapping: how a clip drives a mechanism, and its file form.

Targets (which track drives which frame, with which weights and offset), aims
(which frame axis looks at which tracked or fixed point), an optional
centre-of-mass objective, the motors, the start pose, held motors, and
the settings of :class:`~looprig.core.retarget.settings.RetargetSettings`. The JSON form
is documented in ``docs/retarget.md``; every value is checked on reading, and
errors name the file and the object.
"""

import dataclasses
import json
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import LooprigWarning, MechanismError, TargetError, did_you_mean
from ..maths.rotations import quat_to_matrix
from ..model.mechanism import Mechanism, actuator_name_choices
from ..model.parts import LIMIT_FIELDS, LimitSource
from ..model.servos import ServoError, derived_acceleration_limits, servo_model
from ..terms.aim import AimObjective, unit_vector
from .json_records import json_list, json_object, plain_numbers, record_from_json
from .settings import RETARGET_SETTINGS, RetargetSettings

MAPPING_VERSION = 1
#: Keys an older mapping may set that mean nothing now: what happens instead.
RETIRED_KEYS = {
    "respect_speed_limits": "every declared motor limit is held by default "
    '(limit_mode "hold": the clip solved again under them); the key is ignored',
}


@dataclass(frozen=True)
class TargetSpec:
    """One target: the track ``track`` drives the mechanism frame (or body) ``frame``.

    offset_position (3,) [m] and offset_rotation (4,) wxyz place the target in the
    track's local frame (``T_track_target``), e.g. to line up a hand bone with the
    robot's tool frame. Weights as in :class:`FrameObjective`.
    """

    track: str
    frame: str
    position_weight: tuple[float, float, float] = (1.0, 1.0, 1.0)
    orientation_weight: tuple[float, float, float] = (0.0, 0.0, 0.0)
    offset_position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    offset_rotation: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)

    def __post_init__(self):
        for name in ("track", "frame"):
            if not isinstance(getattr(self, name), str):
                raise TargetError(f"mapping target: {name} must be a name, got {getattr(self, name)!r:.80}")
        where = f"mapping target {self.frame!r}"
        for name, size in (("position_weight", 3), ("orientation_weight", 3)):
            w = np.asarray(getattr(self, name), dtype=float)
            if w.shape != (size,) or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise TargetError(
                    f"{where}: {name} must be {size} finite non-negative numbers, got {w.tolist()}"
                )
        offset = np.asarray(self.offset_position, dtype=float)
        if offset.shape != (3,) or not np.all(np.isfinite(offset)):
            raise TargetError(f"{where}: offset_position must be 3 finite numbers [m], got {offset.tolist()}")
        q = np.asarray(self.offset_rotation, dtype=float)
        if q.shape != (4,) or not np.all(np.isfinite(q)) or abs(np.linalg.norm(q) - 1.0) > 1e-6:
            raise TargetError(
                f"{where}: offset_rotation must be a unit quaternion (w, x, y, z), got {q.tolist()}"
            )


#: Default distance [m] from an aim's frame origin below which its point is too close.
AIM_MIN_DISTANCE = 0.02


@dataclass(frozen=True)
class AimSpec:
    """One aim: the axis ``axis`` of the mechanism frame (or body) ``frame`` points at a point,
    the track ``track``'s position or the fixed world ``point`` [m] (one of them).

    up: the frame's up axis, kept towards ``up_direction`` (world; in ``up_track``'s
    axes when given) as the robot allows (Blender's Track To); lock: the frame's axis
    the aim turns about (Locked Track); weight; min_distance [m]: a point nearer the
    frame's origin is warned about (the line of sight turns fast there). Axes are in
    the frame's axes; ``frame`` may also name the track of one of the mapping's
    targets (as the Maya exporter writes it): the aim is then that target's frame's,
    its axes in the track's axes (turned by the target's offset_rotation).
    """

    frame: str
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    track: str | None = None
    point: tuple[float, float, float] | None = None
    up: tuple[float, float, float] | None = None
    up_direction: tuple[float, float, float] = (0.0, 0.0, 1.0)
    up_track: str | None = None
    lock: tuple[float, float, float] | None = None
    weight: float = 1.0
    min_distance: float = AIM_MIN_DISTANCE

    def __post_init__(self):
        if not isinstance(self.frame, str):
            raise TargetError(f"mapping aim: frame must be a name, got {self.frame!r:.80}")
        where = f"mapping aim {self.frame!r}"
        for name in ("track", "up_track"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TargetError(f"{where}: {name} must be a track name, got {value!r:.80}")
        if (self.track is None) == (self.point is None):
            raise TargetError(f"{where}: give the point it looks at as a track or a fixed point, one of them")
        if self.point is not None:
            p = np.asarray(self.point, dtype=float) if plain_numbers(self.point) else None
            if p is None or p.shape != (3,) or not np.all(np.isfinite(p)):
                raise TargetError(f"{where}: point must be 3 finite numbers [m], got {self.point!r:.80}")
        unit_vector(self.up_direction, f"{where}: up_direction")
        if self.up is None and self.up_track is not None:
            raise TargetError(f"{where}: up_track needs an up axis (the frame's axis to keep up)")
        AimObjective(self.frame, self.axis, self.up, self.lock, self.weight).checked(where)
        d = self.min_distance
        if isinstance(d, bool) or not isinstance(d, int | float) or not np.isfinite(d) or d < 0:
            raise TargetError(f"{where}: min_distance must be a finite distance >= 0 [m], got {d!r:.80}")

    @property
    def source(self) -> str:
        """What it looks at, for messages: ``track 'look'`` or ``point [x, y, z]``."""
        return f"track {self.track!r}" if self.track is not None else f"point {list(self.point)}"


@dataclass(frozen=True)
class SupportPhase:
    """During [start, end] [s] the CoM target is the centroid of these frames' targets
    (the frames must be targets of the mapping, e.g. the feet in contact)."""

    start: float
    end: float
    frames: tuple[str, ...]

    def __post_init__(self):
        times = (self.start, self.end)
        if not all(isinstance(t, int | float) and not isinstance(t, bool) and np.isfinite(t) for t in times):
            raise TargetError(f"support phase: start and end must be finite times [s], got {times!r:.80}")
        if self.end < self.start:
            raise TargetError(f"support phase: end {self.end} is before start {self.start}")
        if not all(isinstance(f, str) for f in self.frames):
            raise TargetError(
                f"support phase {self.start}-{self.end} s: frames must be names, got {self.frames!r:.80}"
            )


@dataclass(frozen=True)
class ComSpec:
    """Centre-of-mass objective: follow ``track``'s position, or keep the CoM over the
    support given by ``support`` phases (the paper's walker). Weights per world axis;
    with z up, (w, w, 0) leaves the height free."""

    weight: tuple[float, float, float] = (1.0, 1.0, 0.0)
    track: str | None = None
    support: tuple[SupportPhase, ...] = ()

    def __post_init__(self):
        w = np.asarray(self.weight, dtype=float) if plain_numbers(self.weight) else None
        if w is None or w.shape != (3,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise TargetError(
                f"mapping com: weight must be 3 finite non-negative numbers, got {self.weight!r:.80}"
            )
        if self.track is not None and not isinstance(self.track, str):
            raise TargetError(f"mapping com: track must be a name, got {self.track!r:.80}")


@dataclass(frozen=True)
class RetargetMapping(RetargetSettings):
    """How a clip drives a mechanism: targets, aims, an optional CoM objective, and the
    settings of :class:`~looprig.core.retarget.settings.RetargetSettings` (keyword only)."""

    targets: tuple[TargetSpec, ...]
    com: ComSpec | None = None
    start: Mapping[str, float] | None = None  # motor name -> value [rad | m] at the clip's start
    motors: tuple[str, ...] | None = None  # the joints that are motors (default: as the robot file says)
    hold: tuple[str, ...] = ()  # motors locked at their value at the clip's start
    #: motor name -> {lower, upper [rad | m], velocity [rad/s | m/s], acceleration [rad/s^2 | m/s^2]}:
    #: limits that override the robot file's (lower and upper as motor values, zero at the start pose)
    motor_limits: Mapping[str, Mapping[str, float]] | None = None
    #: motor name -> servo model (a catalogue name, :mod:`looprig.core.model.servos`): its catalogue limits
    servo: Mapping[str, str] | None = None
    #: give motors without an acceleration limit the estimate their servo's stall torque allows
    #: (:func:`looprig.core.model.servos.derived_acceleration_limits`); off unless asked
    derive_acceleration: bool = False
    #: frames that look at points (:class:`AimSpec`), beside the targets
    aims: tuple[AimSpec, ...] = ()

    def __post_init__(self):
        super().__post_init__()
        for name, value in (self.start or {}).items():
            if not isinstance(value, int | float) or isinstance(value, bool) or not np.isfinite(value):
                raise TargetError(f"mapping start: actuator {name!r} needs a finite value, got {value!r}")
        for motor, limits in (self.motor_limits or {}).items():
            where = f"mapping motor_limits {motor!r}"
            if not isinstance(limits, Mapping):
                raise TargetError(f"{where}: expected an object of limits, got {limits!r:.80}")
            for limit, value in limits.items():
                if limit not in LIMIT_FIELDS:
                    raise TargetError(f"{where}: " + did_you_mean("limit", limit, LIMIT_FIELDS))
                if not isinstance(value, int | float) or isinstance(value, bool) or not np.isfinite(value):
                    raise TargetError(f"{where}: {limit} must be a finite number, got {value!r:.80}")
                if limit in ("velocity", "acceleration") and not value > 0:
                    raise TargetError(f"{where}: {limit} must be positive, got {value!r}")
            if limits.get("lower", -np.inf) > limits.get("upper", np.inf):
                raise TargetError(f"{where}: lower {limits['lower']} exceeds upper {limits['upper']}")
        for motor, model in (self.servo or {}).items():
            if not isinstance(model, str):
                raise TargetError(f"mapping servo {motor!r}: expected a servo model name, got {model!r:.80}")
            try:
                servo_model(model)
            except ServoError as error:
                raise TargetError(f"mapping servo {motor!r}: {error}") from None

    def limited(self, mechanism: Mechanism, states=None) -> Mechanism:
        """``mechanism`` (with its motors decided) with this mapping's limits: a motor's
        ``servo`` sets its catalogue limits and model, then ``motor_limits`` set theirs,
        over the robot file's (the precedence of docs/files.md: mapping > file >
        catalogue > derived > none); with ``derive_acceleration``, motors still without an
        acceleration limit get the derived estimate over ``states`` (n_states, n, 7;
        default the initial configuration). Motors are named by actuator or joint name;
        an unknown one raises a one-line :class:`TargetError` listing the actuators."""
        given: dict[str, list[tuple[dict, LimitSource, str | None]]] = {}
        for motor, model_name in (self.servo or {}).items():
            model = servo_model(model_name)
            values = {} if model.velocity_limit is None else {"velocity": model.velocity_limit}
            given.setdefault(motor, []).append((values, LimitSource.CATALOGUE, model.name))
        for motor, limits in (self.motor_limits or {}).items():
            given.setdefault(motor, []).append((dict(limits), LimitSource.MAPPING, None))
        if not given and not self.derive_acceleration:
            return mechanism
        changed = {}
        try:
            for motor, steps in given.items():
                joint = mechanism.actuated_joint(motor, "mapping motor_limits/servo")
                actuator = joint.actuator
                for values, source, model in steps:
                    actuator = actuator.with_limits(values, source, servo=model)
                changed[joint.name] = actuator
            joints = [
                dataclasses.replace(j, actuator=changed.get(j.name, j.actuator)) for j in mechanism.joints
            ]
            mechanism = Mechanism(
                mechanism.bodies, joints, mechanism.frames, name=mechanism.name, couplings=mechanism.couplings
            )
            return _with_derived(mechanism, states) if self.derive_acceleration else mechanism
        except MechanismError as error:  # an unknown motor, or limits contradicting the file's
            raise TargetError(str(error)) from None

    def named_for(self, mechanism: Mechanism) -> "RetargetMapping":
        """This mapping with its motors named as the solve names them on ``mechanism``
        (the robot as loaded): ``motors`` by joint name, ``start`` and ``hold`` by
        actuator name (:attr:`Mechanism.actuator_names`).

        Each name may be the actuator's (as the robot file names its motor) or its
        joint's; a name that is neither raises a one-line :class:`TargetError` listing
        the actuators (with their joints). A joint that is no motor passes unchanged,
        for the solve to refuse or to make a motor (``motors``).
        """
        by_name = {j.name: j for j in mechanism.joints}
        by_name.update({j.actuator_name: j for j in mechanism.actuated_joints})

        def joint_of(name: str, what: str):
            if name not in by_name:
                raise TargetError(
                    f"mapping {what}: {actuator_name_choices(mechanism, name)}, or a joint's name"
                )
            return by_name[name]

        def motor_name(name: str, what: str) -> str:
            joint = joint_of(name, what)
            return joint.actuator_name or joint.name

        motors = None if self.motors is None else tuple(joint_of(n, "motors").name for n in self.motors)
        start = None if self.start is None else {motor_name(n, "start"): v for n, v in self.start.items()}
        hold = tuple(motor_name(n, "hold") for n in self.hold)
        return dataclasses.replace(self, motors=motors, start=start, hold=hold)

    def aim_objectives(self, mechanism: Mechanism) -> list[AimObjective]:
        """The aims as :class:`~looprig.core.terms.aim.AimObjective` s on ``mechanism``'s frames,
        in mapping order. An aim whose ``frame`` names no frame or body of the mechanism but
        the track of one mapping target aims that target's frame, its axes turned from the
        track's axes by the target's offset_rotation. Anything else raises a one-line
        :class:`TargetError` naming the aim."""
        names = {f.name for f in mechanism.frames} | set(mechanism.body_names)
        by_track: dict[str, list[TargetSpec]] = {}
        for t in self.targets:
            by_track.setdefault(t.track, []).append(t)
        out = []
        for i, aim in enumerate(self.aims):
            where = f"mapping aim {i} ({aim.frame!r})"
            frame, turn = aim.frame, np.eye(3)
            if frame not in names:
                driven = by_track.get(frame, [])
                if len(driven) != 1:
                    extra = "" if not driven else f" (the track drives {len(driven)} targets: name the frame)"
                    choices = did_you_mean("frame or body", frame, names, "frames and bodies")
                    raise TargetError(f"{where}: {choices}{extra}")
                target = driven[0]
                if target.frame not in names:
                    raise TargetError(
                        f"{where}: its track's target: "
                        + did_you_mean("frame or body", target.frame, names, "frames and bodies")
                    )
                frame = target.frame
                turn = quat_to_matrix(np.asarray(target.offset_rotation, dtype=float)).T  # track -> target

            axis, up, lock = (
                None if v is None else tuple(turn @ np.asarray(v, float))
                for v in (aim.axis, aim.up, aim.lock)
            )
            out.append(AimObjective(frame, axis, up, lock, aim.weight).checked(where))
        return out

    # ----------------------------------------------------------------- file form
    def to_dict(self) -> dict:
        data = asdict(self)
        data["version"] = MAPPING_VERSION
        return data

    @classmethod
    def from_dict(cls, data: Mapping, source: str = "mapping") -> "RetargetMapping":
        """Build from the JSON form (see ``docs/retarget.md``); errors name ``source``."""
        if not isinstance(data, Mapping):
            raise TargetError(f"{source}: a mapping is a JSON object, got {type(data).__name__}")
        version = data.get("version", MAPPING_VERSION)
        if version != MAPPING_VERSION:
            raise TargetError(f"{source}: unsupported mapping version {version!r}")
        known = {"targets", "aims", "com", "start", "motors", "hold", "motor_limits", "servo", "version"}
        known |= {"derive_acceleration"} | {s.name for s in RETARGET_SETTINGS}
        for key in RETIRED_KEYS.keys() & data.keys():
            warnings.warn(LooprigWarning(f"{source}: {key!r} is retired: {RETIRED_KEYS[key]}"), stacklevel=2)
        for key in data.keys() - RETIRED_KEYS.keys():
            if key not in known:
                raise TargetError(f"{source}: " + did_you_mean("mapping key", key, known))
        if "targets" not in data and "aims" not in data:
            raise TargetError(f"{source}: the mapping has no 'targets' list (nor 'aims')")
        settings = {s.name: s.check(data[s.name], source) for s in RETARGET_SETTINGS if s.name in data}
        targets = json_list(data.get("targets", []), f"{source}: targets")
        targets = tuple(
            record_from_json(TargetSpec, t, f"{source}: target {i}") for i, t in enumerate(targets)
        )
        aims = json_list(data.get("aims", []), f"{source}: aims")
        aims = tuple(record_from_json(AimSpec, a, f"{source}: aim {i}") for i, a in enumerate(aims))
        com = None
        if data.get("com") is not None:
            c = dict(json_object(data["com"], f"{source}: com"))
            c["support"] = tuple(
                record_from_json(SupportPhase, p, f"{source}: com support phase {i}")
                for i, p in enumerate(json_list(c.get("support", []), f"{source}: com support"))
            )
            com = record_from_json(ComSpec, c, f"{source}: com")
        start = (
            dict(json_object(data["start"], f"{source}: start")) if data.get("start") is not None else None
        )
        motors = data.get("motors")
        if motors is not None:
            motors = json_list(motors, f"{source}: motors")
            if not all(isinstance(name, str) for name in motors):
                raise TargetError(f"{source}: motors must be a list of joint names, got {motors!r}")
            motors = tuple(motors)
        hold = json_list(data.get("hold", []), f"{source}: hold")
        if not all(isinstance(name, str) for name in hold):
            raise TargetError(f"{source}: hold must be a list of motor names, got {hold!r}")
        limits = data.get("motor_limits")
        limits = None if limits is None else dict(json_object(limits, f"{source}: motor_limits"))
        servo = data.get("servo")
        servo = None if servo is None else dict(json_object(servo, f"{source}: servo"))
        return cls(
            targets=targets,
            aims=aims,
            com=com,
            start=start,
            motors=motors,
            hold=tuple(hold),
            motor_limits=limits,
            servo=servo,
            derive_acceleration=_flag(
                data.get("derive_acceleration", False), f"{source}: derive_acceleration"
            ),
            **settings,
        )

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.to_dict(), file, indent=2)

    @classmethod
    def load(cls, path) -> "RetargetMapping":
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise TargetError(f"{path}: cannot read mapping: {error}") from None
        return cls.from_dict(data, str(path))


def _with_derived(mechanism: Mechanism, states) -> Mechanism:
    """``mechanism`` with the derived acceleration limit on each motor that has none."""
    derived = derived_acceleration_limits(mechanism, states)
    joints = []
    for j in mechanism.joints:
        if j.actuator is not None and j.actuator.limit_source("acceleration") == LimitSource.NONE:
            if j.actuator_name in derived:
                value = {"acceleration": derived[j.actuator_name]}
                j = dataclasses.replace(j, actuator=j.actuator.with_limits(value, LimitSource.DERIVED))
        joints.append(j)
    return Mechanism(
        mechanism.bodies, joints, mechanism.frames, name=mechanism.name, couplings=mechanism.couplings
    )


def _flag(value, source: str) -> bool:
    if not isinstance(value, bool):
        raise TargetError(f"{source}: derive_acceleration must be true or false, got {value!r:.80}")
    return value
