"""``looprig play``: curves streamed to servos, from a file or solved live (:mod:`looprig.live`)."""

import sys
from pathlib import Path

from . import app, console
from .commands import EXIT_INTERRUPTED
from .core import LooprigError


def cmd_play(args) -> int:
    from . import play

    if args.live:
        return cmd_play_live(args)
    if args.tracks:
        raise LooprigError("play --tracks: a clip solved frame by frame is played with --live")
    plan = play.load_plan(args.curves, args.homing_fraction)
    if args.record:
        play.check_record_path(args.record, args.curves)
    sound = None
    if args.audio and not args.dry_run:
        sound = play_sound(args, float(plan.asked.times[0]))
    if args.dry_run:
        for line in play.dry_run_lines(plan, args.port or "(--port)", args.baud, args.on_stop):
            print(line)
        return 0
    if not args.port:
        raise LooprigError("play: give the servos' serial port with --port (or use --dry-run)")
    try:
        report = play.play(
            plan,
            args.port,
            args.baud,
            args.on_stop,
            args.settle,
            console.Progress("playing", args.quiet),
            record=bool(args.record),
            sound=sound,
        )
    except KeyboardInterrupt:
        state = "hold their last goal, torque on" if args.on_stop == "hold" else "torque off"
        print(f"looprig: interrupted; the servos {state}", file=sys.stderr)
        return EXIT_INTERRUPTED
    console.print_tracking(report, args.on_stop)
    if sound is not None and not args.quiet:
        print(
            f"sound {Path(args.audio).name} from clip time {sound.offset_s:.3f} s: first packet "
            f"{1e3 * report.first_packet_s:.1f} ms after its first sample "
            f"({1e3 * sound.buffer_s:.0f} ms buffers)"
        )
    if args.record:
        broken = play.write_record(plan, report, args.record)
        if not args.quiet:
            print(f"recorded {len(plan.ticks)} frames of Present Position(132) to {args.record}")
        if broken:
            print(
                f"looprig: warning: {args.record}: the recorded motion breaks {len(broken)} limit(s), "
                "listed in the file (looprig check)",
                file=sys.stderr,
            )
    return 0


def play_sound(args, start_s: float):
    """The SoundClock of ``--audio`` (its reference's offset kept as ``offset_s``)."""
    from .audio import clip_sound

    sound, reference = clip_sound(args.audio, args.audio_offset, args.curves, start_s, args.audio_device)
    sound.offset_s = reference.offset_s
    return sound


def motor_ids(pairs) -> dict[str, int] | None:
    """``--ids NAME=ID ...`` as {motor: servo id}."""
    if not pairs:
        return None
    ids = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if not name or not value.strip().isdecimal():
            raise LooprigError(f"--ids: expected MOTOR=ID (a whole number), got {pair!r}")
        ids[name] = int(value)
    return ids


def cmd_play_live(args) -> int:
    """``play --live``: a file (looprig.live.play_file), or a robot and tracks solved frame by frame
    (looprig.live.play_solved), streamed through the live link."""
    from . import live

    if args.record or args.dry_run:
        raise LooprigError("play --live: --record and --dry-run play the file as it is; drop --live")
    if not args.port:
        raise LooprigError("play --live: give the servos' serial port with --port")
    if args.tracks and not args.map:
        raise LooprigError("play --tracks: give the mapping with --map")
    settings = live.LiveSettings(rate=args.rate, on_stop=args.on_stop)
    progress = console.Progress("streaming", args.quiet)
    sound, broken = None, []
    try:
        if args.tracks:  # the positional is the robot: every frame solved as it is played
            from .core.retarget import RetargetMapping

            mapping = RetargetMapping.load(args.map)
            samples = app.load_samples(args.tracks)
            if args.audio:
                sound = play_sound(args, float(samples.times[0]))
            report, outside = live.play_solved(
                app.load_mechanism(args.curves),
                samples,
                mapping,
                args.port,
                args.baud,
                settings,
                motor_ids(args.ids),
                sound,
                progress,
            )
        else:
            if args.audio:
                from .core.export import read_written

                sound = play_sound(args, float(read_written(args.curves).curves.times[0]))
            report, broken, outside = live.play_file(
                args.curves, args.port, args.baud, settings, sound, progress
            )
    except KeyboardInterrupt:
        state = "hold their last goal, torque on" if args.on_stop == "hold" else "torque off"
        print(f"looprig: interrupted; the servos {state}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not args.quiet:
        work = 1e3 * report.work_s
        within = "every one within the limits" if not outside else f"{len(outside)} limit violation(s)"
        print(
            f"start-up {report.startup_s:.2f} s; "
            f"{len(report.sent)} packets at {args.rate:g} Hz, {within}; work per period median "
            f"{sorted(work)[len(work) // 2]:.2f} ms, max {work.max():.2f} ms ({report.status.late} over a "
            f"period); largest lag {report.lag_s.max():.3f} s; "
            + ("servos hold the last goal" if args.on_stop == "hold" else "torque off")
        )
    for v in outside:
        print(f"looprig: warning: packets sent: {v.describe()}", file=sys.stderr)
    if broken:
        print(
            f"looprig: warning: {args.curves}: the clip breaks {len(broken)} limit(s); the live link kept "
            "its packets within them, so the servos fell behind the clip there (looprig check lists them)",
            file=sys.stderr,
        )
    return 0
