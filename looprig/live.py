"""Live link: the robot's motor values streamed to Dynamixel servos while the animator plays or scrubs.

One module although long: the link's thread, its limited moves and the frame sources
it reads share one timing and status record.

A :class:`LiveLink` owns one servo bus (``dynamixel-sdk``, Protocol 2.0, through
:class:`~looprig.play.DynamixelBus`) and one thread that sends a Goal Position(116)
sync write every period (``LiveSettings.rate``, 50-100 Hz). Each period it

1. takes the frame the host wants (:meth:`LiveLink.seek` while scrubbing, or frames
   advancing on their own clock after :meth:`LiveLink.play`);
2. asks its *source* for that frame's motor values (A,) [rad | m]: the baked or
   retargeted curves (:func:`curve_source`), or the per-frame solver on the frame's
   targets (:class:`FrameSolver`), solved in this thread when the frame changes;
3. moves every motor one period along an online time-optimal trajectory towards those
   values within its velocity and acceleration limits (``ruckig``), so a jump of the
   timeline becomes a limited move, never a snap; a frame one or two after the last is
   reached at the clip's speed, kept until the next frame is overdue (a host showing
   fewer frames a second than the link sends packets), a jump or a pause ends at rest;
4. sends the ticks and records how long the period's work took and the lag: the time
   the servos still need to reach the wanted pose (0 while they follow it).

Before the first packet the servos are pinged, their models and Operating Mode(11)
checked (:func:`~looprig.play.check_servos`) and their present positions read: the
first move starts from where they are. :meth:`LiveLink.stop` wakes the thread at once;
it leaves the servos holding the last goal (``on_stop="hold"``) or switches their
torque off (``"torque-off"``) before it returns, within one period. A port that
disappears mid-stream (a USB cable pulled) ends the stream with a :class:`PortLostError`
naming the port and what was sent.

Why ``ruckig`` (the ``live`` extra): it computes, online and in microseconds, the
time-optimal move from the current position *and velocity* to a new target under
velocity, acceleration (and, if asked, jerk) limits, for all motors synchronised; a
hand-written trapezoid would have to handle targets that change mid-move, a
non-zero start velocity and braking, which is exactly what it is tested for.
"""

import gc
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .core import ActuatorCurves, LooprigError
from .core.export import DynamixelMotor, DynamixelSettings, values_to_ticks
from .core.export.dynamixel import DXL_OPERATING_MODES, DXL_TICK_RANGES, DXL_TICKS_PER_REV
from .play import STOP_ACTIONS, DynamixelBus, PlayError, _retried, check_servos

#: A source: (frame, payload) -> (A,) motor values [rad | m] in :class:`LiveMotors` order.
Source = Callable[[float, object], np.ndarray]


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
        from .play import _servo_id

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
        from .core.export import ticks_to_values

        ticks = np.asarray(ticks)
        return ticks_to_values(
            ticks.reshape(-1, len(self.names)), self.units, self.motors, self.names
        ).reshape(ticks.shape)


def sent_violations(motors: LiveMotors, ticks: np.ndarray, rate: float) -> list:
    """The limit violations of goals ``ticks`` (P, A) sent one per 1/``rate`` [Hz]: their
    values checked against ``motors``' range, velocity and acceleration limits as a tick
    file's are (:func:`~looprig.core.export.written_violations`: three-point differences,
    each sample allowed its half-tick rounding)."""
    from .core.export import WrittenCurves, written_violations

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


def curve_source(curves: ActuatorCurves, frame_start: float = 0.0, fps: float | None = None) -> Source:
    """A source reading ``curves`` (linear between samples, held past the ends): frame f is
    time ``times[0] + (f - frame_start) / fps`` [s] (``fps`` default: the curves' own rate, so
    frame f is sample f); the payload is ignored."""
    times, values = np.asarray(curves.times, float), np.asarray(curves.values, float)
    rate = fps or curves.rate_hz or 1.0 / float(np.median(np.diff(times)))

    def values_at(frame: float, payload=None) -> np.ndarray:
        t = times[0] + (frame - frame_start) / rate
        return np.array([np.interp(t, times, values[:, a]) for a in range(values.shape[1])])

    return values_at


class FrameSolver:
    """The per-frame solver (:func:`~looprig.core.solve_ik`) as a live source: a frame's
    targets -> motor values (A,) [rad | m] in ``motors`` order.

    Built once from the robot and a mapping as a retarget builds them (motors, limits,
    welded bodies merged, the mapping's start and held motors), without the terms that
    compare a frame with the previous one (a scrub does not follow the clip's order: the
    link's limited moves keep the servos within their limits). ``samples``: the clip's
    tracks, whose frames the source solves when the payload is None; otherwise the payload
    is the frame's :class:`~looprig.core.IKTargets` (a host that samples its own scene).
    Frame f is the clip's sample ``round(f - frame_start)`` (clamped to the clip).

    With a clip, the first call warms up (:meth:`warm_up`: every frame solved once, in
    order, its state kept as the frame's seed), so each later solve of a frame starts from
    its seed whatever frame came before (a 90-frame jump as a next frame): on the clip's
    own targets it converges where it starts, on a host's edited ones in a few
    iterations (3-4 on Reachy Mini's head moved 2-10 mm); each converged solve becomes the
    frame's new seed. Without a clip, the first frame is solved to full accuracy from the
    start pose (:func:`~looprig.core.solvers.start.solve_first_frame`), every later one
    warm-started from the previous answer.
    """

    def __init__(self, mechanism, mapping, samples=None, frame_start: float = 0.0):
        from .core.export import DynamixelSettings as _Settings
        from .core.model.rigid import RigidGroups
        from .core.retarget.problem import build_problem, with_motors
        from .core.retarget.targets import held_values, target_arrays
        from .core.solvers.start import start_state

        mapping = mapping.named_for(mechanism)
        groups = RigidGroups(mapping.limited(with_motors(mechanism, mapping.motors)))
        self.mechanism, self.mapping = groups.solver, mapping
        self.state = start_state(self.mechanism, mapping.start, None)
        held = held_values(self.mechanism, mapping, self.state)
        self.problem = build_problem(self.mechanism, mapping, first_frame=True, held=held)
        self.actuators = self.problem.readout.read(self.state)
        self.curves = ActuatorCurves.from_mechanism(
            self.mechanism, np.tile(self.actuators, (2, 1)), mapping.rate
        )
        self.dynamixel = _Settings.from_mechanism(self.mechanism)
        self.frame_start = float(frame_start)
        self.first = True
        self.targets = None
        self.seeds: np.ndarray | None = None  # (F, n, 7) each clip frame's state, after warm_up
        self.seed_actuators: np.ndarray | None = None  # (F, A) [rad | m] their motor values
        if samples is not None:
            samples = samples.resampled(mapping.rate)
            self.targets = target_arrays(mapping, samples)

    def targets_of(self, samples):
        """The :class:`~looprig.core.IKTargets` of the first frame of ``samples``
        (:class:`~looprig.core.retarget.TrackSamples`, e.g. a host's scene read at its frame)."""
        from .core.retarget.targets import target_arrays

        return self._frame_targets(target_arrays(self.mapping, samples), 0)

    @staticmethod
    def _frame_targets(arrays, f: int):
        """Sample ``f``'s :class:`~looprig.core.IKTargets` of (positions, rotations, com) arrays."""
        from .core import IKTargets

        positions, rotations, com = arrays
        return IKTargets(positions[f], rotations[f], None if com is None else com[f])

    @property
    def frames(self) -> int:
        """Frames of the clip the solver was given (0 without one)."""
        return 0 if self.targets is None else len(self.targets[0])

    def warm_up(self) -> None:
        """Solve the clip's frames in order (the first to full accuracy from the start pose,
        each later one from the one before) and keep each one's state and motor values as
        its seed; with the mapping's solver settings about 2 ms a frame on Reachy Mini (a
        10 s clip at 100 Hz: 2 s). Once; without a clip, nothing to do."""
        from .core import solve_ik
        from .core.maths.linalg import single_threaded_blas
        from .core.solvers.start import solve_first_frame

        if self.seeds is not None or self.targets is None:
            return
        seeds = np.empty((self.frames, *self.state.shape))
        actuators = np.empty((self.frames, len(self.actuators)))
        with single_threaded_blas():
            for f in range(self.frames):
                targets = self._frame_targets(self.targets, f)
                if f == 0:
                    result = solve_first_frame(
                        self.problem, targets, self.state, self.mapping.reach_tolerance
                    )
                else:
                    result = solve_ik(
                        self.problem, targets, seeds[f - 1], previous_actuators=actuators[f - 1]
                    )
                seeds[f], actuators[f] = result.state, result.actuators
        self.seeds, self.seed_actuators, self.first = seeds, actuators, False

    def __call__(self, frame: float, payload=None) -> np.ndarray:
        from .core import solve_ik
        from .core.maths.linalg import single_threaded_blas
        from .core.solvers.start import solve_first_frame

        self.warm_up()
        f = int(np.clip(round(frame - self.frame_start), 0, max(self.frames - 1, 0)))
        if payload is None:
            if self.targets is None:
                raise LooprigError("the live solver has no clip: give each frame's targets")
            payload = self._frame_targets(self.targets, f)
        with single_threaded_blas():
            if self.seeds is not None:
                result = solve_ik(
                    self.problem, payload, self.seeds[f], previous_actuators=self.seed_actuators[f]
                )
                if result.converged:
                    self.seeds[f], self.seed_actuators[f] = result.state, result.actuators
            elif self.first:
                result = solve_first_frame(self.problem, payload, self.state, self.mapping.reach_tolerance)
                self.first = False
            else:
                result = solve_ik(self.problem, payload, self.state, previous_actuators=self.actuators)
        self.state, self.actuators = result.state, result.actuators
        return result.actuators


@dataclass
class LiveStatus:
    """What the link is doing, for a panel or a console line: ``frame`` wanted; ``lag_s`` [s]
    the time the servos still need to reach its pose (0 while they follow it); ``packets``
    sent; ``late`` periods whose work overran the period; ``last_ms``, ``max_ms`` [ms] one
    period's work (source, move, packet); ``running``; ``error``: why it stopped, if it failed;
    ``at_rest``: the servos' goals are on the frame's pose and not moving; ``realtime``: the
    thread got the real-time scheduling :attr:`LiveSettings.realtime` asks for."""

    frame: float = 0.0
    lag_s: float = 0.0
    packets: int = 0
    late: int = 0
    last_ms: float = 0.0
    max_ms: float = 0.0
    running: bool = False
    error: str = ""
    at_rest: bool = False
    realtime: bool = False


@dataclass
class LiveReport:
    """A finished stream: ``work_s`` (P,) [s] each period's work from its start to its packet
    sent (source + move + send); ``sent`` (P, A) the ticks sent; ``sent_at`` (P,) [s,
    ``time.monotonic``] when each packet left; ``lag_s`` (P,) [s] the lag after each packet
    (:attr:`LiveStatus.lag_s`); ``wanted`` (P, A) [rad | m] the frame's values each packet
    moved towards; ``stop_requested`` / ``stopped`` [s, monotonic] when :meth:`LiveLink.stop`
    was called and when the servos were left as set; ``startup_s`` [s]: the link's
    :meth:`LiveLink.open` before the first packet (:attr:`LiveLink.startup_s`)."""

    period: float
    work_s: np.ndarray
    sent: np.ndarray
    sent_at: np.ndarray
    lag_s: np.ndarray
    wanted: np.ndarray
    stop_requested: float
    stopped: float
    status: LiveStatus = field(default_factory=LiveStatus)
    startup_s: float = math.nan


class PacketLog:
    """Per packet: when it left [s, ``time.monotonic``], the period's work [s], the lag [s],
    the ticks sent (A,) and the values moved towards (A,) [rad | m]; rows of arrays made
    ahead (1024 packets, doubled when full), so a period writes numbers and allocates nothing."""

    def __init__(self, motors: int, capacity: int = 1024):
        self.count = 0
        self.times = np.empty((capacity, 3))  # sent at, work, lag
        self.ticks = np.empty((capacity, motors), np.int64)
        self.wanted = np.empty((capacity, motors))

    def add(self, sent: float, work: float, lag: float, ticks: np.ndarray, wanted: np.ndarray) -> None:
        k = self.count
        if k == len(self.times):
            self.times, self.ticks, self.wanted = (
                np.concatenate([x, np.empty_like(x)]) for x in (self.times, self.ticks, self.wanted)
            )
        self.times[k] = sent, work, lag
        self.ticks[k], self.wanted[k] = ticks, wanted
        self.count = k + 1


class LiveLink:
    """Stream a source's frames to servos within their limits; see the module docstring.

    ``frame_rate`` [frames/s]: the timeline's, to advance frames after :meth:`play` and to
    tell a played step (the next frame or two: the servos follow at the animation's
    speed) from a jump (the move ends at rest). ``last_frame`` bounds playback.
    """

    def __init__(
        self,
        motors: LiveMotors,
        source: Source,
        port: str,
        baud: int = 57600,
        settings: LiveSettings | None = None,
        frame_rate: float = 100.0,
        last_frame: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.motors, self.source, self.port, self.baud = motors, source, port, baud
        self.clock = clock  # [s] the clock played frames follow (a SoundClock's now: the sound's)
        self.settings = settings or LiveSettings()
        self.frame_rate, self.last_frame = float(frame_rate), last_frame
        self.status = LiveStatus()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wanted: tuple[float, object] = (0.0, None)
        self._playing: tuple[float, float] | None = None  # (frame, monotonic start)
        self._thread: threading.Thread | None = None
        self._bus: DynamixelBus | None = None
        self._log = PacketLog(len(motors.names))
        self._stop_requested = math.nan
        self._stopped = math.nan
        self._error: LooprigError | None = None
        self.first_source_s = math.nan  # [s] the source's first call (its warm-up), in :meth:`open`
        self.startup_s = math.nan  # [s] all of :meth:`open`: check, first call, torque, read-back
        self.present_ticks: np.ndarray | None = None  # (A,) where the servos were at :meth:`open`

    # ---------------------------------------------------------------- host side
    def open(self, frame: float = 0.0, payload=None) -> None:
        """Ping and check the servos, take ``frame``'s values from the source (its first call,
        :attr:`first_source_s` [s], e.g. :meth:`FrameSolver.warm_up`, is made here, before the
        first packet), switch the torque on, read where the servos are and start streaming from
        there towards ``frame``; :attr:`startup_s` [s] is all of it. A failure before the thread
        starts closes the port.

        Before the thread starts, the objects made so far are collected once and frozen
        (``gc.freeze``, undone when the stream ends): a full collection of a large process (a
        Blender session, MuJoCo) takes over 10 ms, which a period cannot spare; while streaming
        the collector scans only the objects made since."""
        try:
            import ruckig  # noqa: F401  (the thread's moves; missing: say so before the port opens)
        except ImportError:
            raise PlayError(
                "the live link needs the ruckig package (pip install 'looprig[live]'; in Blender: "
                "<blender python> -m pip install ruckig dynamixel-sdk)"
            ) from None
        frame = float(frame)
        self._wanted = (frame, payload)
        opened = time.perf_counter()
        bus = DynamixelBus(self.port, self.baud, self.motors.ids)
        try:
            check_servos(bus, self.motors.names, self.motors.mode)
            start = time.perf_counter()
            values = np.asarray(self.source(frame, payload), float)
            self.first_source_s = time.perf_counter() - start
            bus.torque(True)
            self.present_ticks = _retried(bus.present)
            present = self.motors.values(self.present_ticks)
        except BaseException:
            bus.close()
            raise
        self._bus = bus
        self.status.running = True
        first = (frame, payload, values)
        self._thread = threading.Thread(
            target=self._run, args=(present, first), name="looprig-live", daemon=True
        )
        gc.collect()
        gc.freeze()
        # the link's thread waits for the interpreter lock at most this long when another
        # thread runs Python (Blender's UI, a bus emulator): the default 5 ms is half a period
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.startup_s = time.perf_counter() - opened
        self._thread.start()

    def seek(self, frame: float, payload=None) -> None:
        """Want ``frame`` (held there: scrubbing, or a host that plays its own timeline);
        ``payload`` goes to the source (e.g. the frame's targets)."""
        with self._lock:
            self._wanted, self._playing = (float(frame), payload), None

    def play(self, frame: float | None = None, at: float | None = None) -> None:
        """Advance the wanted frame at ``frame_rate`` on :attr:`clock` from ``frame`` (default:
        the frame wanted now) at clock time ``at`` [s] (default: now; frames before it stay at
        ``frame``) until :meth:`seek`, :meth:`stop` or ``last_frame``."""
        with self._lock:
            start = self._wanted[0] if frame is None else float(frame)
            self._wanted, self._playing = (start, None), (start, self.clock() if at is None else at)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self) -> LiveReport:
        """Stop now: the thread wakes at once, leaves the servos as ``on_stop`` says and
        closes the port; returns the report. Raises the stream's error, if it failed
        (:class:`PortLostError` for a port that went away)."""
        if math.isnan(self._stop_requested):
            self._stop_requested = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        report = self.report()
        if self.status.error:
            raise self._error
        return report

    def report(self) -> LiveReport:
        log = self._log
        n = log.count
        return LiveReport(
            1.0 / self.settings.rate,
            log.times[:n, 1].copy(),
            log.ticks[:n].copy(),
            log.times[:n, 0].copy(),
            log.times[:n, 2].copy(),
            log.wanted[:n].copy(),
            self._stop_requested,
            self._stopped,
            self.status,
            self.startup_s,
        )

    # -------------------------------------------------------------- the thread
    def _frame_now(self) -> tuple[float, object]:
        with self._lock:
            (frame, payload), playing = self._wanted, self._playing
        if playing is not None:
            frame = playing[0] + max(0.0, self.clock() - playing[1]) * self.frame_rate
            if self.last_frame is not None:
                frame = min(frame, self.last_frame)
        return frame, payload

    def _run(self, present: np.ndarray, first: tuple) -> None:
        import ruckig

        m, settings = self.motors, self.settings
        period = 1.0 / settings.rate
        a = len(m.names)
        otg = ruckig.Ruckig(a, period)
        state = ruckig.InputParameter(a)
        out = ruckig.OutputParameter(a)
        shaft = np.array(
            [mo.ticks_per_unit(u, n) for mo, u, n in zip(m.motors, m.units, m.names, strict=True)]
        )
        shaft = shaft * 2.0 * math.pi / DXL_TICKS_PER_REV
        state.current_position = np.clip(present, m.lower, m.upper).tolist()
        state.current_velocity = [0.0] * a
        state.current_acceleration = [0.0] * a
        state.max_velocity = m.velocity.tolist()
        state.max_acceleration = m.acceleration.tolist()
        state.max_jerk = (settings.jerk / shaft).tolist()
        last_frame, last_payload, last_values = first
        state.target_position = np.clip(last_values, m.lower, m.upper).tolist()
        state.target_velocity = [0.0] * a
        state.target_acceleration = [0.0] * a
        realtime = settings.realtime and _realtime_thread()
        self.status.realtime = realtime
        next_tick = changed_at = time.monotonic()
        try:
            while not self._stop.is_set():
                start = time.monotonic()
                frame, payload = self._frame_now()
                if frame != last_frame or payload is not last_payload:
                    values = np.clip(np.asarray(self.source(frame, payload), float), m.lower, m.upper)
                    step = frame - last_frame
                    velocity = np.zeros(a)
                    if 0.0 < step <= max(2.0, 2.0 * self.frame_rate / settings.rate):
                        # played on (a frame or two, or two periods' worth): follow at the clip's speed
                        velocity = np.clip(
                            (values - last_values) * self.frame_rate / step, -m.velocity, m.velocity
                        )
                        velocity *= 0.999  # a hair inside: ruckig raises on a target speed past the limit
                    state.target_position = values.tolist()
                    state.target_velocity = velocity.tolist()
                    state.target_acceleration = [0.0] * a
                    last_frame, last_payload, last_values, changed_at = frame, payload, values, start
                elif any(state.target_velocity) and start - changed_at > 1.5 / self.frame_rate:
                    # no next frame when one was due (paused): the move ends at rest on the frame;
                    # until then the servos go on at the clip's speed (a host that shows fewer
                    # frames per second than the link sends, as Blender playing at 24 fps)
                    state.target_velocity = [0.0] * a
                result = _update(otg, state, out)
                if result not in (ruckig.Result.Working, ruckig.Result.Finished):
                    state.target_velocity = [0.0] * a  # a target speed the state cannot reach: end at rest
                    result = _update(otg, state, out)
                    if result not in (ruckig.Result.Working, ruckig.Result.Finished):
                        raise PlayError(
                            f"live link: no move within the limits towards frame {frame:g} ({result})"
                        )
                ticks = m.ticks(out.new_position)
                self._send(ticks)
                sent = time.monotonic()
                out.pass_to_input(state)
                work = sent - start
                remaining = (
                    max(0.0, out.trajectory.duration - out.time) if result == ruckig.Result.Working else 0.0
                )
                self._log.add(sent, work, remaining, ticks, last_values)
                self.status = LiveStatus(
                    frame,
                    remaining,
                    self._log.count,
                    self.status.late + (work > period),
                    1e3 * work,
                    max(self.status.max_ms, 1e3 * work),
                    True,
                    "",
                    result == ruckig.Result.Finished and not any(state.target_velocity),
                    realtime,
                )
                next_tick += period
                if next_tick < sent:  # a period overran: start the next one now
                    next_tick = sent
                self._stop.wait(next_tick - time.monotonic())
        except Exception as error:  # any failure ends the stream with its message
            self._error = error if isinstance(error, LooprigError) else PlayError(f"live link: {error}")
            self.status.error = str(self._error)
        finally:
            self._leave()

    def _send(self, ticks: np.ndarray) -> None:
        try:
            self._bus.send_goals(ticks)
        except PlayError:
            if os.path.exists(self.port):
                raise
            raise self._lost(None) from None
        except Exception as error:  # pyserial's SerialException, OSError: the device went away
            raise self._lost(error) from None

    def _lost(self, error) -> PortLostError:
        why = "" if error is None else f" ({error})"
        return PortLostError(
            f"{self.port}: the servo port disappeared after {self._log.count} packets{why}; "
            "the servos keep their last goal while they have power"
        )

    def _leave(self) -> None:
        """Leave the servos as ``on_stop`` says (best effort: the bus may be what failed)."""
        bus = self._bus
        try:
            if self.settings.on_stop == "torque-off" and not isinstance(self._error, PortLostError):
                bus.torque_off_at_once()
        except Exception as error:  # reported, never raised from the stop
            if not self.status.error:
                self.status.error = f"live link: torque off failed: {error}"
                self._error = PlayError(self.status.error)
        finally:
            self._stopped = time.monotonic()
            self.status.running = False
            gc.unfreeze()
            sys.setswitchinterval(self._switch_interval)
            try:
                bus.close()
            except Exception:  # a port already gone cannot be closed again
                pass


#: The interpreter's thread switch interval while the link streams [s] (Python's default is
#: 5 ms: the link's thread could wait half a period for the lock behind another thread).
SWITCH_INTERVAL = 5e-4

#: The link thread's ``SCHED_FIFO`` priority (1-99) with :attr:`LiveSettings.realtime`: above
#: ordinary processes, below audio servers' real-time threads (a sound played with the link).
REALTIME_PRIORITY = 5


def _realtime_thread() -> bool:
    """Put the calling thread under real-time scheduling (SCHED_FIFO); False where the OS refuses
    (no permission, not Linux)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))
    except (AttributeError, OSError):
        return False
    return True


def _update(otg, state, out):
    """One ruckig step; its refusals of an input (raised as RuckigError) come back as its
    error result, for the caller's fallback."""
    import ruckig

    try:
        return otg.update(state, out)
    except ruckig.RuckigError:
        return ruckig.Result.ErrorInvalidInput


def play_file(
    path,
    port: str,
    baud: int = 57600,
    settings: LiveSettings | None = None,
    sound=None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[LiveReport, list, list]:
    """``looprig play --live``: a curves file (a tick export or SI curves) streamed through a
    :class:`LiveLink` from its first frame to its last at its own rate, then stopped. The
    servos start from where they are (the first move is limited like any other: no homing
    ramp). A file that breaks a limit is played within the limits (the servos fall behind
    where it asks too much); its violations are returned for the caller to say so, then the
    packets' own (:func:`sent_violations`, from the servos' start: none is the claim). With
    ``sound`` (a :class:`~looprig.audio.SoundClock` laid on the clip's timeline), the sound's
    clock plays the frames. Ctrl-C stops the link (within a period) and re-raises."""
    from .core.export import DynamixelSettings, read_written, written_violations

    written = read_written(path)
    curves = written.curves
    if curves.rate_hz is None or curves.n_frames < 2:
        raise PlayError(f"{path}: play needs samples at a uniform rate (at least two)")
    settings = settings or LiveSettings()
    motors = LiveMotors.of(curves, written.dynamixel or DynamixelSettings(), settings)
    source, last = curve_source(curves), curves.n_frames - 1
    report, packets = play_through(
        motors, source, curves.rate_hz, last, port, baud, settings, sound, progress
    )
    return report, written_violations(written), packets


def play_solved(
    mechanism,
    samples,
    mapping,
    port: str,
    baud: int = 57600,
    settings: LiveSettings | None = None,
    ids: dict[str, int] | None = None,
    sound=None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[LiveReport, list]:
    """``looprig play ROBOT --live --tracks T --map M``: the clip's frames solved one by one by
    the per-frame solver (:class:`FrameSolver`) as the link plays them at the mapping's rate,
    streamed as :func:`play_file` streams a file (``ids``: servo id per motor, over the robot
    file's hardware ids). Returns the report and the packets' violations (none is the claim)."""
    settings = settings or LiveSettings()
    solver = FrameSolver(mechanism, mapping, samples)
    motors = LiveMotors.of(solver.curves, solver.dynamixel, settings, ids)
    last = solver.frames - 1
    return play_through(motors, solver, solver.mapping.rate, last, port, baud, settings, sound, progress)


def play_through(motors, source, frame_rate, last, port, baud, settings, sound=None, progress=None):
    """Open a link, play frames 0..``last`` on its clock (the sound's, with ``sound``) until
    the servos are at rest on the last one, stop; (report, the packets' violations)."""
    clock = time.monotonic if sound is None else sound.now
    link = LiveLink(motors, source, port, baud, settings, frame_rate, last, clock)
    link.open(0)
    present = link.present_ticks
    try:
        if sound is not None:
            sound.start()
        link.play(0, at=0.0 if sound is not None else None)
        while link.running and not (link.status.frame >= last and link.status.at_rest):
            if progress is not None:
                progress(round(link.status.frame) + 1, last + 1)
            time.sleep(0.05)
    except BaseException:
        link.stop()
        raise
    finally:
        if sound is not None:
            sound.close()
    report = link.stop()
    return report, sent_violations(motors, np.vstack([present, report.sent]), settings.rate)
