"""A clip played through the live link from its first frame to its last: a curves file,
or a robot and tracks solved frame by frame."""

import time
from collections.abc import Callable

import numpy as np

from ..core.export import DynamixelSettings
from ..servo_bus import PlayError
from .link import LiveLink, LiveReport
from .motors import LiveMotors, LiveSettings, sent_violations
from .sources import FrameSolver, curve_source


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
    from ..core.export import read_written, written_violations

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
