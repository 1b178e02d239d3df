"""The ``looprig`` command line.

Subcommands: ``info`` (mechanism summary as text or JSON), ``demo`` (the main
job on the bundled default). Errors print one clear line and exit non-zero;
``--debug`` shows the traceback.
"""

import argparse
import json
import math
import sys

from looprig.core import LooprigError, analyse_mobility
from looprig.core.library import NAMES, build


def load_mechanism(source: str):
    """A reference mechanism by name (files come with the CAD import)."""
    return build(source)


def _finite_or_none(value: float) -> float | None:
    """JSON has no infinity: an unlimited bound is written as null."""
    return float(value) if math.isfinite(value) else None


def mechanism_summary(mechanism) -> dict:
    """JSON-ready summary: counts, loops, mobility, actuators with limits."""
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
    mechanism = load_mechanism(args.mechanism)
    summary = mechanism_summary(mechanism)
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
    return 0


def cmd_demo(args) -> int:
    from looprig.demo import run_demo

    return run_demo(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="looprig", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="summarise a mechanism")
    info.add_argument("mechanism", help=f"reference mechanism: {', '.join(NAMES)}")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(func=cmd_info)

    demo = sub.add_parser("demo", help="run the main job on the bundled default")
    demo.add_argument("-o", "--output", default="out/demo", help="output folder")
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
        print(f"looprig: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
