"""The app layer: what the command line, the demo, batch jobs and host operators call.

Curve files (export formats, writing, exporting, plotting) are :mod:`looprig.curve_files`.

Functions here load inputs, run a retarget and write its outputs; they return
results and never print (the CLI prints). Everything below them is ``core``
(numerics) and ``cad_import`` (files to mechanisms).
"""

import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .core import LooprigError, analyse_mobility
from .core.library import NAMES, build
from .core.model.parts import LIMIT_FIELDS
from .curve_files import EXPORT_FORMATS, TICK_FORMATS, dynamixel_settings, with_tick_plan, write_curves


def load_mechanism(source: str):
    """A reference mechanism by name, else a mechanism file (URDF, MJCF, native)."""
    if source in NAMES:
        return build(source)
    if not Path(source).exists():
        raise LooprigError(f"{source!r} is neither a file nor a reference mechanism ({', '.join(NAMES)})")
    from .cad_import import load_mechanism as load_file

    return load_file(source, meshes=False)  # kinematics and masses; no mesh is displayed here


def load_samples(path):
    """Track samples from a tracks file (JSON/NPZ) or a BVH file, in metres, z up."""
    if Path(path).suffix.lower() == ".bvh":
        from .core.tracks.bvh import read_bvh

        return read_bvh(path).samples()
    from .core.tracks import read_tracks

    return read_tracks(path).samples()


#: Length of the transition between chained clips unless one is given [s].
CHAIN_TRANSITION = 0.3


def load_chain(paths: Sequence, rate: float, transition: float = CHAIN_TRANSITION):
    """Tracks files played in sequence with ``transition`` [s] between each pair, as one
    clip at ``rate`` [Hz] (:func:`looprig.core.tracks.chain.chain_clips`), each part named for
    its file."""
    from .core.tracks.chain import chain_clips

    names = [Path(p).name.split(".")[0] for p in paths]
    return chain_clips([load_samples(p) for p in paths], transition, rate, names)


def _finite_or_none(value: float) -> float | None:
    """JSON has no infinity: an unlimited bound is written as null."""
    return float(value) if math.isfinite(value) else None


def mechanism_summary(mechanism) -> dict:
    """JSON-ready summary: counts, loops, mobility, actuators with limits, frames.

    Each actuator carries its servo model (a catalogue name, or None) and
    ``limit_sources``: where each limit came from (mapping, file, catalogue,
    derived or none; see docs/files.md)."""
    report = analyse_mobility(mechanism)
    summary = {"name": mechanism.name, **report.as_dict()}
    summary["actuator_list"] = [
        {
            "name": j.actuator_name,
            "joint": j.name,
            "kind": j.kind.value,
            "motion": j.actuator.motion.value,
            "unit": j.actuator.unit,
            "lower": _finite_or_none(j.actuator.lower),
            "upper": _finite_or_none(j.actuator.upper),
            "velocity_limit": _finite_or_none(j.actuator.velocity_limit),
            "acceleration_limit": _finite_or_none(j.actuator.acceleration_limit),
            "hardware_id": j.actuator.hardware_id,
            "servo": j.actuator.servo,
            "limit_sources": {k: j.actuator.limit_source(k).value for k in LIMIT_FIELDS},
        }
        for j in mechanism.actuated_joints
    ]
    summary["frames"] = [f.name for f in mechanism.frames]
    return summary


def convert_mechanism(source, output) -> Path:
    """Write a URDF/MJCF/native mechanism file as a native looprig file; returns its path."""
    from .cad_import import load_model, save_mechanism

    return save_mechanism(load_model(source), output)


#: A frame whose largest constraint residual exceeds this [m] has a robot that came apart.
RESIDUAL_TOLERANCE_M = 1e-6
#: Most frames a retarget solves (clip duration x rate); one million is 14 minutes at 1200 Hz.
MAX_FRAMES = 1_000_000
#: Every file a retarget run writes into its folder (see looprig.outputs.StagedSet).
REPORT_NAME, REFUSED_REPORT_NAME, PLOT_NAME = "report.json", "report.refused.json", "curves.png"
RUN_OUTPUT_NAMES = (
    *(f"curves{suffix}" for _, suffix in EXPORT_FORMATS.values()),
    "curves.plain.meta.json",  # the plain CSV's side file
    PLOT_NAME,
    REFUSED_REPORT_NAME,
    "looprig-job.json",  # a batch job's stamp (looprig.batch)
    REPORT_NAME,
)


def number_text(value) -> str:
    """A report number for people; None stands for a value that was not finite."""
    return "non-finite" if value is None else f"{value:.3g}"


def json_ready(value):
    """``value`` with every non-finite float replaced by None (JSON has no NaN or infinity)."""
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def check_frame_count(samples, rate: float) -> int:
    """The number of frames a clip resampled at ``rate`` [Hz] has; refuses more than :data:`MAX_FRAMES`."""
    times = samples.times
    duration = float(times[-1] - times[0]) if len(times) > 1 else 0.0
    frames = duration * rate + 1.0
    if not math.isfinite(frames) or frames > MAX_FRAMES:
        raise LooprigError(
            f"a {duration:.4g} s clip at {rate:g} Hz is {frames:.3g} frames, more than looprig's limit of "
            f"{MAX_FRAMES:,}; lower the rate"
        )
    return int(frames)


@dataclass(frozen=True)
class Finding:
    """Something wrong with a retarget's result: ``kind`` is limits, limited, residual or unreachable;
    ``blocking``: whether it stopped the outputs from being written; ``override``: the
    command-line flag that lets it through."""

    kind: str
    message: str
    blocking: bool
    override: str


class RetargetRefused(LooprigError):
    """Outputs not written because of blocking findings; ``summary`` is the run's report."""

    def __init__(self, message: str, summary: dict, findings: Sequence[Finding]):
        super().__init__(message)
        self.summary, self.findings = summary, list(findings)


def findings_of(
    summary: dict, strict: bool, allow_unassembled: bool = False, allow_unreachable: bool = False
) -> list[Finding]:
    """The findings of a retarget's report and whether each blocks writing.

    Limit violations block with ``strict`` (else they are recorded in every file);
    frames a motor limit keeps from their targets (``limit_mode`` hold) and some
    unreachable frames block with ``strict``; every frame unreachable blocks
    unless ``allow_unreachable``; a constraint residual above
    :data:`RESIDUAL_TOLERANCE_M` blocks unless ``allow_unassembled``.
    """
    found = []
    violations = [(a["name"], v) for a in summary["actuators"] for v in a["violations"]]
    if violations:
        first = ", ".join(
            f"{name} {v['quantity']} {v['start_time']:.3f}-{v['end_time']:.3f} s"
            for name, v in violations[:3]
        )
        more = f" (+{len(violations) - 3} more)" if len(violations) > 3 else ""
        found.append(
            Finding("limits", f"{len(violations)} limit violation(s): {first}{more}", strict, "no --strict")
        )
    frames, unreachable = summary["frames"], summary["unreachable_frames"]
    limited = summary.get("limited_frames", 0)
    if limited:
        motors = ", ".join(
            f"{name} ({'/'.join(kinds)})" for name, kinds in list(summary["limited_by"].items())[:3]
        )
        worst = number_text(summary["max_position_error_m"])
        message = (
            f"{limited} of {frames} frames limited by motor limits: {motors} (position error up to {worst} m)"
        )
        found.append(Finding("limited", message, strict, "no --strict"))
    if unreachable:
        all_frames = unreachable == frames
        worst = number_text(summary["max_position_error_m"])
        message = f"{unreachable} of {frames} frames unreachable (position error up to {worst} m)"
        blocking = (all_frames and not allow_unreachable) or strict
        override = "--allow-unreachable" if all_frames else "no --strict"
        found.append(Finding("unreachable", message, blocking, override))
    residual = summary["max_residual"]
    if residual is None or residual > RESIDUAL_TOLERANCE_M:
        message = (
            f"the robot came apart: constraint residual {number_text(residual)} m "
            f"> {RESIDUAL_TOLERANCE_M:g} m"
        )
        found.append(Finding("residual", message, not allow_unassembled, "--allow-unassembled"))
    return found


@dataclass
class RetargetOutcome:
    """What :func:`retarget_to_folder` did.

    result: the :class:`~looprig.core.retarget.RetargetResult`; summary: its
    JSON-ready report (as written to report.json); written: the files written;
    findings: what is wrong with the result without blocking it.
    """

    result: object
    summary: dict
    written: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return sum(len(a["violations"]) for a in self.summary["actuators"])


def retarget_to_folder(
    mechanism,
    samples,
    mapping,
    outdir: Path,
    formats: Sequence[str] = ("csv",),
    strict: bool = False,
    plot: bool = False,
    progress: Callable[[int, int], None] | None = None,
    allow_unassembled: bool = False,
    allow_unreachable: bool = False,
    inputs: Sequence = (),
    dynamixel_mode: str = "auto",
    pins: Sequence[float] = (),
    chain=None,
) -> RetargetOutcome:
    """Retarget a clip and write the curves, report.json (and curves.png with ``plot``).

    With the mapping's timing ``stretch`` the clip is retimed with ``pins`` (clip
    times [s]) kept at their times (:func:`looprig.retime.retarget_timed`). chain:
    the :class:`~looprig.core.tracks.chain.Chain` whose ``samples`` these are (clips played in
    sequence): its transition frames are neither limited nor unreachable, and the
    report lists its parts (``chain``).

    The outputs are written as one set (see :mod:`looprig.outputs`); blocking
    findings (:func:`findings_of`) raise :class:`RetargetRefused` with nothing
    written but report.refused.json. ``inputs``: the run's input files, never
    overwritten. Tick formats are written in ``dynamixel_mode`` (one of
    :data:`~looprig.core.export.DXL_MODE_CHOICES`); the report then names the mode
    and lists the tick-range violations with the others (:func:`~looprig.curve_files.with_tick_plan`).
    """
    from .core.curves.limit_checks import LimitCheckSettings, all_violations
    from .core.curves.violations import LimitViolationError
    from .outputs import OutputError, StagedSet, output_folder, write_text
    from .retime import retarget_timed

    check_frame_count(samples, mapping.rate)
    output_folder(outdir, inputs)  # a bad output folder is found before the solve, not after
    if chain is not None and mapping.timing != "keep":
        raise LooprigError(
            "clips played in sequence are solved with timing 'keep' (their transitions are timed)"
        )
    result = retarget_timed(mechanism, samples, mapping, pins, progress=progress)
    released = chain.release(result) if chain is not None else 0
    summary = result.summary()
    if chain is not None:
        summary["chain"] = {**chain.to_dict(), "transition_frames": released}
    if any(f in TICK_FORMATS for f in formats):
        from .core.export import plan_ticks

        servos = dynamixel_settings(result.curves, mechanism, dynamixel_mode)
        summary = with_tick_plan(summary, plan_ticks(result.curves, servos))
    summary = json_ready(summary)
    report = json.dumps(summary, indent=2, allow_nan=False) + "\n"
    found = findings_of(summary, strict, allow_unassembled, allow_unreachable)
    outputs = StagedSet(outdir, RUN_OUTPUT_NAMES, last=REPORT_NAME, inputs=inputs)
    try:
        blocking = [f for f in found if f.blocking]
        if blocking:
            overrides = ", ".join(sorted({f.override for f in blocking}))
            raise RetargetRefused(
                f"refusing to write the curves to {outputs.folder}: "
                + "; ".join(f.message for f in blocking)
                + f" (see {REFUSED_REPORT_NAME}; to write anyway: {overrides})",
                summary,
                found,
            )
        try:
            write_curves(
                result.curves,
                outputs.staging,
                formats,
                allow_violations=not strict,
                mechanism=mechanism,
                dynamixel_mode=dynamixel_mode,
                cyclic=result.mapping.cyclic,
            )
        except LimitViolationError as error:  # hardware units found out of range by a writer
            raise RetargetRefused(str(error).splitlines()[0], summary, found) from None
        if plot:
            from .plotting import plot_curves

            looped = LimitCheckSettings(cyclic=result.mapping.cyclic)
            plot_curves(result.curves, outputs.path(PLOT_NAME), all_violations(result.curves, looped))
        write_text(outputs.path(REPORT_NAME), report)
    except OSError as error:
        outputs.abort()
        if isinstance(error, LooprigError):
            raise
        raise OutputError(outputs.folder, error.strerror or type(error).__name__) from None
    except BaseException:
        outputs.abort()
        if isinstance(sys.exc_info()[1], RetargetRefused):
            write_text(outputs.folder / REFUSED_REPORT_NAME, report)
        raise
    return RetargetOutcome(result, summary, outputs.commit(), [f for f in found if not f.blocking])
