"""Text for people on the terminal: progress lines, tables and one-line warnings (the CLI prints them)."""

import sys

from . import app


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


def print_actuator_table(summary: dict, out=None) -> None:
    """Per actuator: range used, peak velocity against the limit, violations."""
    out = out or sys.stdout
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


def print_retarget(outcome: app.RetargetOutcome) -> None:
    """The actuator table, the accuracy line and the files written."""
    summary = outcome.summary
    print_actuator_table(summary)
    print(
        f"{summary['frames']} frames at {summary['rate_hz']:g} Hz: max position error "
        f"{app.number_text(summary['max_position_error_m'])} m, max orientation error "
        f"{app.number_text(summary['max_orientation_error_rad'])} rad, "
        + (
            f"max aim error {app.number_text(summary['max_aim_error_rad'])} rad, "
            if summary.get("max_aim_error_rad") is not None
            else ""
        )
        + "max constraint residual "
        f"{app.number_text(summary['max_residual'])} m, unreachable frames {summary['unreachable_frames']}"
    )
    for path in outcome.written:
        print(f"wrote {path}")


def warn_findings(outcome: app.RetargetOutcome, folder) -> None:
    """Findings that did not block writing, as one warning line each (even with --quiet)."""
    for finding in outcome.findings:
        recorded = " (recorded in the files written)" if finding.kind == "limits" else ""
        print(f"looprig: warning: {folder}: {finding.message}{recorded}", file=sys.stderr)


class JobsProgress:
    """A bar across the jobs of a batch on stderr (on a terminal); one line per finished job otherwise."""

    def __init__(self, quiet: bool):
        self.quiet, self.bar, self.failed = quiet, sys.stderr.isatty(), 0

    def __call__(self, result, done: int, total: int) -> None:
        self.failed += not result.passed
        if self.quiet:
            return
        if not self.bar:
            print(f"[{done}/{total}] {result.name}: {result.status}", file=sys.stderr)
            return
        filled = round(30 * done / total)
        print(
            f"\rbatch [{'#' * filled}{'-' * (30 - filled)}] {done}/{total} jobs, {self.failed} not passed",
            end="\n" if done == total else "",
            file=sys.stderr,
        )


def print_jobs_table(results, out=None) -> None:
    """job, frames, worst error, violations, status, time: one row per job."""
    out = out or sys.stdout
    print(
        f"{'job':<24} {'frames':>7} {'worst error':>12} {'violations':>10}  {'status':<8} {'time':>8}",
        file=out,
    )
    for r in results:
        worst = "-" if r.worst_position_error_m is None else f"{r.worst_position_error_m:.3g} m"
        print(
            f"{r.name:<24} {r.frames:>7} {worst:>12} {r.violations:>10}  {r.status:<8} {r.seconds:>7.1f}s",
            file=out,
        )
        if r.message:
            print(f"  {r.message}", file=out)


def print_tracking(report, on_stop: str) -> None:
    """Per servo: lag, RMS and largest error once the lag is removed; then the totals."""
    print(f"{'servo':<22} {'lag':>8} {'rms error':>12} {'max error':>12}")
    for k, name in enumerate(report.names):
        unit = report.units[k]
        print(
            f"{name:<22} {1000 * report.lag_s[k]:>6.1f}ms {report.rms_error[k]:>9.3g} {unit:<3}"
            f"{report.max_error[k]:>9.3g} {unit}"
        )
    print(
        f"{report.frames_sent} frames sent, {report.samples} read back ({report.missed_samples} unanswered), "
        f"{report.late_frames} late; " + ("servos hold the last goal" if on_stop == "hold" else "torque off")
    )
