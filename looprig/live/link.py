"""The live link: one servo bus and the thread that sends it a limited move every period
(see :mod:`looprig.live`)."""

import gc
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core import LooprigError
from ..core.export.dynamixel import DXL_TICKS_PER_REV
from ..servo_bus import DynamixelBus, PlayError, check_servos, retried
from .motors import LiveMotors, LiveSettings, PortLostError
from .sources import Source


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
            self.present_ticks = retried(bus.present)
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
