"""The Dynamixel X-series servo model: ticks, velocity units, model data.

How an actuator coordinate [rad or m] maps to a servo's Goal Position(116)
ticks (:class:`DynamixelMotor`, :func:`values_to_ticks`), which ticks a mode
allows (:class:`DynamixelSettings`), the velocity unit (0.229 rev/min) and
no-load speeds of common models. Sources: the ROBOTIS e-manual (``DXL_SOURCE``).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..curves.actuator_curves import ActuatorCurves
from ..curves.violations import Violation, violations_from_excess
from ..errors import CurvesError, did_you_mean

#: Encoder resolution of Dynamixel X-series servos [ticks/rev] (0.088 deg per tick).
DXL_TICKS_PER_REV = 4096
#: Velocity unit of Goal Velocity(104), Profile Velocity(112), Velocity Limit(44) [rev/min].
DXL_VELOCITY_UNIT_RPM = 0.229
#: The same unit in [rad/s].
DXL_VELOCITY_UNIT_RAD_S = DXL_VELOCITY_UNIT_RPM * 2.0 * math.pi / 60.0
#: Goal Position(116) range per Operating Mode(11): 3 = position, 4 = extended position.
DXL_TICK_RANGES = {"position": (0, 4095), "extended_position": (-1_048_575, 1_048_575)}
DXL_OPERATING_MODES = {"position": 3, "extended_position": 4}
#: The modes a tick export can be asked for: one of :data:`DXL_TICK_RANGES`, or "auto"
#: (:func:`resolve_mode`: extended position when a motor with no range leaves one turn).
DXL_MODE_CHOICES = ("auto", *DXL_TICK_RANGES)
DXL_GOAL_POSITION_ADDRESS = 116
#: Goal Position(116) is a 4-byte signed register: ticks outside cannot be written in any mode.
DXL_REGISTER_RANGE = (-(2**31), 2**31 - 1)
DXL_SOURCE = (
    "ROBOTIS e-manual, Dynamixel X-series control table "
    "(https://emanual.robotis.com/docs/en/dxl/x/xm430-w350/): Goal Position(116), "
    "4096 ticks/rev (0.088 deg/tick), counter-clockwise (front view) increasing; "
    "Position Control Mode(3) 0..4095 within Min/Max Position Limit(52/48), "
    "Extended Position Control Mode(4) -1048575..1048575 (-256..256 rev); "
    "velocity unit 0.229 rev/min for Velocity Limit(44) and Profile Velocity(112)"
)
DXL_CONVERSION = (
    "ticks = zero_offset_ticks + direction * round(value * 4096 / P), "
    "P = 2 pi rad for angles or metres_per_revolution m for displacements"
)

#: No-load speed [rev/min] at 11.1 / 12.0 / 14.8 V (ROBOTIS e-manual model pages).
DXL_NO_LOAD_RPM = {
    "XM430-W350": (43.0, 46.0, 57.0),
    "XM430-W210": (70.0, 77.0, 95.0),
    "XH430-W350": (27.0, 30.0, 37.0),
    "XH430-W210": (46.0, 50.0, 62.0),
}
_DXL_VOLTAGES = (11.1, 12.0, 14.8)


def rad_s_to_dxl_velocity(velocity):
    """Angular velocity [rad/s] in Dynamixel velocity units (0.229 rev/min), as float."""
    return np.asarray(velocity, dtype=float) / DXL_VELOCITY_UNIT_RAD_S


def dxl_velocity_to_rad_s(units):
    """Dynamixel velocity units (0.229 rev/min) in [rad/s]."""
    return np.asarray(units, dtype=float) * DXL_VELOCITY_UNIT_RAD_S


def dynamixel_velocity_limit(model: str, supply_voltage: float = 12.0, derating: float = 0.8) -> float:
    """A velocity limit [rad/s] for an actuator: ``derating`` x no-load speed of ``model``.

    The no-load speed is interpolated linearly between the e-manual's 11.1,
    12.0 and 14.8 V figures (``DXL_NO_LOAD_RPM``); a servo under load runs
    slower, hence the derating (0 < derating <= 1).
    """
    key = model.upper()
    if key not in DXL_NO_LOAD_RPM:
        raise CurvesError(did_you_mean("Dynamixel model", model, DXL_NO_LOAD_RPM))
    if not _DXL_VOLTAGES[0] <= supply_voltage <= _DXL_VOLTAGES[-1]:
        raise CurvesError(
            f"Dynamixel {key}: supply voltage {supply_voltage} V outside the rated "
            f"{_DXL_VOLTAGES[0]}..{_DXL_VOLTAGES[-1]} V"
        )
    if not 0.0 < derating <= 1.0:
        raise CurvesError(f"derating must lie in (0, 1], got {derating}")
    rpm = float(np.interp(supply_voltage, _DXL_VOLTAGES, DXL_NO_LOAD_RPM[key]))
    return derating * rpm * 2.0 * math.pi / 60.0


def _is_number(x) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)


def whole_ticks(x, what: str) -> int:
    """``x`` as an int tick count within ``DXL_REGISTER_RANGE``, or CurvesError naming ``what``."""
    lo, hi = DXL_REGISTER_RANGE
    if not (_is_number(x) and math.isfinite(x) and x == int(x) and lo <= x <= hi):
        raise CurvesError(f"{what} must be a whole number of ticks in {lo}..{hi}, got {x!r}")
    return int(x)


@dataclass(frozen=True)
class DynamixelMotor:
    """How one actuator coordinate maps to a servo's Goal Position.

    zero_offset_ticks: tick value at actuator value 0 (default 2048, the
    centre of one turn). direction: +1 if the actuator's positive direction is
    the servo's counter-clockwise (increasing) direction, else -1.
    metres_per_revolution: for a displacement [m] actuator, the travel per
    servo turn (pinion circumference, lead-screw lead) [m/rev]; None for angles.
    """

    zero_offset_ticks: int = 2048
    direction: int = 1
    metres_per_revolution: float | None = None

    def __post_init__(self):
        zero = whole_ticks(self.zero_offset_ticks, "zero_offset_ticks")
        object.__setattr__(self, "zero_offset_ticks", zero)
        if not _is_number(self.direction) or self.direction not in (1, -1):
            raise CurvesError(f"direction must be +1 or -1, got {self.direction!r}")
        object.__setattr__(self, "direction", int(self.direction))
        mpr = self.metres_per_revolution
        if mpr is not None and not (_is_number(mpr) and math.isfinite(mpr) and mpr > 0):
            raise CurvesError(f"metres_per_revolution must be a positive number, got {mpr!r}")

    def ticks_per_unit(self, unit: str, actuator: str = "?") -> float:
        """Ticks per rad (``unit="rad"``) or per m (``unit="m"``)."""
        if unit == "rad":
            return DXL_TICKS_PER_REV / (2.0 * math.pi)
        if self.metres_per_revolution is None:
            raise CurvesError(
                f"actuator {actuator!r} moves in metres; give its DynamixelMotor a "
                "metres_per_revolution (travel per servo turn) to map it to ticks"
            )
        return DXL_TICKS_PER_REV / self.metres_per_revolution


@dataclass(frozen=True)
class DynamixelSettings:
    """Dynamixel X-series model assumptions for tick exports.

    mode: "position" (Operating Mode 3, one turn, ticks 0..4095),
    "extended_position" (mode 4, multi-turn, -1048575..1048575) or "auto"
    (decided per curves by :func:`resolve_mode` when an export writes them).
    tick_range: (min, max) allowed ticks, e.g. the servo's Min/Max Position
    Limit(52/48); None for the mode's full range; needs a mode other than
    "auto". Ticks outside it are a ``"tick_range"`` violation.
    motors: per-actuator :class:`DynamixelMotor` by actuator name; the others
    use ``default_motor``.
    """

    mode: str = "position"
    tick_range: tuple[int, int] | None = None
    motors: Mapping[str, DynamixelMotor] = field(default_factory=dict)
    default_motor: DynamixelMotor = field(default_factory=DynamixelMotor)

    def __post_init__(self):
        if not isinstance(self.mode, str) or self.mode not in DXL_MODE_CHOICES:
            raise CurvesError(did_you_mean("Dynamixel mode", str(self.mode), DXL_MODE_CHOICES))
        if self.tick_range is not None and self.mode == "auto":
            raise CurvesError(
                f"tick_range {self.tick_range} needs a Dynamixel mode: position or extended_position"
            )
        if self.tick_range is not None:
            if isinstance(self.tick_range, str | bytes) or len(self.tick_range) != 2:
                raise CurvesError(f"tick_range must be (min, max), got {self.tick_range!r}")
            lo, hi = (whole_ticks(v, "tick_range") for v in self.tick_range)
            full = DXL_TICK_RANGES[self.mode]
            if not full[0] <= lo <= hi <= full[1]:
                raise CurvesError(f"tick_range {self.tick_range} must lie within {full} in {self.mode} mode")
            object.__setattr__(self, "tick_range", (lo, hi))

    @classmethod
    def from_mechanism(
        cls, mechanism, mode: str = "position", names: Sequence[str] | None = None, **options
    ) -> "DynamixelSettings":
        """Settings whose motors take each actuator's zero offset, direction and travel
        per turn (:class:`~looprig.core.model.parts.Actuator`). names: the actuators the
        curves hold (default: all); the mechanism's others (motors a retarget's
        ``motors`` made passive) are left out."""
        motors = {
            j.actuator_name: DynamixelMotor(
                j.actuator.zero_offset_ticks, j.actuator.direction, j.actuator.metres_per_revolution
            )
            for j in mechanism.actuated_joints
            if names is None or j.actuator_name in names
        }
        return cls(mode=mode, motors=motors, **options)

    @property
    def ticks_range(self) -> tuple[int, int]:
        """(min, max) allowed Goal Position ticks (mode "auto": none yet, CurvesError)."""
        if self.mode == "auto":
            raise CurvesError("the Dynamixel mode is not decided yet (resolve_mode)")
        return self.tick_range or DXL_TICK_RANGES[self.mode]

    def motors_for(self, names: Sequence[str]) -> tuple[DynamixelMotor, ...]:
        """The motor of each actuator in ``names``; unknown keys in ``motors`` raise."""
        for key in self.motors:
            if key not in names:
                raise CurvesError("Dynamixel motor settings: " + did_you_mean("actuator", key, names))
        return tuple(self.motors.get(n, self.default_motor) for n in names)


def values_to_ticks(
    values: np.ndarray,
    units: Sequence[str],
    motors: Sequence[DynamixelMotor],
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """(F, A) int64 Goal Position ticks of (F, A) values [rad or m], rounded to nearest.

    ``ticks = zero_offset_ticks + direction * rint(value * ticks_per_unit)``,
    so :func:`ticks_to_values` inverts it within half a tick.

    Raises :class:`~looprig.core.curves.actuator_curves.CurvesError` naming the actuator and
    frame if a tick does not fit an int64, rather than wrapping it into a
    garbage number (the exports refuse ticks beyond the servo's 4-byte Goal
    Position register, ``DXL_REGISTER_RANGE``, long before).
    """
    floats = tick_values(values, units, motors, names)
    bad = ~(np.abs(floats) < 2.0**63)
    if bad.any():
        f, a = (int(i) for i in np.argwhere(bad)[0])
        name = names[a] if names else f"#{a}"
        raise CurvesError(
            f"actuator {name!r}: value {float(np.asarray(values)[f, a]):.6g} {units[a]} at frame {f} "
            f"is {floats[f, a]:.6g} ticks, too many to count"
        )
    return floats.astype(np.int64)


def tick_values(
    values: np.ndarray,
    units: Sequence[str],
    motors: Sequence[DynamixelMotor],
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """(F, A) Goal Position ticks of (F, A) values [rad or m] as floats, unbounded.

    Whole numbers (exact up to 2**53), ``±inf`` where the product overflows:
    what :func:`values_to_ticks` would give without the register check, for
    range checks of values that may be huge.
    """
    values = np.asarray(values, dtype=float)
    names = names or [f"#{a}" for a in range(values.shape[1])]
    scale = np.array([m.ticks_per_unit(u, n) for m, u, n in zip(motors, units, names, strict=True)])
    zero = np.array([m.zero_offset_ticks for m in motors], dtype=float)
    sign = np.array([m.direction for m in motors], dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        return zero + sign * np.rint(values * scale)


def ticks_to_values(
    ticks: np.ndarray,
    units: Sequence[str],
    motors: Sequence[DynamixelMotor],
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """(F, A) values [rad or m] of (F, A) Goal Position ticks; inverts :func:`values_to_ticks`."""
    ticks = np.asarray(ticks)
    names = names or [f"#{a}" for a in range(ticks.shape[1])]
    scale = np.array([m.ticks_per_unit(u, n) for m, u, n in zip(motors, units, names, strict=True)])
    zero = np.array([m.zero_offset_ticks for m in motors], dtype=float)
    sign = np.array([m.direction for m in motors], dtype=float)
    return sign * (ticks - zero) / scale


def to_ticks(curves: ActuatorCurves, settings: DynamixelSettings | None = None) -> np.ndarray:
    """(F, A) int64 Goal Position ticks of ``curves`` (see :func:`values_to_ticks`)."""
    settings = settings or DynamixelSettings()
    motors = settings.motors_for(curves.names)
    return values_to_ticks(curves.values, curves.units, motors, curves.names)


def resolve_mode(
    curves: ActuatorCurves, settings: DynamixelSettings, ticks: np.ndarray
) -> tuple[DynamixelSettings, str | None]:
    """(``settings`` with its mode decided, why extended position mode was chosen or None).

    A mode other than "auto" is kept as asked. "auto" is "extended_position" when a
    motor with no range (no finite lower or upper bound) has (F, A) ``ticks`` outside
    position mode's single turn (0..4095), else "position": a motor with a range keeps
    position mode, whose Min/Max Position Limit the servo enforces, and its ticks
    outside the turn are violations.
    """
    if settings.mode != "auto":
        return settings, None
    lo, hi = DXL_TICK_RANGES["position"]
    free = ~(np.isfinite(curves.lower) & np.isfinite(curves.upper))
    low, high = np.min(ticks, axis=0), np.max(ticks, axis=0)
    turning = np.flatnonzero(free & ((low < lo) | (high > hi)))
    if not len(turning):
        return replace(settings, mode="position"), None
    why = ", ".join(
        f"{curves.names[a]!r} has no range and turns {(high[a] - low[a]) / DXL_TICKS_PER_REV:.3g} "
        f"revolutions (ticks {low[a]:.0f}..{high[a]:.0f})"
        for a in turning
    )
    return replace(settings, mode="extended_position"), (
        f"extended position mode (Operating Mode 4, ticks {DXL_TICK_RANGES['extended_position'][0]}.."
        f"{DXL_TICK_RANGES['extended_position'][1]}): {why}"
    )


def tick_range_violations(
    curves: ActuatorCurves, ticks: np.ndarray, settings: DynamixelSettings
) -> list[Violation]:
    """``"tick_range"`` violations (unit "tick") of (F, A) ``ticks`` against the allowed range.

    ``ticks`` may be floats from :func:`tick_values`; peaks beyond the float
    range are recorded as the largest finite float.
    """
    lo, hi = settings.ticks_range
    big = np.finfo(float).max
    out: list[Violation] = []
    for a, name in enumerate(curves.names):
        k = np.clip(np.asarray(ticks[:, a], dtype=float), -big, big)
        over, under = k - hi, lo - k
        excess = np.maximum(over, under)
        limits = np.where(over >= under, float(hi), float(lo))
        out += violations_from_excess(name, "tick_range", curves.times, k, excess, limits, "tick")
    return out


def velocity_raw(curves: ActuatorCurves, motors: Sequence[DynamixelMotor]) -> tuple[list, list]:
    """Per actuator: velocity limit (floor) and peak |velocity| (ceil) in 0.229 rpm units."""
    peaks = np.max(np.abs(curves.velocities()), axis=0) if curves.n_frames > 1 else None
    limit_raw, peak_raw = [], []
    for a, name in enumerate(curves.names):
        # servo shaft rad per actuator unit (1 for angles, 2 pi / metres_per_revolution for m)
        rad_per_unit = motors[a].ticks_per_unit(curves.units[a], name) * (2.0 * math.pi / DXL_TICKS_PER_REV)
        limit = curves.velocity_limit[a]
        limit_raw.append(
            math.floor(rad_s_to_dxl_velocity(limit * rad_per_unit)) if np.isfinite(limit) else None
        )
        peak = None if peaks is None else float(rad_s_to_dxl_velocity(peaks[a] * rad_per_unit))
        peak_raw.append(math.ceil(peak - 1e-9) if peak is not None and math.isfinite(peak) else None)
    return limit_raw, peak_raw
