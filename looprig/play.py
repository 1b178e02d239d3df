"""Play baked curves on Dynamixel servos (Protocol 2.0) through the official ``dynamixel-sdk``.

The bus itself (retries, the servo check) is :mod:`looprig.servo_bus`.

:func:`load_plan` reads a curves file (a Dynamixel tick export, or a curves
CSV/JSON mapped with the default servo model) and re-checks every limit,
position, velocity, acceleration and the servo's tick range, **before any
packet is sent**: a curve that breaks one is refused. :func:`play` then

1. opens the port, pings every servo and checks its model (an X-series servo,
   :data:`~looprig.servo_bus.X_SERIES_MODELS`) and Operating Mode(11) against the file's mode;
2. switches the torque on and reads the present positions;
3. homes: a cosine ramp from the present position to the first sample, sent at
   the curves' rate, whose peak speed is ``homing_fraction`` of each servo's
   velocity limit (:data:`DEFAULT_HOMING_SPEED` where there is none), then holds
   the first sample for ``settle`` seconds;
4. streams one Goal Position(116) sync write per sample at the curves' rate and
   reads Present Position(132) back by sync read when the frame leaves time (with
   ``record=True``: after every frame's goal);
5. stops: at the end, on Ctrl-C or on any error the servos **hold** the last
   goal sent, torque on (``on_stop="hold"``, the default: a robot arm does not
   drop), or have their torque switched off (``on_stop="torque-off"``).

The tracking report gives per servo the lag of the present position behind the
goal and the error once that lag is removed. :func:`recorded_curves` turns a
recording's read-back into curves (the asked curves' times, names, units and
limits; ticks converted back to rad or m as the player converts them to ticks)
and :func:`write_record` writes them as a looprig curves CSV or JSON.
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core import ActuatorCurves
from .core.export import DynamixelMotor
from .servo_bus import DynamixelBus, PlayError, check_servos, retried

#: Homing speed where an actuator has no velocity limit [rad/s of the servo shaft].
DEFAULT_HOMING_SPEED = 0.5
STOP_ACTIONS = ("hold", "torque-off")


@dataclass
class PlayPlan:
    """What :func:`play` sends: ``ticks`` (F, A) Goal Positions at ``rate`` [Hz] to servo
    ``ids`` (A,); ``max_speed`` (A,) [ticks/s] bounds the homing ramp; ``mode`` is the
    Operating Mode(11) the servos must be in (3 position, 4 extended position)."""

    names: tuple[str, ...]
    ids: tuple[int, ...]
    ticks: np.ndarray
    rate: float
    mode: int
    max_speed: np.ndarray
    ticks_per_unit: np.ndarray
    units: tuple[str, ...]
    #: (A,) the servo model of each actuator (zero offset, direction, ticks per unit).
    motors: tuple[DynamixelMotor, ...]
    #: the asked curves [rad or m] as read from the file (ticks converted back).
    asked: ActuatorCurves


def load_plan(path, homing_fraction: float = 0.25) -> PlayPlan:
    """Read a curves file and re-check its limits; refuses (LimitViolationError) before any I/O."""
    from .core.curves.violations import LimitViolationError, merge_violations
    from .core.export import (
        DXL_OPERATING_MODES,
        DXL_TICKS_PER_REV,
        DynamixelSettings,
        read_written,
        tick_range_violations,
        to_ticks,
        written_violations,
    )

    if not 0.0 < homing_fraction <= 1.0:
        raise PlayError(f"--homing-fraction must lie in (0, 1], got {homing_fraction}")
    written = read_written(path)  # ticks are checked allowing for their rounding (core.export.check)
    curves, violations = written.curves, written_violations(written)
    if written.ticks is None:  # SI curves: mapped with the default servo model
        settings = DynamixelSettings()
        ticks = to_ticks(curves, settings)
        violations = merge_violations(
            violations, tick_range_violations(curves, ticks, settings), order=curves.names
        )
    else:
        settings, ticks = written.dynamixel, written.ticks
    if violations:
        first = "; ".join(v.describe() for v in violations[:3])
        more = f" (+{len(violations) - 3} more)" if len(violations) > 3 else ""
        raise LimitViolationError(
            f"{path}: refusing to play: {len(violations)} limit violation(s): {first}{more}", violations
        )
    rate = curves.rate_hz
    if rate is None or curves.n_frames < 2:
        raise PlayError(f"{path}: play needs samples at a uniform rate (at least two)")
    ids = tuple(_servo_id(path, n, h) for n, h in zip(curves.names, curves.hardware_ids, strict=True))
    if len(set(ids)) != len(ids):
        raise PlayError(f"{path}: two actuators share a servo id ({list(ids)})")
    motors = settings.motors_for(curves.names)
    per_unit = np.array(
        [m.ticks_per_unit(u, n) for m, u, n in zip(motors, curves.units, curves.names, strict=True)]
    )
    shaft = per_unit * 2.0 * math.pi / DXL_TICKS_PER_REV  # servo shaft rad per actuator unit
    limit = np.where(np.isfinite(curves.velocity_limit), curves.velocity_limit * per_unit, np.inf)
    default = DEFAULT_HOMING_SPEED * per_unit / shaft
    max_speed = homing_fraction * np.where(np.isfinite(limit), limit, default)
    return PlayPlan(
        tuple(curves.names),
        ids,
        np.asarray(ticks, dtype=np.int64),
        float(rate),
        DXL_OPERATING_MODES[settings.mode],
        max_speed,
        per_unit,
        tuple(curves.units),
        motors,
        curves,
    )


def _servo_id(path, name: str, hardware_id) -> int:
    """A servo id (0..252) from an actuator's hardware id (an integer or a string of digits)."""
    text = str(hardware_id).strip()
    if hardware_id is None or not text.isdecimal() or not 0 <= int(text) <= 252:
        raise PlayError(
            f"{path}: actuator {name!r}: hardware id {hardware_id!r} is not a Dynamixel id (0..252)"
        )
    return int(text)


def homing_ramp(start: np.ndarray, goal: np.ndarray, max_speed: np.ndarray, rate: float) -> np.ndarray:
    """(H, A) ticks from ``start`` to ``goal`` (both (A,)), a cosine ease whose peak speed
    (pi/2 x distance / duration) stays within ``max_speed`` (A,) [ticks/s]; ends at ``goal``."""
    distance = np.abs(goal - start).astype(float)
    duration = float(np.max(0.5 * math.pi * distance / max_speed, initial=0.0))
    frames = max(1, math.ceil(duration * rate))
    s = np.arange(1, frames + 1) / frames
    ease = 0.5 * (1.0 - np.cos(math.pi * s))
    return np.rint(start + np.outer(ease, goal - start)).astype(np.int64)


@dataclass
class TrackingReport:
    """Per servo: ``lag_s`` [s] of the present position behind the goal, ``rms_error`` and
    ``max_error`` [actuator unit] once the lag is removed; ``samples`` read back (``missed_samples``
    read-backs got no answer); ``late_frames``: frames sent after their time; ``read_frames`` (S,)
    the frame after whose goal each read-back came and ``present_ticks`` (S, A) what it read."""

    names: tuple[str, ...]
    units: tuple[str, ...]
    lag_s: np.ndarray
    rms_error: np.ndarray
    max_error: np.ndarray
    samples: int
    missed_samples: int
    frames_sent: int
    late_frames: int
    read_frames: np.ndarray
    present_ticks: np.ndarray
    #: [s] when the first frame's packet left, on the playback clock: with a sound
    #: (:class:`~looprig.audio.SoundClock`), after the DAC time of the sound's first sample
    first_packet_s: float = math.nan


def tracking_report(plan: PlayPlan, read: list, late: int, missed: int = 0) -> TrackingReport:
    """Lag by the best whole-frame shift (up to 0.5 s) of the read-back against the goals sent."""
    a = len(plan.ids)
    lag, rms, worst = np.zeros(a), np.full(a, np.nan), np.full(a, np.nan)
    if read:
        frames = np.array([f for f, _ in read])
        present = np.array([p for _, p in read], dtype=float)
        for k in range(a):
            best = None
            for shift in range(round(0.5 * plan.rate) + 1):
                used = frames >= shift
                if used.sum() < max(2, len(frames) // 2):
                    break
                error = (present[used, k] - plan.ticks[frames[used] - shift, k]) / plan.ticks_per_unit[k]
                score = float(np.sqrt(np.mean(error**2)))
                if best is None or score < best[0]:
                    best = (score, shift, float(np.abs(error).max()))
            rms[k], lag[k], worst[k] = best[0], best[1] / plan.rate, best[2]
    frames = np.array([f for f, _ in read], dtype=np.int64)
    present = np.array([p for _, p in read], dtype=np.int64).reshape(len(read), a)
    return TrackingReport(
        plan.names, plan.units, lag, rms, worst, len(read), missed, len(plan.ticks), late, frames, present
    )


def recorded_curves(plan: PlayPlan, report: TrackingReport) -> ActuatorCurves:
    """The present positions read after every frame's goal as curves: (F, A) values [rad or m]
    at the asked times [s], with the asked names, units, limits and hardware ids.

    Ticks become values by :func:`~looprig.core.export.ticks_to_values` with each servo's
    model (the inverse of the conversion that made the goals). Raises :class:`PlayError`
    when a frame has no read-back (a lost status packet): a recording has one row per frame.
    """
    from .core.export import ticks_to_values

    asked, frames = plan.asked, len(plan.ticks)
    got = set(report.read_frames.tolist())
    lost = [f for f in range(frames) if f not in got]
    if lost:
        raise PlayError(
            f"{len(lost)} of {frames} frames got no Present Position(132) read-back "
            f"(first: frame {lost[0]}); the recording is incomplete"
        )
    values = ticks_to_values(report.present_ticks, plan.units, plan.motors, plan.names)
    return ActuatorCurves(
        asked.times,
        values,
        asked.names,
        asked.units,
        asked.lower,
        asked.upper,
        asked.velocity_limit,
        asked.acceleration_limit,
        asked.hardware_ids,
    )


#: Record file suffixes and the core.export writer of each (looprig curves, SI units).
RECORD_WRITERS = {".csv": "write_csv", ".json": "write_json"}


def check_record_path(path, curves_path) -> None:
    """Refuse, before any I/O, a record path that is not a .csv/.json, cannot be written
    (:func:`~looprig.core.export.files.check_output`) or is the curves file being played."""
    from .core.export.files import check_output

    if Path(path).suffix.lower() not in RECORD_WRITERS:
        raise PlayError(f"{path}: --record writes a looprig curves .csv or .json, not {Path(path).suffix!r}")
    check_output(path, inputs=[curves_path])


def write_record(plan: PlayPlan, report: TrackingReport, path) -> list:
    """Write :func:`recorded_curves` to ``path`` (.csv or .json) and return the limit
    violations of the recorded motion, which the file records (a measurement is never refused)."""
    from .core import export

    writer = RECORD_WRITERS.get(Path(path).suffix.lower())
    if writer is None:
        raise PlayError(f"{path}: --record writes a looprig curves .csv or .json")
    try:
        curves = recorded_curves(plan, report)
    except PlayError as error:
        raise PlayError(f"{path}: not written: {error}") from None
    return getattr(export, writer)(curves, path, allow_violations=True)


def play(
    plan: PlayPlan,
    port: str,
    baud: int = 57600,
    on_stop: str = "hold",
    settle: float = 0.25,
    progress: Callable[[int, int], None] | None = None,
    record: bool = False,
    sound=None,
) -> TrackingReport:
    """Home, stream and stop as the module docstring says; Ctrl-C stops cleanly and re-raises.

    With ``record``, Present Position(132) is read after every frame's goal (not only when
    the frame leaves time), so :func:`recorded_curves` has one row per frame. With ``sound``
    (a :class:`~looprig.audio.SoundClock` holding the sound laid on the clip's timeline from
    its first frame), the sound starts once the servos are home and its device's clock times
    the frames: frame f leaves when the sound has played f / rate seconds."""
    if on_stop not in STOP_ACTIONS:
        raise PlayError(f"on_stop must be one of {STOP_ACTIONS}, got {on_stop!r}")
    bus = DynamixelBus(port, baud, plan.ids)
    try:
        check_servos(bus, plan.names, plan.mode)
        bus.torque(True)
        ramp = homing_ramp(retried(bus.present), plan.ticks[0], plan.max_speed, plan.rate)
        hold = np.repeat(plan.ticks[:1], max(1, round(settle * plan.rate)), axis=0)
        _stream(bus, np.concatenate([ramp, hold]), plan.rate, "never")
        readback = "every" if record else "spare"
        clock = None
        if sound is not None:
            sound.start()
            clock = sound.now
        read, late, missed, first = _stream(bus, plan.ticks, plan.rate, readback, progress, clock)
    except BaseException:
        _stop(bus, on_stop, sound)
        raise
    _stop(bus, on_stop, sound)
    report = tracking_report(plan, read, late, missed)
    report.first_packet_s = first
    return report


def _stream(bus, ticks, rate, readback: str, progress=None, clock=None):
    """Send ``ticks`` (F, A) one frame per 1/rate [Hz]; read back ``readback`` = "never",
    "spare" (when the frame leaves half a period) or "every" frame (a lost status packet
    tried again, up to three reads). ``clock``: the time [s] frame f is sent at f / rate of
    (default: ``time.perf_counter`` from now). Returns the read-backs, the late frames, the
    missed read-backs and the clock's time when the first packet left."""
    period = 1.0 / rate
    clock, start = (time.perf_counter, time.perf_counter()) if clock is None else (clock, 0.0)
    read, late, missed, first = [], 0, 0, math.nan
    for f, frame in enumerate(ticks):
        wait = start + f * period - clock()
        if wait > 0:
            time.sleep(wait)
        elif wait < -period:
            late += 1
        bus.send_goals(frame)
        if f == 0:
            first = clock()
        spare = clock() + 0.5 * period < start + (f + 1) * period
        if readback == "every" or (readback == "spare" and spare):
            try:
                read.append((f, retried(bus.present) if readback == "every" else bus.present()))
            except PlayError:  # a lost status packet costs one sample of the report, not the clip
                missed += 1
        if progress is not None and (f % 50 == 0 or f == len(ticks) - 1):
            progress(f + 1, len(ticks))
    return read, late, missed, first


def _stop(bus: DynamixelBus, on_stop: str, sound=None) -> None:
    """Leave the servos in the documented state (best effort: the bus may be what failed)."""
    if sound is not None:
        sound.close()
    try:
        if on_stop == "torque-off":
            # a Ctrl-C inside an SDK call leaves its transaction open: free the port first
            bus.port.is_using = False
            bus.port.clearPort()
            bus.torque(False)
    finally:
        bus.close()


def dry_run_lines(plan: PlayPlan, port: str, baud: int, on_stop: str) -> list[str]:
    """What :func:`play` would send, as lines for people (nothing is opened)."""
    ids = ", ".join(f"{i} ({n})" for i, n in zip(plan.ids, plan.names, strict=True))
    seconds = (len(plan.ticks) - 1) / plan.rate
    lines = [
        f"port {port} at {baud} baud, Protocol 2.0: ping servos {ids}; require an X-series model "
        f"and Operating Mode(11) = {plan.mode}",
        "Torque Enable(64) = 1 on every servo; read Present Position(132)",
        "homing: cosine ramp from the present position to the first sample, peak speed "
        + ", ".join(f"{s:.0f}" for s in plan.max_speed)
        + " ticks/s",
        f"{len(plan.ticks)} sync writes of Goal Position(116) at {plan.rate:g} Hz over {seconds:.3f} s:",
    ]
    shown = list(range(min(3, len(plan.ticks)))) + [len(plan.ticks) - 1]
    for f in sorted(set(shown)):
        lines.append(f"  t={f / plan.rate:8.4f} s  goal ticks {' '.join(str(int(v)) for v in plan.ticks[f])}")
    lines.append("stop: " + ("hold the last goal, torque on" if on_stop == "hold" else "torque off"))
    return lines
