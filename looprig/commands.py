"""The handlers of the ``looprig`` subcommands (:mod:`looprig.cli` parses): each calls the
app layer (:mod:`looprig.app`) and prints; returns the exit code."""

import json
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

from . import app, console, curve_files
from .core import LooprigError

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
        print(f"{written.format}: {dynamixel_mode_line(curve_files.mode_record(written.dynamixel, None))}")
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
        recorded, why = curve_files.export_curves(
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
    print(f"wrote {curve_files.plot_curves_file(args.curves, args.output)}")
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
