"""Curve plots: the PNG is written, shows violations, and matplotlib stays out of core."""

import subprocess
import sys

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import check_limits
from looprig.core.curves.violations import Violation

from looprig.plotting import MissingDependencyError, PlotSettings, plot_curves

matplotlib_image = pytest.importorskip("matplotlib.image")


def two_actuators(velocity_limit=(5.0, 0.1)) -> ActuatorCurves:
    t = np.arange(201) / 100
    return ActuatorCurves(
        t,
        np.column_stack([np.sin(2 * np.pi * t), 0.05 * np.cos(3 * t)]),
        ("crank_joint", "slider"),
        units=("rad", "m"),
        velocity_limit=velocity_limit,
        lower=[-0.9, -np.inf],
        upper=[0.95, np.inf],
        hardware_ids=(1, 2),
    )


def red_pixels(path) -> int:
    """Pixels of the violation shading (red at 30 % over white or over the green band)."""
    image = matplotlib_image.imread(path)[..., :3]
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    return int(np.sum((r > 0.85) & (g < 0.8) & (b < 0.8) & (r - g > 0.1)))


def test_plot_writes_a_png_of_the_requested_size(tmp_path):
    settings = PlotSettings(width=8.0, row_height=2.0, dpi=80)
    path = plot_curves(two_actuators(), tmp_path / "curves.png", settings=settings)
    assert path == tmp_path / "curves.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width = matplotlib_image.imread(path).shape[:2]
    assert (width, height) == (8 * 80, round((2 * 2.0 + 0.6) * 80))


def test_violations_are_shaded_only_when_present(tmp_path):
    loose = two_actuators(velocity_limit=(100.0, 100.0))
    loose = ActuatorCurves(
        loose.times, loose.values, loose.names, loose.units, velocity_limit=loose.velocity_limit
    )
    assert check_limits(loose) == []
    plot_curves(loose, tmp_path / "clean.png")
    tight = two_actuators()
    assert check_limits(tight)
    plot_curves(tight, tmp_path / "flagged.png")  # violations computed by default
    assert red_pixels(tmp_path / "clean.png") == 0
    assert red_pixels(tmp_path / "flagged.png") > 1000
    single = [Violation("slider", "velocity", 1.0, 1.0, 0.2, 0.1, 1.0, "m/s")]
    plot_curves(loose, tmp_path / "single.png", violations=single)  # one sample still shows
    assert red_pixels(tmp_path / "single.png") > 50


def test_single_frame_curves_plot(tmp_path):
    one = ActuatorCurves([0.0], [[0.3]], ("a",))
    assert plot_curves(one, tmp_path / "one.png").exists()


def test_missing_matplotlib_gives_an_install_hint(tmp_path, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError, match="pip install matplotlib"):
        plot_curves(two_actuators(), tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


def test_core_curves_and_exports_do_not_import_matplotlib():
    code = (
        "import sys, looprig.core.curves, looprig.core.export; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'bpy', 'maya')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
