"""The ``looprig`` command line: parses arguments, calls the app layer (:mod:`looprig.app`), prints.

This module parses; the handlers are :mod:`looprig.commands` (``play``: :mod:`looprig.play_commands`).

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
import math
import sys
import warnings

from . import app, curve_files
from .commands import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    cmd_batch,
    cmd_check,
    cmd_convert,
    cmd_demo,
    cmd_export,
    cmd_info,
    cmd_plot,
    cmd_retarget,
)
from .core import LooprigError
from .core.library import NAMES
from .play_commands import cmd_play


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


def add_switch(parser: argparse.ArgumentParser, flag: str, help: str | None = None) -> None:
    """Add the option ``flag``: off unless given, no value."""
    parser.add_argument(flag, action="store_true", help=help)


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
    add_switch(parser, "--debug", "show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="summarise a mechanism")
    info.add_argument("mechanism", help=f"a file or a reference mechanism: {', '.join(NAMES)}")
    add_switch(info, "--json", "print one JSON object")
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
        "--formats",
        nargs="+",
        default=["csv"],
        choices=sorted(curve_files.EXPORT_FORMATS),
        help="curve formats",
    )
    add_switch(retarget, "--plot", "also write curves.png")
    add_switch(
        retarget, "--strict", "refuse to write curves that break limits or miss a frame's target (exit 3)"
    )
    add_switch(
        retarget,
        "--allow-unassembled",
        f"write even when a frame's constraint residual exceeds {app.RESIDUAL_TOLERANCE_M:g} m",
    )
    add_switch(retarget, "--allow-unreachable", "write even when every frame is unreachable")
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
    add_switch(retarget, "--quiet")
    add_setting_options(retarget)
    retarget.set_defaults(func=cmd_retarget)

    check = sub.add_parser(
        "check",
        help="list the limit violations of a file looprig wrote (curves CSV/JSON, Dynamixel ticks, C header)",
    )
    check.add_argument(
        "curves", help="a curves CSV or JSON, a Dynamixel ticks CSV or JSON, or a C header (.h)"
    )
    add_switch(check, "--strict", "exit 3 when there are violations")
    add_switch(
        check,
        "--cyclic",
        "the file is played in a loop (its first sample one period after its last): "
        "velocities and accelerations at the seam from the wrap-around differences",
    )
    check.set_defaults(func=cmd_check)

    exp = sub.add_parser("export", help="convert curves to a hardware format")
    exp.add_argument("curves")
    exp.add_argument("--format", required=True, choices=sorted(curve_files.EXPORT_FORMATS))
    exp.add_argument("-o", "--output", required=True)
    add_switch(exp, "--allow-violations", "write despite limit violations (recorded in the file)")
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
    add_switch(jobs, "--quiet")
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
    add_switch(player, "--dry-run", "print what would be sent; open nothing")
    add_switch(
        player,
        "--live",
        "stream through the live link: from where the servos are, every packet moved within the "
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
    add_switch(player, "--quiet")
    player.set_defaults(func=cmd_play)

    demo = sub.add_parser("demo", help="run the main job on the bundled robot and clip")
    demo.add_argument("-o", "--output", default="out/demo", help="output folder")
    add_switch(demo, "--quiet")
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
