"""Batch export of tracked frames with ``mayapy`` (no UI), for farms and CI.

Usage::

    mayapy -m looprig.maya_scripts.batch shot010.ma --nodes hand_ctrl foot_ctrl=foot \\
        --start 1 --end 120 --rate 1200 -o shot010.tracks.json

Opens the scene, samples the named transforms (``node`` or ``node=track_name``;
``*`` patterns allowed), or the members of ``--set`` (default: the object set
``looprig_tracks``), and writes the tracks file (``.json``, or ``.npz`` for
long clips). ``--start``/``--end`` default to the scene's playback range,
``--rate`` to its frame rate.

Exit status: 0 written; 1 export failed (scene cannot be opened, missing or
ambiguous nodes, bad frame range or rate, unwritable output) with one
``error:`` line on stderr and no file written; 2 bad command line.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from .errors import MayaScriptError
from .export_tracks import DEFAULT_SET_NAME, MAX_RATE_HZ, export_tracks

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PROG = "mayapy -m looprig.maya_scripts.batch"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Export the world transforms of Maya nodes as a looprig tracks file.",
        epilog="Exit status: 0 written, 1 export failed (nothing written), 2 bad command line.",
    )
    parser.add_argument("scene", help="Maya scene to open (.ma or .mb)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--nodes",
        nargs="+",
        metavar="NODE",
        help="transforms to export: name, DAG path or pattern, optionally NODE=TRACK_NAME",
    )
    what.add_argument(
        "--set",
        dest="set_name",
        metavar="SET",
        help=f"export the members of this object set (default when no --nodes: {DEFAULT_SET_NAME})",
    )
    parser.add_argument("--start", type=float, help="first frame (default: playback start)")
    parser.add_argument("--end", type=float, help="last frame (default: playback end)")
    parser.add_argument(
        "--rate",
        type=float,
        help=f"samples per second, sub-frame up to {MAX_RATE_HZ:g} Hz (default: the scene's fps)",
    )
    parser.add_argument("-o", "--output", required=True, help="tracks file to write (.json or .npz)")
    parser.add_argument(
        "--evaluation",
        choices=("context", "timeline"),
        default="context",
        help="context: evaluate each sample time in a DG context (fast, default); "
        "timeline: step the current time (for simulations and caches)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    return parser


def check_arguments(args) -> str | None:
    """A problem with the numbers that needs no scene (so a farm fails fast), or None."""
    for name in ("start", "end", "rate"):
        value = getattr(args, name)
        if value is not None and not math.isfinite(value):
            return f"--{name} must be a finite number, got {value}"
    if args.start is not None and args.end is not None and args.end < args.start:
        return f"--end {args.end:g} is before --start {args.start:g}"
    if args.rate is not None and not 0 < args.rate <= MAX_RATE_HZ:
        return f"--rate must lie in (0, {MAX_RATE_HZ:g}] Hz, got {args.rate:g}"
    if not os.path.isfile(args.scene):
        return f"scene file {args.scene!r} not found"
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        return f"output folder {folder!r} does not exist"
    return None


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_FAILED


def main(argv=None, host=None) -> int:
    """Run the batch export; returns the exit status (see the module doc)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse printed usage or help
        return EXIT_OK if stop.code in (0, None) else EXIT_USAGE
    problem = check_arguments(args)
    if problem:
        return _error(problem)
    if host is None:
        from . import maya_facade as host
    say = (lambda *_: None) if args.quiet else print
    host.initialize_standalone()
    try:
        say(f"opening {args.scene}")
        try:
            host.open_scene(args.scene)
        except RuntimeError as error:
            return _error(f"cannot open scene {args.scene!r}: {error}")
        reported = [-1]

        def progress(done: int, total: int) -> None:
            tenth = 10 * done // total
            if tenth > reported[0]:
                reported[0] = tenth
                say(f"  {10 * tenth:3d}% ({done}/{total} samples)")

        try:
            result = export_tracks(
                args.output,
                args.nodes,
                set_name=args.set_name or (None if args.nodes else DEFAULT_SET_NAME),
                start=args.start,
                end=args.end,
                rate=args.rate,
                evaluation=args.evaluation,
                progress=progress,
                host=host,
            )
        except (MayaScriptError, OSError) as error:
            return _error(str(error))
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        say(result.summary())
        return EXIT_OK
    finally:
        host.uninitialize_standalone()


if __name__ == "__main__":
    sys.exit(main())
