"""Plots of actuator curves with their limits (matplotlib, imported only when used).

Lives outside ``looprig.core`` because core imports numpy and scipy only.
Figures are drawn with matplotlib's Agg canvas directly, so plotting neither
needs a display nor switches the backend of an application that uses pyplot.
"""

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core.curves.actuator_curves import DERIVATIVE, ActuatorCurves, derivative_unit
from .core.curves.limit_checks import all_violations
from .core.curves.violations import Violation
from .core.errors import LooprigError
from .outputs import write_bytes

INSTALL_HINT = (
    "plotting actuator curves needs matplotlib; install it with "
    "pip install 'looprig[plot]' (or pip install matplotlib)"
)


class MissingDependencyError(LooprigError, ImportError):
    """An optional dependency needed by the called function is not installed."""


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError(f"{INSTALL_HINT} ({exc})") from None
    return Figure, FigureCanvasAgg


@dataclass(frozen=True)
class PlotSettings:
    """Look of :func:`plot_curves`.

    width: figure width [inch]; row_height: height per actuator [inch];
    dpi: PNG resolution [dots/inch]; derivative: "spline" or "central" (how
    velocities are computed, see :mod:`looprig.core.curves`).
    """

    width: float = 11.0
    row_height: float = 2.6
    dpi: int = 110
    derivative: str = DERIVATIVE


_POSITION_COLOUR = "#1f5fa8"
_VELOCITY_COLOUR = "#2a8a3e"
_LIMIT_COLOUR = "#555555"
_BAND_COLOUR = "#d9ead3"
_VIOLATION_COLOUR = "#d62728"
_ACCELERATION_COLOUR = "#ff7f0e"


def plot_curves(
    curves: ActuatorCurves,
    path_png,
    violations: Sequence[Violation] | None = None,
    settings: PlotSettings | None = None,
) -> Path:
    """Save a PNG with, per actuator, position and velocity over time.

    One row per actuator: position [rad or m] on the left (with the lower and
    upper limits dashed), velocity [rad/s or m/s] on the right with the allowed
    band ``-limit..+limit`` shaded green. Intervals in ``violations`` (default:
    :func:`~looprig.core.curves.limit_checks.all_violations` of ``curves``) are shaded red
    (position and tick-range ones on the position plot, velocity ones on the
    velocity plot) or orange (acceleration, on the velocity plot), widened by
    half a sample each way so a single violating sample shows. The file is
    written by :func:`looprig.outputs.write_bytes` (atomic, regular files only).
    Returns the path written.
    """
    settings = settings or PlotSettings()
    Figure, FigureCanvasAgg = _matplotlib()
    if violations is None:
        violations = all_violations(curves)
    t = curves.times
    velocities = curves.velocities(settings.derivative)
    half_step = 0.5 * float(np.median(np.diff(t))) if curves.n_frames > 1 else 0.0
    n = curves.n_actuators
    fig = Figure(figsize=(settings.width, settings.row_height * n + 0.6), dpi=settings.dpi)
    FigureCanvasAgg(fig)
    axes = np.asarray(fig.subplots(n, 2, sharex=True, squeeze=False))
    flagged = sum(1 for v in violations if v.actuator in curves.names)
    fig.suptitle(
        f"Actuator curves: {n} actuator(s), {curves.n_frames} frames, "
        f"{curves.duration:.3g} s; {flagged} limit violation(s) shaded",
        fontsize=11,
    )
    for a, name in enumerate(curves.names):
        unit = curves.units[a]
        vel_unit = derivative_unit(unit, 1)
        ax_x, ax_v = axes[a]
        ax_x.plot(t, curves.values[:, a], color=_POSITION_COLOUR, lw=1.4)
        for bound, label in ((curves.lower[a], "lower"), (curves.upper[a], "upper")):
            if np.isfinite(bound):
                ax_x.axhline(bound, color=_LIMIT_COLOUR, ls="--", lw=1.0, label=f"{label} limit")
        hw = curves.hardware_ids[a]
        label = f"{name} (id {hw})" if hw is not None else name
        ax_x.set_title(f"{label}: position [{unit}]", fontsize=10)
        ax_x.set_ylabel(f"[{unit}]")

        limit = curves.velocity_limit[a]
        if np.isfinite(limit):
            band = f"allowed ±{limit:.3g} {vel_unit}"
            ax_v.axhspan(-limit, limit, color=_BAND_COLOUR, zorder=0, label=band)
            ax_v.axhline(limit, color=_LIMIT_COLOUR, ls="--", lw=1.0)
            ax_v.axhline(-limit, color=_LIMIT_COLOUR, ls="--", lw=1.0)
        ax_v.plot(t, velocities[:, a], color=_VELOCITY_COLOUR, lw=1.4)
        limit_text = f"limit ±{limit:.3g}" if np.isfinite(limit) else "no limit"
        ax_v.set_title(f"{label}: velocity [{vel_unit}], {limit_text}", fontsize=10)
        ax_v.set_ylabel(f"[{vel_unit}]")

        labelled: set[str] = set()
        for v in violations:
            if v.actuator != name:
                continue
            ax = ax_x if v.quantity in ("position", "tick_range") else ax_v
            colour = _ACCELERATION_COLOUR if v.quantity == "acceleration" else _VIOLATION_COLOUR
            label = f"{v.quantity.replace('_', ' ')} limit violated"
            ax.axvspan(
                v.start_time - half_step,
                v.end_time + half_step,
                color=colour,
                alpha=0.3,
                lw=0,
                zorder=1,
                label=None if label in labelled else label,
            )
            labelled.add(label)
        for ax in (ax_x, ax_v):
            ax.grid(True, lw=0.4, alpha=0.5)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper right", fontsize=8, framealpha=0.8)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    # fixed margins [in] (tight_layout measures every label: seconds for many motors)
    height, width = settings.row_height * n + 0.6, settings.width
    left, right, gap, top, bottom, between = 0.85, 0.15, 0.95, 1.0, 0.5, 0.55
    panel_width = (width - left - right - gap) / 2.0
    panel_height = (height - top - bottom - between * (n - 1)) / n
    fig.subplots_adjust(
        left=left / width,
        right=1.0 - right / width,
        bottom=bottom / height,
        top=1.0 - top / height,
        wspace=gap / panel_width,
        hspace=between / panel_height,
    )
    image = io.BytesIO()
    fig.savefig(image, format="png")
    return write_bytes(Path(os.fspath(path_png)), image.getvalue())
