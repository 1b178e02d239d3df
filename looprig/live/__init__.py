"""Live link: the robot's motor values streamed to Dynamixel servos while the animator plays or scrubs.

The link's servos and settings are :mod:`.motors`, the frame sources :mod:`.sources`,
the link and its thread :mod:`.link`, a clip played through it :mod:`.playing`.

A :class:`LiveLink` owns one servo bus (``dynamixel-sdk``, Protocol 2.0, through
:class:`~looprig.servo_bus.DynamixelBus`) and one thread that sends a Goal Position(116)
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
checked (:func:`~looprig.servo_bus.check_servos`) and their present positions read: the
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

from .link import LiveLink, LiveReport, LiveStatus
from .motors import LiveMotors, LiveSettings, PortLostError, sent_violations
from .playing import play_file, play_solved
from .sources import FrameSolver, curve_source

__all__ = [
    "FrameSolver",
    "LiveLink",
    "LiveMotors",
    "LiveReport",
    "LiveSettings",
    "LiveStatus",
    "PortLostError",
    "curve_source",
    "play_file",
    "play_solved",
    "sent_violations",
]
