"""The ``looprig`` command line.

    looprig info MECHANISM [--json]
    looprig convert IN OUT
    looprig retarget MECHANISM TRACKS --map MAP -o OUTDIR [--strict] [--formats ...] [--plot]
    looprig check CURVES [--strict]
    looprig export CURVES --format FORMAT -o OUT [--allow-violations]
    looprig plot CURVES -o PNG
    looprig demo [-o OUTDIR]

MECHANISM is a reference mechanism name or a URDF, MJCF or native file; TRACKS
a tracks file (JSON/NPZ) or BVH; CURVES a curves CSV or JSON.
Exit codes: 0 success, 2 bad input, 3 limit violations (with ``--strict``) or an
export refused because of them. Errors print one line; ``--debug`` shows the traceback.
"""

import argparse
import json
import math
import sys
from pathlib import Path

from looprig.core import LooprigError, analyse_mobility
from looprig.core.library import NAMES, build

EXIT_BAD_INPUT = 2
EXIT_LIMITS = 3

#: Export formats: name -> (writer function name in looprig.core.export, file suffix).
EXPORT_FORMATS = {
    "csv": ("write_csv", ".csv"),
    "json": ("write_json", ".json"),
    "dynamixel-csv": ("write_dynamixel_csv", ".dynamixel.csv"),
    "dynamixel-json": ("write_dynamixel_json", ".dynamixel.json"),
    "header": ("write_c_header", ".h"),
}


def load_mechanism(source: str):
    """A reference mechanism by name, else a mechanism file (URDF, MJCF, native)."""
    if source in NAMES:
        return build(source)
    if not Path(source).exists():
        raise LooprigError(f"{source!r} is neither a file nor a reference mechanism ({', '.join(NAMES)})")
    from looprig.cad_import import load_mechanism as load_file

    return load_file(source)


def load_samples(path: str):
    """Track samples from a tracks file (JSON/NPZ) or a BVH file, in metres, z up."""
    if Path(path).suffix.lower() == ".bvh":
        from looprig.core.bvh import read_bvh

        return read_bvh(path).samples()
    from looprig.core.tracks import read_tracks

    return read_tracks(path).samples()


def load_curves(path: str):
    from looprig.core import export

    reader = export.read_json if Path(path).suffix.lower() == ".json" else export.read_csv
    return reader(path)


def _finite_or_none(value: float) -> float | None:
    """JSON has no infinity: an unlimited bound is written as null."""
    return float(value) if math.isfinite(value) else None


def mechanism_summary(mechanism) -> dict:
    """JSON-ready summary: counts, loops, mobility, actuators with limits, frames."""
    report = analyse_mobility(mechanism)
    summary = {"name": mechanism.name, **report.as_dict()}
    summary["actuator_list"] = [
        {
            "joint": j.name,
            "kind": j.kind.value,
            "motion": j.actuator.motion.value,
            "unit": j.actuator.unit,
            "lower": _finite_or_none(j.actuator.lower),
            "upper": _finite_or_none(j.actuator.upper),
            "velocity_limit": _finite_or_none(j.actuator.velocity_limit),
            "acceleration_limit": _finite_or_none(j.actuator.acceleration_limit),
            "hardware_id": j.actuator.hardware_id,
        }
        for j in mechanism.actuated_joints
    ]
    summary["frames"] = [f.name for f in mechanism.frames]
    return summary


def cmd_info(args) -> int:
    summary = mechanism_summary(load_mechanism(args.mechanism))
    if args.json:
        print(json.dumps(summary, allow_nan=False))
        return 0
    print(
        f"{summary['name']}: {summary['bodies']} bodies, {summary['joints']} joints, "
        f"{summary['actuators']} actuators, {summary['loops']} loops"
    )
    print(
        f"  dof {summary['dof']} (Grübler {summary['grubler']}), "
        f"redundant constraints {summary['redundant_constraints']}"
    )
    for a in summary["actuator_list"]:
        print(
            f"  actuator {a['joint']}: {a['kind']} {a['motion']} [{a['unit']}] "
            f"range {a['lower']}..{a['upper']}, velocity limit {a['velocity_limit']}"
        )
    if summary["frames"]:
        print(f"  frames: {', '.join(summary['frames'])}")
    return 0


def cmd_convert(args) -> int:
    from looprig.cad_import import load_model, save_mechanism

    written = save_mechanism(load_model(args.input), args.output)
    print(f"wrote {written}")
    return 0


class Progress:
    """A one-line progress indicator on stderr (silent with ``quiet`` or when stderr
    is not a terminal, so logs stay clean)."""

    def __init__(self, label: str, quiet: bool):
        self.label, self.quiet = label, quiet or not sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        end = "\n" if done == total else ""
        print(f"\r{self.label} {done}/{total} frames ({100 * done // total}%)", end=end, file=sys.stderr)


def write_outputs(curves, outdir: Path, formats, allow_violations: bool, mechanism=None) -> list[Path]:
    """Write curves in each format; refuses (LimitViolationError) unless allowed.

    With ``mechanism``, tick formats use its actuators' servo zero offsets,
    directions and travel per turn.
    """
    from looprig.core import export

    outdir.mkdir(parents=True, exist_ok=True)
    servos = export.DynamixelSettings.from_mechanism(mechanism) if mechanism is not None else None
    settings = {
        "dynamixel-csv": servos,
        "dynamixel-json": servos,
        "header": export.CHeaderSettings(dynamixel=servos) if servos is not None else None,
    }
    written = []
    for name in formats:
        writer, suffix = EXPORT_FORMATS[name]
        path = outdir / f"curves{suffix}"
        options = {} if settings.get(name) is None else {"settings": settings[name]}
        getattr(export, writer)(curves, path, allow_violations=allow_violations, **options)
        written.append(path)
    return written


def print_actuator_table(summary: dict, out=sys.stdout) -> None:
    """Per actuator: range used, peak velocity against the limit, violations."""
    print(f"{'actuator':<22} {'range used':>22} {'peak vel':>10} {'limit':>8}  violations", file=out)
    for a in summary["actuators"]:
        unit = a["unit"]
        limit = a["velocity_limit"]
        used = f"{a['min']:+.3f}..{a['max']:+.3f} {unit}"
        flag = ", ".join(
            f"{v['quantity']} {v['start_time']:.3f}-{v['end_time']:.3f} s" for v in a["violations"][:3]
        )
        more = len(a["violations"]) - 3
        flag += f" (+{more} more)" if more > 0 else ""
        print(
            f"{a['name']:<22} {used:>22} {a['peak_velocity']:>10.3f} "
            f"{'-' if limit is None else f'{limit:.3f}':>8}  {flag or 'none'}",
            file=out,
        )


def run_retarget(mechanism, samples, mapping, outdir: Path, formats, strict: bool, plot: bool, quiet: bool):
    """Retarget, write curves + report.json (+ plot); returns (exit code, summary)."""
    from looprig.core.retarget import retarget

    result = retarget(mechanism, samples, mapping, progress=Progress("retargeting", quiet))
    summary = result.summary()
    violations = sum(len(a["violations"]) for a in summary["actuators"])
    outdir.mkdir(parents=True, exist_ok=True)
    written = write_outputs(result.curves, outdir, formats, allow_violations=not strict, mechanism=mechanism)
    report = outdir / "report.json"
    report.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    written.append(report)
    if plot:
        from looprig.core.curves import all_violations
        from looprig.plotting import plot_curves

        written.append(plot_curves(result.curves, outdir / "curves.png", all_violations(result.curves)))
    if not quiet:
        print_actuator_table(summary)
        print(
            f"{summary['frames']} frames at {summary['rate_hz']:g} Hz: max position error "
            f"{summary['max_position_error_m']:.3g} m, max orientation error "
            f"{summary['max_orientation_error_rad']:.3g} rad, max constraint residual "
            f"{summary['max_residual']:.3g} m, unreachable frames {summary['unreachable_frames']}"
        )
        if violations:
            print(f"WARNING: {violations} limit violations; see report.json (exports record them)")
        for path in written:
            print(f"wrote {path}")
    return (EXIT_LIMITS if strict and violations else 0), summary


def cmd_retarget(args) -> int:
    from looprig.core.retarget import RetargetMapping

    mapping = RetargetMapping.load(args.map)
    if args.rate:
        mapping = type(mapping)(**{**mapping.__dict__, "rate": args.rate})
    code, _ = run_retarget(
        load_mechanism(args.mechanism),
        load_samples(args.tracks),
        mapping,
        Path(args.output),
        args.formats,
        args.strict,
        args.plot,
        args.quiet,
    )
    return code


def cmd_check(args) -> int:
    from looprig.core.curves import all_violations

    curves = load_curves(args.curves)
    violations = all_violations(curves)
    for v in violations:
        print(v.describe())
    if not violations:
        print(f"{curves.n_actuators} actuators, {curves.n_frames} frames: within limits")
    return EXIT_LIMITS if violations and args.strict else 0


def cmd_export(args) -> int:
    from looprig.core import export

    writer, _ = EXPORT_FORMATS[args.format]
    recorded = getattr(export, writer)(
        load_curves(args.curves), args.output, allow_violations=args.allow_violations
    )
    print(f"wrote {args.output}" + (f" with {len(recorded)} recorded violations" if recorded else ""))
    return 0


def cmd_plot(args) -> int:
    from looprig.core.curves import all_violations
    from looprig.plotting import plot_curves

    curves = load_curves(args.curves)
    print(f"wrote {plot_curves(curves, args.output, all_violations(curves))}")
    return 0


def cmd_demo(args) -> int:
    from looprig.demo import run_demo

    code = run_demo(Path(args.output), quiet=args.quiet)
    if args.blend:
        try:
            import bpy  # noqa: F401  (the Blender scene needs Blender's Python module)
        except ImportError:
            raise LooprigError(
                "--blend needs the bpy module (pip install bpy==5.0.1; `make test` installs it)"
            ) from None
        from looprig.blender_addon.demo import main as blender_demo

        code = max(code, blender_demo(["--blend", args.blend]))
    return code


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
    info.set_defaults(func=cmd_info)

    convert = sub.add_parser("convert", help="write a URDF/MJCF/native mechanism as a native file")
    convert.add_argument("input")
    convert.add_argument("output", help="native file, conventionally *.looprig.json")
    convert.set_defaults(func=cmd_convert)

    retarget = sub.add_parser("retarget", help="retarget a clip and write motor curves")
    retarget.add_argument("mechanism")
    retarget.add_argument("tracks", help="tracks file (.json/.npz) or .bvh")
    retarget.add_argument("--map", required=True, help="mapping file (JSON)")
    retarget.add_argument("-o", "--output", required=True, help="output folder")
    retarget.add_argument("--rate", type=float, help="solve rate [Hz] (overrides the mapping)")
    retarget.add_argument(
        "--formats", nargs="+", default=["csv"], choices=sorted(EXPORT_FORMATS), help="curve formats"
    )
    retarget.add_argument("--plot", action="store_true", help="also write curves.png")
    retarget.add_argument(
        "--strict", action="store_true", help="refuse to write curves that break limits (exit 3)"
    )
    retarget.add_argument("--quiet", action="store_true")
    retarget.set_defaults(func=cmd_retarget)

    check = sub.add_parser("check", help="list the limit violations of a curves file")
    check.add_argument("curves")
    check.add_argument("--strict", action="store_true", help="exit 3 when there are violations")
    check.set_defaults(func=cmd_check)

    exp = sub.add_parser("export", help="convert curves to a hardware format")
    exp.add_argument("curves")
    exp.add_argument("--format", required=True, choices=sorted(EXPORT_FORMATS))
    exp.add_argument("-o", "--output", required=True)
    exp.add_argument(
        "--allow-violations",
        action="store_true",
        help="write despite limit violations (recorded in the file)",
    )
    exp.set_defaults(func=cmd_export)

    plot = sub.add_parser("plot", help="plot position and velocity with limit bands")
    plot.add_argument("curves")
    plot.add_argument("-o", "--output", required=True, help="PNG file")
    plot.set_defaults(func=cmd_plot)

    demo = sub.add_parser("demo", help="run the main job on the bundled robot and clip")
    demo.add_argument("-o", "--output", default="out/demo", help="output folder")
    demo.add_argument("--quiet", action="store_true")
    demo.add_argument(
        "--blend", help="also write the Blender demo scene (four-bar retargeted and baked) to this .blend"
    )
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except LooprigError as error:
        if args.debug:
            raise
        from looprig.core.curves import LimitViolationError

        print(f"looprig: error: {error}", file=sys.stderr)
        return EXIT_LIMITS if isinstance(error, LimitViolationError) else EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
