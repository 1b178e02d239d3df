"""The servos a live link drives, how it streams to them, and the limits its goals keep."""

import math
from dataclasses import dataclass

import numpy as np

from ..core import ActuatorCurves
from ..core.export import DynamixelMotor, DynamixelSettings, values_to_ticks
from ..core.export.dynamixel import DXL_OPERATING_MODES, DXL_TICK_RANGES, DXL_TICKS_PER_REV
from ..play import STOP_ACTIONS
from ..servo_bus import PlayError


class PortLostError(PlayError):
    """The servo port went away while streaming (one line: the port, what was sent)."""


@dataclass(frozen=True)
class LiveSettings:
    """How the link streams.

    rate: packets per second [Hz] (the issue's 50-100 Hz; one period is 1/rate);
    on_stop: what the servos do after :meth:`LiveLink.stop` or an error, ``"hold"``
    (the last goal, torque on) or ``"torque-off"``; default_velocity,
    default_acceleration: the limits of a motor that has none [rad/s, rad/s^2 of the
    servo shaft] (the velocity is :data:`looprig.play.DEFAULT_HOMING_SPEED`'s);
    jerk: the jerk limit [rad/s^3 of the servo shaft], ``inf`` for moves limited in
    velocity and acceleration only (what the curves' limits state); realtime: ask the OS to
    run the link's thread before ordinary processes (Linux ``SCHED_FIFO`` at
    :data:`REALTIME_PRIORITY`, what a servo loop on a busy machine needs to keep its period;
    allowed to root or under an ``rtprio`` limit, refused elsewhere: the thread then runs as
    any other, :attr:`LiveStatus.realtime` says which). By default the kernel keeps 5% of
    each second for ordinary processes whatever the link does (``sched_rt_runtime_us``).
    """

    rate: float = 100.0
    on_stop: str = "hold"
    default_velocity: float = 0.5
    default_acceleration: float = 5.0
    jerk: float = math.inf
    realtime: bool = True

    def __post_init__(self):
        if not (math.isfinite(self.rate) and 1.0 <= self.rate <= 1000.0):
            raise PlayError(f"live rate must be 1..1000 Hz, got {self.rate}")
        if self.on_stop not in STOP_ACTIONS:
            raise PlayError(f"on_stop must be one of {STOP_ACTIONS}, got {self.on_stop!r}")
        for name in ("default_velocity", "default_acceleration", "jerk"):
            if not getattr(self, name) > 0:
                raise PlayError(f"live {name} must be positive, got {getattr(self, name)}")


@dataclass(frozen=True)
class LiveMotors:
    """The servos a link drives, A of them: ``names``, bus ``ids``, ``units`` ("rad" or "m"),
    servo ``motors`` (zero offset, direction); ``lower``/``upper`` (A,) [unit] the range the
    targets are clamped to (the actuator's range within the servo's ticks); ``velocity``
    (A,) [unit/s] and ``acceleration`` (A,) [unit/s^2] the limits every packet keeps;
    ``mode`` the Operating Mode(11) the servos must be in; ``defaulted``: the motors whose
    velocity or acceleration limit came from :class:`LiveSettings`."""

    names: tuple[str, ...]
    ids: tuple[int, ...]
    units: tuple[str, ...]
    motors: tuple[DynamixelMotor, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    mode: int
    defaulted: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        curves: ActuatorCurves,
        dynamixel: DynamixelSettings | None = None,
        settings: LiveSettings | None = None,
        ids: dict[str, int] | None = None,
    ) -> "LiveMotors":
        """From the names, units, limits and hardware ids of ``curves`` (values unused);
        ``ids`` (name -> servo id) overrides the hardware ids."""
        from ..play import _servo_id

        settings = settings or LiveSettings()
        dynamixel = dynamixel or DynamixelSettings()
        mode = dynamixel.mode
        if mode == "auto":  # one turn unless a motor's range does not fit in it
            span = np.asarray(curves.upper - curves.lower, float)
            mode = "position" if np.all(span < 2 * math.pi) else "extended_position"
        names = tuple(curves.names)
        given = ids or {}
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise PlayError(f"live link servo ids: no motor {unknown[0]!r}; motors are {', '.join(names)}")
        servo_ids = tuple(
            _servo_id("live link", n, given.get(n, h))
            for n, h in zip(names, curves.hardware_ids, strict=True)
        )
        if len(set(servo_ids)) != len(servo_ids):
            raise PlayError(f"live link: two motors share a servo id ({list(servo_ids)})")
        motors = dynamixel.motors_for(names)
        per_unit = np.array(
            [m.ticks_per_unit(u, n) for m, u, n in zip(motors, curves.units, names, strict=True)]
        )
        shaft = per_unit * 2.0 * math.pi / DXL_TICKS_PER_REV  # servo shaft rad per unit
        velocity = np.asarray(curves.velocity_limit, float) * np.ones(len(names))
        acceleration = np.asarray(curves.acceleration_limit, float) * np.ones(len(names))
        defaulted = tuple(
            n
            for n, v, a in zip(names, velocity, acceleration, strict=True)
            if not (np.isfinite(v) and np.isfinite(a))
        )
        velocity = np.where(np.isfinite(velocity), velocity, settings.default_velocity / shaft)
        acceleration = np.where(
            np.isfinite(acceleration), acceleration, settings.default_acceleration / shaft
        )
        # the servo's tick range, in actuator units, bounds the actuator's own range
        lo, hi = dynamixel.tick_range or DXL_TICK_RANGES[mode]
        zero = np.array([m.zero_offset_ticks for m in motors], float)
        sign = np.array([m.direction for m in motors], float)
        ends = np.sort(np.stack([sign * (lo - zero), sign * (hi - zero)]) / per_unit, axis=0)
        lower = np.maximum(np.asarray(curves.lower, float) * np.ones(len(names)), ends[0])
        upper = np.minimum(np.asarray(curves.upper, float) * np.ones(len(names)), ends[1])
        return cls(
            names,
            servo_ids,
            tuple(curves.units),
            motors,
            lower,
            upper,
            velocity,
            acceleration,
            DXL_OPERATING_MODES[mode],
            defaulted,
        )

    def ticks(self, values: np.ndarray) -> np.ndarray:
        """(A,) Goal Position ticks of (A,) values [unit] (rounded to the nearest tick)."""
        return values_to_ticks(np.asarray(values, float)[None], self.units, self.motors, self.names)[0]

    def values(self, ticks: np.ndarray) -> np.ndarray:
        """(..., A) values [unit] of (..., A) ticks (the inverse of :meth:`ticks`)."""
        from ..core.export import ticks_to_values

        ticks = np.asarray(ticks)
        return ticks_to_values(
            ticks.reshape(-1, len(self.names)), self.units, self.motors, self.names
        ).reshape(ticks.shape)


def sent_violations(motors: LiveMotors, ticks: np.ndarray, rate: float) -> list:
    """The limit violations of goals ``ticks`` (P, A) sent one per 1/``rate`` [Hz]: their
    values checked against ``motors``' range, velocity and acceleration limits as a tick
    file's are (:func:`~looprig.core.export.written_violations`: three-point differences,
    each sample allowed its half-tick rounding)."""
    from ..core.export import WrittenCurves, written_violations

    ticks = np.asarray(ticks)
    curves = ActuatorCurves(
        np.arange(len(ticks)) / rate,
        motors.values(ticks),
        motors.names,
        motors.units,
        motors.lower,
        motors.upper,
        motors.velocity,
        motors.acceleration,
        motors.ids,
    )
    quantum = 1.0 / np.array(
        [m.ticks_per_unit(u, n) for m, u, n in zip(motors.motors, motors.units, motors.names, strict=True)]
    )
    return written_violations(WrittenCurves("looprig-live-packets", curves, quantum))
