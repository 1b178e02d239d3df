"""The ``looprig`` command line: parses arguments, calls the app layer (:mod:`looprig.app`), prints.

One module although long: every subcommand's parser and handler, thin, side by side.

    looprig info MECHANISM [--json]
    looprig convert IN OUT
    looprig retarget MECHANISM TRACKS [TRACKS ...] --map MAP -o OUTDIR [--strict] [--formats ...] [--plot]
    looprig check CURVES [--strict] [--cyclic]
    looprig export CURVES --format FORMAT -o OUT [--allow-violations] [--audio FILE]
    looprig plot CURVES -o PNG
    looprig batch JOBS [--scheduler ADDRESS] [--workers N] [--summary FILE]
    looprig play CURVES --port PORT [--baud BAUD] [--record FILE] [--dry-run] [--live] [--audio FILE]
    looprig play MECHANISM --live --tracks TRACKS --map MAP --port PORT [--ids MOTOR=ID ...]
    looprig demo [-o OUTDIR]

MECHANISM is a reference mechanism name or a URDF, MJCF or native file; TRACKS
a tracks file (JSON/NPZ) or BVH; CURVES a curves CSV or JSON.
Exit codes: 0 success; 2 bad input or an output that cannot be written; 3 outputs
refused (limit violations with --strict or on export, unreachable frames with
--strict, every frame unreachable, a robot that came apart) or a curve refused
by `play`; 4 `batch`: some job did not pass; 130 interrupted (Ctrl-C).
Errors print one line; ``--debug`` shows the traceback.
"""

import argparse
import json
import math
import subprocess
import sys
import time
import warnings
from importlib.util import find_spec
from pathlib import Path

from . import app, console
from .core import LooprigError
from .core.library import NAMES

EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3
EXIT_JOBS_FAILED = 4
EXIT_INTERRUPTED = 130


def cmd_info(args) -> int:
    mechanism = app.load_mechanism(args.mechanism)
    if args.map:  # the motors and limits a retarget with this mapping would use
        from .core.retarget import RetargetMapping, with_motors

        mapping = RetargetMapping.load(args.map).named_for(mechanism)
        mechanism = mapping.limited(with_motors(mechanism, mapping.motors))
    summary = app.mechanism_summary(mechanism)
    if args.json:
        print(json.dumps(summary, allow_nan=False))
        return 0
    kinds = ", ".join(f"{n} {kind}" for kind, n in summary["coupling_kinds"].items())
    couplings = f", {summary['coupling_rows']} couplings ({kinds})" if summary["coupling_rows"] else ""
    print(
        f"{summary['name']}: {summary['bodies']} bodies, {summary['joints']} joints, "
        f"{summary['actuators']} actuators, {summary['loops']} loops{couplings}"
    )
    print(
        f"  dof {summary['dof']} (Grübler {summary['grubler']}), "
        f"redundant constraints {summary['redundant_constraints']}"
    )

    def _number(value) -> str:  # a limit: 4 significant digits, None (no limit) as "none"
        return "none" if value is None else f"{value:.4g}"

    for a in summary["actuator_list"]:
        joint = "" if a["name"] == a["joint"] else f" on joint {a['joint']}"
        servo = f" ({a['servo']})" if a["servo"] else ""
        source = {k: f"[{v}{servo if v == 'catalogue' else ''}]" for k, v in a["limit_sources"].items()}
        ends = (
            source["lower"] if source["lower"] == source["upper"] else f"{source['lower']}..{source['upper']}"
        )
        print(
            f"  actuator {a['name']}{joint}: {a['kind']} {a['motion']} [{a['unit']}] "
            f"range {_number(a['lower'])}..{_number(a['upper'])} {ends}, "
            f"velocity limit {_number(a['velocity_limit'])} {source['velocity']}, "
            f"acceleration limit {_number(a['acceleration_limit'])} {source['acceleration']}"
        )
    if summary["frames"]:
        print(f"  frames: {', '.join(summary['frames'])}")
    return 0


def cmd_convert(args) -> int:
    from .outputs import check_output

    check_output(args.output, inputs=[args.input])
    print(f"wrote {app.convert_mechanism(args.input, args.output)}")
    return 0


def add_setting_options(parser: argparse.ArgumentParser) -> None:
    """One option per retarget setting (``--state-weight`` for ``state_weight``), reflected from
    :data:`~looprig.core.retarget.settings.RETARGET_SETTINGS`; a given option overrides the
    mapping's value."""
    from .core.retarget.settings import RETARGET_SETTINGS

    group = parser.add_argument_group("settings (override the mapping file's values)")
    for setting in RETARGET_SETTINGS:
        flag = "--" + setting.name.replace("_", "-")
        unit = f" [{setting.unit}]" if setting.unit else ""
        default = "unset" if setting.default is None else f"{setting.default!r}"
        help_text = f"{setting.help}{unit}; {setting.range_text}, default {default}"
        options = {"dest": f"setting_{setting.name}", "default": argparse.SUPPRESS, "help": help_text}
        if setting.kind is bool:
            group.add_argument(flag, action=argparse.BooleanOptionalAction, **options)
        elif setting.kind is str:
            group.add_argument(flag, choices=setting.choices, **options)
        else:
            group.add_argument(
                flag, type=_setting_text(setting), metavar=setting.kind.__name__.upper(), **options
            )


def _setting_text(setting):
    """argparse type: the option's text as the setting's kind ("none" for an optional one)."""

    def convert(text: str):
        if setting.optional and text.strip().lower() in ("none", "null", "off"):
            return None
        try:
            return setting.kind(text) if setting.kind is int else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None

    return convert


def setting_overrides(args) -> dict:
    """The settings given on the command line, each checked by its :class:`Setting`."""
    from .core.retarget.settings import RETARGET_SETTINGS

    given = {}
    for setting in RETARGET_SETTINGS:
        dest = f"setting_{setting.name}"
        if hasattr(args, dest):
            flag = "--" + setting.name.replace("_", "-")
            given[setting.name] = setting.check(getattr(args, dest), flag)
    return given


def mapping_overrides(args) -> dict:
    """The mapping's start, motors and hold as the command line gives them."""
    given = {}
    if args.start:
        start = {}
        for item in args.start:
            name, _, value = item.partition("=")
            try:
                start[name] = float(value)
            except ValueError:
                raise LooprigError(f"--start: {item!r} is not MOTOR=VALUE with a number") from None
        given["start"] = start
    if args.motors:
        given["motors"] = list(args.motors)
    if args.hold:
        given["hold"] = list(args.hold)
    return given


def cmd_retarget(args) -> int:
    from .core.retarget import RetargetMapping
    from .retime import retiming_lines

    mapping = RetargetMapping.load(args.map)
    overrides = setting_overrides(args) | mapping_overrides(args)
    if overrides:
        mapping = RetargetMapping.from_dict({**mapping.to_dict(), **overrides}, "command line")
    inputs = [args.map, *args.tracks] + ([args.mechanism] if Path(args.mechanism).exists() else [])
    mechanism = app.load_mechanism(args.mechanism)
    pins, chain = (), None
    if len(args.tracks) > 1:  # clips played in sequence
        if args.pin:
            raise LooprigError("--pin: clips played in sequence are not retimed; pin one clip's frames")
        chain = app.load_chain(args.tracks, mapping.rate, args.transition)
        samples = chain.samples
    else:
        samples = app.load_samples(args.tracks[0])
    if args.pin:
        from .core.tracks.retime import pin_times

        pins = pin_times(samples, args.pin)
    outcome = app.retarget_to_folder(
        mechanism,
        samples,
        mapping.named_for(mechanism),
        Path(args.output),
        args.formats,
        strict=args.strict,
        plot=args.plot,
        progress=console.Progress("retargeting", args.quiet),
        allow_unassembled=args.allow_unassembled,
        allow_unreachable=args.allow_unreachable,
        inputs=inputs,
        dynamixel_mode=args.dynamixel_mode,
        pins=pins,
        chain=chain,
    )
    if not args.quiet:
        console.print_retarget(outcome)
        for line in retiming_lines(outcome.summary.get("retiming")):
            print(line)
        if "dynamixel" in outcome.summary:
            print(dynamixel_mode_line(outcome.summary["dynamixel"]))
    console.warn_findings(outcome, args.output)
    return 0


def dynamixel_mode_line(dynamixel: dict) -> str:
    """The Dynamixel operating mode tick files are written in, and why, for the terminal."""
    if dynamixel["why"]:
        return f"Dynamixel ticks in {dynamixel['why']}"
    low, high = dynamixel["tick_range"]
    mode = dynamixel["mode"].replace("_", " ")
    return (
        f"Dynamixel ticks in {mode} mode (Operating Mode {dynamixel['operating_mode']}, ticks {low}..{high})"
    )


def cmd_check(args) -> int:
    from .core.export import read_written, resolution_text, written_violations

    written = read_written(args.curves)
    violations = written_violations(written, cyclic=args.cyclic)
    for v in violations:
        print(v.describe())
    curves = written.curves
    if written.dynamixel is not None:
        print(f"{written.format}: {dynamixel_mode_line(app.mode_record(written.dynamixel, None))}")
    note = resolution_text(written)
    if note:
        print(note)
    if not violations:
        looped = " (played in a loop, the seam included)" if args.cyclic else ""
        print(f"{curves.n_actuators} actuators, {curves.n_frames} frames: within limits{looped}")
    if violations and args.strict:
        print(f"looprig: error: {args.curves}: {len(violations)} limit violation(s)", file=sys.stderr)
        return EXIT_REFUSED
    return 0


def cmd_export(args) -> int:
    from .core.curves.violations import LimitViolationError
    from .outputs import check_output

    check_output(args.output, inputs=[args.curves])
    audio = None
    if args.audio:
        from .audio import SoundReference, read_sound

        read_sound(args.audio)  # a sound that cannot be read is refused before anything is written
        audio = SoundReference(str(Path(args.audio).resolve()), args.audio_offset).to_dict()
    try:
        recorded, why = app.export_curves(
            args.curves, args.format, args.output, args.allow_violations, args.dynamixel_mode, audio
        )
    except LimitViolationError as error:
        error.override_hint = "--allow-violations"  # named in the message when it would help
        raise
    print(f"wrote {args.output}" + (f" with {len(recorded)} recorded violations" if recorded else ""))
    if why:
        print(f"Dynamixel ticks in {why}")
    for v in recorded:
        print(f"looprig: warning: {args.output}: {v.describe()} (recorded in the file)", file=sys.stderr)
    return 0


def cmd_plot(args) -> int:
    from .outputs import check_output

    check_output(args.output, inputs=[args.curves])
    print(f"wrote {app.plot_curves_file(args.curves, args.output)}")
    return 0


def cmd_batch(args) -> int:
    from . import batch
    from .outputs import check_output, write_text

    jobs = batch.read_jobs(args.jobs)
    summary_path = Path(args.summary) if args.summary else Path(args.jobs).with_name("batch-summary.json")
    check_output(summary_path, inputs=[args.jobs])
    results = batch.run_batch(jobs, args.scheduler, args.workers, console.JobsProgress(args.quiet))
    document = batch.summary_document(results, args.jobs)
    write_text(summary_path, json.dumps(document, indent=2, allow_nan=False) + "\n", inputs=[args.jobs])
    if not args.quiet:
        console.print_jobs_table(results)
        counts = ", ".join(f"{n} {status}" for status, n in document["counts"].items() if n)
        print(f"{len(results)} jobs: {counts}; wrote {summary_path}")
    return 0 if document["passed"] else EXIT_JOBS_FAILED


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


def cmd_demo(args) -> int:
    from .demo import demo_inputs, run_demo

    if args.blend and find_spec("bpy") is None:
        raise LooprigError("--blend needs the bpy module (pip install bpy==5.0.1; `make test` installs it)")
    start = time.perf_counter()
    if not args.quiet:
        print(demo_inputs()[3])
    outcome = run_demo(Path(args.output), progress=console.Progress("retargeting", args.quiet))
    if not args.quiet:
        console.print_retarget(outcome)
        print(dynamixel_mode_line(outcome.summary["dynamixel"]))
        print(f"done in {time.perf_counter() - start:.1f} s")
    console.warn_findings(outcome, args.output)
    code = 0
    if args.blend:
        # the Blender scene is built by the add-on's own demo program: the app layer sits below the
        # host glue and does not import it
        blend = [sys.executable, "-m", "looprig.blender_addon.demo", "--blend", args.blend]
        code = max(code, subprocess.run(blend, check=False).returncode)
    return code


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1."""
    if not text.strip().isdecimal() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return int(text)


def seconds(text: str) -> float:
    """argparse type: a finite duration >= 0 [s]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0.0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def add_dynamixel_mode_option(parser: argparse.ArgumentParser) -> None:
    from .core.export import DXL_MODE_CHOICES

    parser.add_argument(
        "--dynamixel-mode",
        choices=DXL_MODE_CHOICES,
        default="auto",
        help="Operating Mode of Dynamixel tick files: auto (default) is extended_position (4) when a motor "
        "with no range turns beyond one revolution, else position (3); a forced mode whose ticks do not "
        "fit is a limit violation like any other",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="looprig",
        description="Retarget animation onto robots with kinematic loops and bake motor curves.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="summarise a mechanism")
    info.add_argument("mechanism", help=f"a file or a reference mechanism: {', '.join(NAMES)}")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument(
        "--map", help="a mapping file: the motors and limits a retarget with it uses (servo, motor_limits)"
    )
    info.set_defaults(func=cmd_info)

    convert = sub.add_parser("convert", help="write a URDF/MJCF/native mechanism as a native file")
    convert.add_argument("input")
    convert.add_argument("output", help="native file, conventionally *.looprig.json")
    convert.set_defaults(func=cmd_convert)

    retarget = sub.add_parser("retarget", help="retarget a clip and write motor curves")
    retarget.add_argument("mechanism")
    retarget.add_argument(
        "tracks",
        nargs="+",
        help="tracks file (.json/.npz) or .bvh; several: clips played in sequence, with --transition between",
    )
    retarget.add_argument(
        "--transition",
        type=seconds,
        default=app.CHAIN_TRANSITION,
        help="between clips played in sequence: the transition's length [s] "
        f"(default {app.CHAIN_TRANSITION:g})",
    )
    retarget.add_argument("--map", required=True, help="mapping file (JSON)")
    retarget.add_argument("-o", "--output", required=True, help="output folder")
    retarget.add_argument(
        "--formats", nargs="+", default=["csv"], choices=sorted(app.EXPORT_FORMATS), help="curve formats"
    )
    retarget.add_argument("--plot", action="store_true", help="also write curves.png")
    retarget.add_argument(
        "--strict",
        action="store_true",
        help="refuse to write curves that break limits or miss a frame's target (exit 3)",
    )
    retarget.add_argument(
        "--allow-unassembled",
        action="store_true",
        help=f"write even when a frame's constraint residual exceeds {app.RESIDUAL_TOLERANCE_M:g} m",
    )
    retarget.add_argument(
        "--allow-unreachable", action="store_true", help="write even when every frame is unreachable"
    )
    retarget.add_argument(
        "--start",
        nargs="+",
        metavar="MOTOR=VALUE",
        help="motor values [rad | m] where the clip starts (overrides the mapping's start); "
        "a motor is named by its actuator's name or its joint's",
    )
    retarget.add_argument(
        "--motors",
        nargs="+",
        metavar="NAME",
        help="exactly these joints (or the file's actuators, by name) are motors (default: the file's)",
    )
    retarget.add_argument(
        "--hold",
        nargs="+",
        metavar="MOTOR",
        help="motors (actuator or joint names) locked at their start value",
    )
    retarget.add_argument(
        "--pin",
        nargs="+",
        type=float,
        metavar="FRAME",
        help="with --timing stretch: frames of the clip (the tracks file's numbering) kept at their times",
    )
    add_dynamixel_mode_option(retarget)
    retarget.add_argument("--quiet", action="store_true")
    add_setting_options(retarget)
    retarget.set_defaults(func=cmd_retarget)

    check = sub.add_parser(
        "check",
        help="list the limit violations of a file looprig wrote (curves CSV/JSON, Dynamixel ticks, C header)",
    )
    check.add_argument(
        "curves", help="a curves CSV or JSON, a Dynamixel ticks CSV or JSON, or a C header (.h)"
    )
    check.add_argument("--strict", action="store_true", help="exit 3 when there are violations")
    check.add_argument(
        "--cyclic",
        action="store_true",
        help="the file is played in a loop (its first sample one period after its last): "
        "velocities and accelerations at the seam from the wrap-around differences",
    )
    check.set_defaults(func=cmd_check)

    exp = sub.add_parser("export", help="convert curves to a hardware format")
    exp.add_argument("curves")
    exp.add_argument("--format", required=True, choices=sorted(app.EXPORT_FORMATS))
    exp.add_argument("-o", "--output", required=True)
    exp.add_argument(
        "--allow-violations",
        action="store_true",
        help="write despite limit violations (recorded in the file)",
    )
    add_dynamixel_mode_option(exp)
    exp.add_argument("--audio", metavar="FILE", help="the clip's sound, recorded in a json export")
    exp.add_argument(
        "--audio-offset",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="clip time at which the sound's first sample plays (default 0)",
    )
    exp.set_defaults(func=cmd_export)

    plot = sub.add_parser("plot", help="plot position and velocity with limit bands")
    plot.add_argument("curves")
    plot.add_argument("-o", "--output", required=True, help="PNG file")
    plot.set_defaults(func=cmd_plot)

    jobs = sub.add_parser("batch", help="retarget many shots in parallel from a jobs file")
    jobs.add_argument("jobs", help="jobs file (JSON; see docs/pipeline.md)")
    jobs.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786")
    jobs.add_argument("--workers", type=positive_int, help="local worker processes (default: CPU count)")
    jobs.add_argument("--summary", help="summary file (default: batch-summary.json beside JOBS)")
    jobs.add_argument("--quiet", action="store_true")
    jobs.set_defaults(func=cmd_batch)

    player = sub.add_parser("play", help="play curves on Dynamixel servos (Protocol 2.0)")
    player.add_argument("curves", help="a Dynamixel tick export (*.dynamixel.json/csv) or a curves file")
    player.add_argument("--port", help="serial port of the servo bus, e.g. /dev/ttyUSB0")
    player.add_argument("--baud", type=int, default=57600, help="baud rate (default 57600)")
    player.add_argument(
        "--on-stop",
        choices=("hold", "torque-off"),
        default="hold",
        help="at the end, on Ctrl-C or an error: hold the last goal (default) or switch the torque off",
    )
    player.add_argument(
        "--homing-fraction",
        type=float,
        default=0.25,
        help="homing speed as a fraction of each servo's velocity limit (default 0.25)",
    )
    player.add_argument(
        "--settle", type=seconds, default=0.25, help="hold the first sample this long [s] (default 0.25)"
    )
    player.add_argument(
        "--record",
        metavar="FILE",
        help="read Present Position(132) after every frame's goal and write it as a curves .csv/.json",
    )
    player.add_argument("--dry-run", action="store_true", help="print what would be sent; open nothing")
    player.add_argument(
        "--live",
        action="store_true",
        help="stream through the live link: from where the servos are, every packet moved within the "
        "velocity and acceleration limits (ruckig), --rate packets per second",
    )
    player.add_argument(
        "--rate", type=float, default=100.0, help="packets per second with --live [Hz] (default 100)"
    )
    player.add_argument(
        "--tracks",
        help="with --live: CURVES is a robot (file or reference name) and each frame of these tracks is "
        "solved by the per-frame solver as it is played (needs --map)",
    )
    player.add_argument("--map", help="the mapping file of --tracks")
    player.add_argument(
        "--ids",
        nargs="+",
        metavar="MOTOR=ID",
        help="servo ids of --tracks' motors (default: the robot file's)",
    )
    player.add_argument("--audio", metavar="FILE", help="play this sound with the motion, from one clock")
    player.add_argument(
        "--audio-offset",
        type=float,
        metavar="SECONDS",
        help="clip time at which the sound's first sample plays (default: the curves file's, else 0)",
    )
    player.add_argument("--audio-device", help="sound output device (index or name; default: the system's)")
    player.add_argument("--quiet", action="store_true")
    player.set_defaults(func=cmd_play)

    demo = sub.add_parser("demo", help="run the main job on the bundled robot and clip")
    demo.add_argument("-o", "--output", default="out/demo", help="output folder")
    demo.add_argument("--quiet", action="store_true")
    demo.add_argument(
        "--blend", help="also write the Blender demo scene (four-bar retargeted and baked) to this .blend"
    )
    demo.set_defaults(func=cmd_demo)
    return parser


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for people: one line, ``looprig: warning: FILE: object: problem``
    (:meth:`LooprigWarning.one_line`); other warnings as their text on one line."""
    from .core.errors import LooprigWarning

    if isinstance(message, LooprigWarning):
        text = message.one_line()
    else:
        text = f"looprig: warning: {category.__name__}: {message}"
    print(" ".join(text.split()), file=sys.stderr if file is None else file)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    shown = warnings.showwarning
    warnings.showwarning = show_warning
    try:
        return args.func(args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("looprig: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (LooprigError, OSError) as error:
        if args.debug:
            raise
        from .app import RetargetRefused
        from .core.curves.violations import LimitViolationError

        print(f"looprig: error: {one_line(error)}", file=sys.stderr)
        refused = isinstance(error, LimitViolationError | RetargetRefused)
        return EXIT_REFUSED if refused else EXIT_BAD_INPUT
    finally:
        warnings.showwarning = shown


def one_line(error: BaseException) -> str:
    """An error as one line; a bare OSError names its file."""
    if isinstance(error, OSError) and not isinstance(error, LooprigError):
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror or error}"
    first, *rest = str(error).splitlines() or [""]
    return first if not rest else f"{first} (+{len(rest)} more lines; see --debug)"


if __name__ == "__main__":
    sys.exit(main())
