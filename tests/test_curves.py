"""Actuator curves: derivatives against closed forms, limit checks, resampling."""

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import (
    LimitCheckSettings,
    all_violations,
    check_limits,
    require_within_limits,
)
from looprig.core.curves.resample import (
    PeakLossError,
    PeakLossWarning,
    ResampleSettings,
    compare_peaks,
    resample,
)
from looprig.core.curves.violations import LimitViolationError, Violation, merge_violations
from looprig.core.errors import CurvesError
from looprig.core.library.planar import fourbar, slider_crank
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.parts import ActuatedMotion, Actuator, Body, Joint, JointKind

F_HZ = 1.3  # test frequency [Hz]
W = 2 * np.pi * F_HZ  # [rad/s]


def sine_curves(rate, duration=2.0, amplitude=1.0, **limits) -> ActuatorCurves:
    t = np.arange(round(duration * rate) + 1) / rate
    return ActuatorCurves(t, amplitude * np.sin(W * t), ("crank",), **limits)


# --------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize("rate", [100.0, 200.0])
def test_derivatives_of_sine_match_closed_form(rate):
    """x = sin(w t): v = w cos(w t), a = -w^2 sin(w t).

    With hw = h * w (h = 1 / rate), the stated tolerances relative to the peaks
    w and w^2 are: spline velocity (hw)^3, spline acceleration (hw)^2,
    central velocity (hw)^2 / 2, central acceleration (hw)^2.
    """
    c = sine_curves(rate)
    t = c.times
    hw = W / rate
    v_true, a_true = W * np.cos(W * t), -(W**2) * np.sin(W * t)
    err = lambda got, true, peak: np.max(np.abs(got[:, 0] - true)) / peak  # noqa: E731
    assert err(c.velocities("spline"), v_true, W) < hw**3
    assert err(c.accelerations("spline"), a_true, W**2) < hw**2
    assert err(c.velocities("central"), v_true, W) < hw**2 / 2
    assert err(c.accelerations("central"), a_true, W**2) < hw**2


def test_derivatives_exact_for_low_degree_polynomials():
    """Spline: exact for cubics on any times. Central: velocity exact for quadratics,
    acceleration exact for quadratics on any times and for cubics on uniform times."""
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0.0, 1.0, 25))
    cubic = ActuatorCurves(t, 2 * t**3 - t**2 + 0.5 * t - 1, ("p",))
    np.testing.assert_allclose(cubic.velocities("spline")[:, 0], 6 * t**2 - 2 * t + 0.5, atol=1e-9)
    np.testing.assert_allclose(cubic.accelerations("spline")[:, 0], 12 * t - 2, atol=1e-8)
    quad = ActuatorCurves(t, 3 * t**2 - t, ("p",))
    np.testing.assert_allclose(quad.velocities("central")[:, 0], 6 * t - 1, atol=1e-9)
    np.testing.assert_allclose(quad.accelerations("central")[:, 0], 6.0, atol=1e-7)
    u = np.arange(20) / 10
    cubic_u = ActuatorCurves(u, u**3, ("p",))
    np.testing.assert_allclose(cubic_u.accelerations("central")[:, 0], 6 * u, atol=1e-9)


def test_short_curves_have_derivatives():
    one = ActuatorCurves([0.0], [[1.0]], ("a",))
    assert one.velocities().tolist() == [[0.0]] and one.rate_hz is None
    two = ActuatorCurves([0.0, 0.5], [[0.0], [1.0]], ("a",))
    np.testing.assert_allclose(two.velocities("central"), [[2.0], [2.0]])
    np.testing.assert_allclose(two.velocities("spline"), [[2.0], [2.0]])


# --------------------------------------------------------------------------- construction
def test_from_mechanism_takes_actuator_records():
    mech = fourbar()
    values = np.linspace(0.0, 1.0, 11)[:, None]
    c = ActuatorCurves.from_mechanism(mech, values, rate_hz=50.0, start_time=1.0)
    assert c.names == ("crank_joint",) and c.units == ("rad",)
    assert c.hardware_ids == (1,)
    assert c.velocity_limit.tolist() == [6.0] and np.isinf(c.acceleration_limit).all()
    assert c.rate_hz == 50.0 and c.times[0] == 1.0 and c.times[-1] == pytest.approx(1.2)
    assert c.n_frames == 11 and c.n_actuators == 1
    np.testing.assert_array_equal(c.column("crank_joint"), values[:, 0])
    assert not c.values.flags.writeable


def test_from_mechanism_unwraps_angles_but_not_displacements():
    ground = Body("ground", grounded=True)
    arm = Body("arm", position=np.array([0.1, 0.0, 0.0]))
    slider = Body("slider", position=np.array([0.0, 0.2, 0.0]))
    mech = Mechanism(
        [ground, arm, slider],
        [
            Joint("spin", JointKind.REVOLUTE, "ground", "arm", actuator=Actuator(hardware_id=3)),
            Joint(
                "push",
                JointKind.PRISMATIC,
                "ground",
                "slider",
                axis=np.array([0, 1.0, 0]),
                actuator=Actuator(ActuatedMotion.DISPLACEMENT, lower=-5, upper=5),
            ),
        ],
    )
    ramp = np.linspace(0.0, 4 * np.pi, 41)
    wrapped = np.angle(np.exp(1j * ramp))  # read-offs modulo 2 pi
    jumpy = np.where(np.arange(41) % 2 == 0, 0.0, 4.0)  # [m], large steps stay
    c = ActuatorCurves.from_mechanism(mech, np.column_stack([wrapped, jumpy]), 10.0)
    np.testing.assert_allclose(c.column("spin"), ramp, atol=1e-12)
    np.testing.assert_array_equal(c.column("push"), jumpy)
    assert c.units == ("rad", "m") and c.hardware_ids == (3, None)
    both = np.column_stack([wrapped, jumpy])
    c_raw = ActuatorCurves.from_mechanism(mech, both, 10.0, unwrap=False)
    np.testing.assert_array_equal(c_raw.column("spin"), wrapped)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": [[0.0], [np.nan]]}, "actuator 'a': value is nan at frame 1"),
        ({"times": [0.0, 0.0]}, "increase strictly"),
        ({"names": ("a", "a"), "values": [[0, 0], [1, 1]]}, "duplicate actuator names: a"),
        ({"units": ("deg",)}, "actuator 'a': unit 'deg'"),
        ({"lower": 1.0, "upper": 0.0}, "actuator 'a': lower limit 1.0 exceeds upper"),
        ({"velocity_limit": 0.0}, "actuator 'a': velocity and acceleration limits must be"),
        ({"values": [[0.0, 1.0]]}, "shape (frames, actuators) = (2, 1)"),
        ({"names": ()}, "at least one actuator"),
    ],
)
def test_malformed_curves_raise_naming_the_problem(kwargs, message):
    args = {"times": [0.0, 0.1], "values": [[0.0], [1.0]], "names": ("a",), **kwargs}
    with pytest.raises(CurvesError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ActuatorCurves(**args)


def test_unknown_actuator_lists_the_valid_ones():
    c = ActuatorCurves.from_mechanism(slider_crank(), np.zeros((3, 1)), 10.0)
    with pytest.raises(CurvesError, match="no actuator 'crank'; actuators are: crank_joint"):
        c.index("crank")


def test_non_uniform_times_have_no_rate():
    c = ActuatorCurves([0.0, 0.1, 0.25], [[0.0], [1.0], [2.0]], ("a",))
    assert c.rate_hz is None and c.duration == 0.25


# --------------------------------------------------------------------------- limit checks
def _expected_intervals(mask: np.ndarray, t: np.ndarray) -> list[tuple[float, float]]:
    out, start = [], None
    for i, bad in enumerate(mask):
        if bad and start is None:
            start = i
        if start is not None and (not bad or i == len(mask) - 1):
            end = i if bad else i - 1
            out.append((t[start], t[end]))
            start = None
    return out


def test_position_violations_of_a_sine_are_the_analytic_intervals():
    """sin(w t) > 0.8 for t in (asin(0.8) / w, (pi - asin(0.8)) / w) + k T, T = 1 / 1.3 s;
    sin(w t) < -0.9 in the half period after. Peaks are the extreme samples."""
    rate = 100.0
    c = sine_curves(rate, lower=-0.9, upper=0.8, velocity_limit=np.inf)
    found = [v for v in check_limits(c) if v.quantity == "position"]
    period = 1.0 / F_HZ
    expected = []
    for k in range(3):
        for lo_, hi_, limit, sign in (
            (math.asin(0.8), math.pi - math.asin(0.8), 0.8, 1),
            (math.pi + math.asin(0.9), 2 * math.pi - math.asin(0.9), -0.9, -1),
        ):
            start, end = lo_ / W + k * period, hi_ / W + k * period
            if start < c.times[-1]:
                expected.append((start, min(end, c.times[-1]), limit, sign))
    assert len(found) == len(expected)
    for v, (start, end, limit, sign) in zip(found, expected, strict=True):
        assert abs(v.start_time - start) <= 1 / rate and abs(v.end_time - end) <= 1 / rate
        assert v.limit == limit and v.unit == "rad" and v.actuator == "crank"
        inside = (c.times >= v.start_time) & (c.times <= v.end_time)
        assert v.peak == (c.values[inside, 0].max() if sign > 0 else c.values[inside, 0].min())
        assert abs(v.peak - sign) < 1 - math.cos(W / rate / 2) + 1e-12  # sampled peak of a sine
        assert np.sin(W * v.peak_time) == pytest.approx(v.peak)


@pytest.mark.parametrize("quantity", ["velocity", "acceleration"])
def test_rate_violations_of_a_sine_are_the_analytic_intervals(quantity):
    """|w cos(w t)| > L where |cos| > L / w, i.e. within acos(L / w) / w of t = k T / 2
    (velocity); |w^2 sin(w t)| > L within acos(L / w^2) / w of t = T / 4 + k T / 2."""
    rate = 200.0
    if quantity == "velocity":
        limit, peak, offset = 6.0, W, 0.0
        c = sine_curves(rate, velocity_limit=limit)
    else:
        limit, peak, offset = 50.0, W**2, 0.25 / F_HZ
        c = sine_curves(rate, acceleration_limit=limit)
    found = [v for v in check_limits(c) if v.quantity == quantity]
    half = math.acos(limit / peak) / W
    centres = offset + np.arange(-1, 6) * 0.5 / F_HZ
    expected = [
        (max(m - half, 0.0), min(m + half, c.times[-1]), m)
        for m in centres
        if m + half > 0 and m - half < c.times[-1]
    ]
    assert len(found) == len(expected)
    for v, (start, end, _) in zip(found, expected, strict=True):
        assert abs(v.start_time - start) <= 1 / rate and abs(v.end_time - end) <= 1 / rate
        assert abs(abs(v.peak) - peak) < 1e-3 * peak
        assert v.limit == math.copysign(limit, v.peak)
    signs = [np.sign(v.peak) for v in found]
    assert all(a != b for a, b in itertools.pairwise(signs))  # alternate
    unit = "rad/s" if quantity == "velocity" else "rad/s^2"
    assert {v.unit for v in found} == {unit}


def test_contiguous_samples_merge_and_single_samples_stand_alone():
    t = np.arange(20) * 0.1
    x = np.zeros(20)
    x[[3, 4, 5, 9]] = 2.0
    x[12] = -3.0
    c = ActuatorCurves(t, x, ("m",), units=("m",), lower=-1.0, upper=1.0)
    found = check_limits(c, LimitCheckSettings(quantities=("position",)))
    assert [(v.start_time, v.end_time, v.peak, v.limit) for v in found] == [
        (t[3], t[5], 2.0, 1.0),
        (t[9], t[9], 2.0, 1.0),
        (t[12], t[12], -3.0, -1.0),
    ]
    assert "actuator 'm': position -3 m beyond limit -1 m at t=1.2000 s" in found[2].describe()


def test_touching_a_limit_is_not_a_violation():
    t = np.arange(11) * 0.1
    c = ActuatorCurves(t, np.clip(np.sin(6 * t), -0.5, 0.5) * 1.0, ("a",), lower=-0.5, upper=0.5)
    assert check_limits(c, LimitCheckSettings(quantities=("position",))) == []


def test_require_within_limits_raises_listing_each_violation():
    c = sine_curves(100.0, velocity_limit=6.0)
    with pytest.raises(LimitViolationError, match="actuator 'crank': velocity") as info:
        require_within_limits(c)
    assert info.value.violations == tuple(check_limits(c))
    assert require_within_limits(sine_curves(100.0, velocity_limit=9.0)) == []


@st.composite
def random_curves(draw):
    n_frames = draw(st.integers(1, 40))
    n_act = draw(st.integers(1, 3))
    elems = st.floats(-3.0, 3.0, allow_nan=False)
    values = np.array(
        draw(st.lists(st.lists(elems, min_size=n_act, max_size=n_act), min_size=n_frames, max_size=n_frames))
    )
    lower = draw(st.lists(st.floats(-3, 0) | st.just(-np.inf), min_size=n_act, max_size=n_act))
    upper = draw(st.lists(st.floats(0, 3) | st.just(np.inf), min_size=n_act, max_size=n_act))
    vel = draw(st.lists(st.floats(0.5, 50) | st.just(np.inf), min_size=n_act, max_size=n_act))
    acc = draw(st.lists(st.floats(1, 500) | st.just(np.inf), min_size=n_act, max_size=n_act))
    rate = draw(st.sampled_from([10.0, 50.0, 100.0]))
    return ActuatorCurves(
        np.arange(n_frames) / rate,
        values,
        tuple(f"j{a}" for a in range(n_act)),
        lower=lower,
        upper=upper,
        velocity_limit=vel,
        acceleration_limit=acc,
    )


def assert_disjoint_and_sorted(violations, names):
    starts = [v.start_time for v in violations]
    assert starts == sorted(starts)
    for name in names:
        for quantity in ("position", "velocity", "acceleration", "tick_range"):
            group = [v for v in violations if v.actuator == name and v.quantity == quantity]
            for v in group:
                assert v.start_time <= v.peak_time <= v.end_time or math.isnan(v.peak_time)
            for a, b in itertools.pairwise(group):
                assert a.end_time < b.start_time


@settings(max_examples=60, deadline=None)
@given(random_curves(), st.sampled_from(["spline", "central"]))
def test_violation_intervals_are_disjoint_sorted_and_exactly_the_bad_runs(curves, method):
    check = LimitCheckSettings(derivative=method)
    found = check_limits(curves, check)
    assert_disjoint_and_sorted(found, curves.names)
    tol = lambda bound: check.rtol * max(1.0, abs(bound))  # noqa: E731
    rates = {
        "velocity": (curves.velocities(method), curves.velocity_limit),
        "acceleration": (curves.accelerations(method), curves.acceleration_limit),
    }
    t = curves.times
    for a, name in enumerate(curves.names):
        x = curves.values[:, a]
        lo, hi = curves.lower[a], curves.upper[a]
        masks = {"position": (x > hi + tol(hi)) | (x < lo - tol(lo))}
        for q, (r, lim) in rates.items():
            masks[q] = np.abs(r[:, a]) > lim[a] + tol(lim[a])
        for q, mask in masks.items():
            group = [v for v in found if v.actuator == name and v.quantity == q]
            assert [(v.start_time, v.end_time) for v in group] == _expected_intervals(mask, t)
            for v in group:
                assert v.excess > 0 and abs(v.peak) > abs(v.limit) - 1e-12


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.floats(0, 10), st.floats(0, 2), st.floats(-5, 5)),
        max_size=12,
    )
)
def test_merged_violations_are_disjoint_and_sorted(specs):
    items = [
        Violation(
            name, "velocity", start, start + length, peak, math.copysign(1.0, peak or 1.0), start, "rad/s"
        )
        for name, start, length, peak in specs
    ]
    merged = merge_violations(items[: len(items) // 2], items[len(items) // 2 :])
    assert_disjoint_and_sorted(merged, ["a", "b"])
    for v in items:  # every input interval lies inside one merged interval
        assert any(
            m.actuator == v.actuator and m.start_time <= v.start_time and v.end_time <= m.end_time
            for m in merged
        )


# --------------------------------------------------------------------------- resampling
@pytest.mark.parametrize("rate", [50.0, 100.0, 250.0, 1000.0])
def test_resampling_keeps_values_and_peaks(rate):
    """A 1.3 Hz sine sampled at 1200 Hz, resampled to ``rate``: values within 1e-8 of
    sin (spline error at h = 1/1200 s), peak |velocity| on the new samples at least
    cos(pi f / rate) - 1e-6 of the true peak w (the worst offset of a sample from
    a peak is half a period)."""
    source = sine_curves(1200.0, duration=2.0, velocity_limit=20.0)
    out = resample(source, rate)
    assert out.rate_hz == rate and out.times[0] == 0.0 and out.times[-1] <= source.times[-1]
    assert out.n_frames == math.floor(2.0 * rate + 1e-9) + 1
    np.testing.assert_allclose(out.values[:, 0], np.sin(W * out.times), atol=1e-8)
    peak = np.max(np.abs(out.velocities()))
    assert peak >= W * (math.cos(math.pi * F_HZ / rate) - 1e-6)
    assert out.names == source.names and out.velocity_limit.tolist() == [20.0]
    assert compare_peaks(source, out) == []


@pytest.mark.parametrize("method", ["cubic", "pchip", "linear"])
def test_resampling_passes_through_source_samples(method):
    source = sine_curves(100.0)
    out = resample(source, 50.0, ResampleSettings(method=method))
    np.testing.assert_allclose(out.values, source.values[::2], atol=1e-12)


def test_resampling_upsamples_smoothly():
    source = sine_curves(30.0, duration=1.5)
    out = resample(source, 600.0)
    np.testing.assert_allclose(out.values[:, 0], np.sin(W * out.times), atol=2e-4)


def spike_curves(velocity_limit=np.inf):
    """A Gaussian bump 4 ms wide at 1000 Hz: its velocity peaks fall between 50 Hz frames."""
    t = np.arange(1001) / 1000.0
    x = 0.2 * np.exp(-0.5 * ((t - 0.511) / 0.004) ** 2)
    return ActuatorCurves(t, x, ("kick",), velocity_limit=velocity_limit, hardware_ids=(7,))


def test_peak_loss_is_reported():
    source = spike_curves()
    with pytest.warns(PeakLossWarning, match="actuator 'kick': peak velocity"):
        resample(source, 50.0)
    with pytest.raises(PeakLossError) as info:
        resample(source, 50.0, ResampleSettings(on_peak_loss="raise"))
    (loss,) = info.value.losses
    assert loss.actuator == "kick" and loss.ratio < 0.5 and loss.unit == "rad/s"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resample(source, 50.0, ResampleSettings(on_peak_loss="ignore"))
        resample(source, 2000.0)  # upsampling keeps the peak


def test_source_violations_are_carried_through_resampling():
    source = spike_curves(velocity_limit=10.0)
    assert {v.quantity for v in check_limits(source)} == {"velocity"}
    out = resample(source, 50.0, ResampleSettings(on_peak_loss="ignore"))
    assert check_limits(out) == []  # the 50 Hz samples alone look harmless...
    carried = all_violations(out)  # ...but the source's violations travel with them
    assert carried and carried == check_limits(source)
    with pytest.raises(LimitViolationError, match="actuator 'kick': velocity"):
        require_within_limits(out)
    plain = resample(source, 50.0, ResampleSettings(on_peak_loss="ignore", carry_violations=False))
    assert all_violations(plain) == []


def test_bad_resample_settings_raise():
    with pytest.raises(CurvesError, match="no resampling method 'sinc'"):
        ResampleSettings(method="sinc")
    with pytest.raises(CurvesError, match="rate must be a positive"):
        resample(sine_curves(100.0), 0.0)
    with pytest.raises(CurvesError, match="at least two frames"):
        resample(ActuatorCurves([0.0], [[0.0]], ("a",)), 50.0)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.floats(0.05, 3.5),
    st.integers(0, 10_000),
)
def test_a_sequence_unwraps_as_each_frame_against_the_one_before(frames, spread, seed):
    """unwrap_sequence (the turns summed at once) equals unwrap_to frame by frame against
    the frame before, angles and displacements mixed; every angle step within pi."""
    from looprig.core.model.readoff import unwrap_sequence, unwrap_to

    rng = np.random.default_rng(seed)
    path = np.cumsum(rng.normal(scale=spread, size=(frames, 3)), axis=0)
    is_angle = np.array([True, True, False])
    read = np.where(is_angle, np.angle(np.exp(1j * path)), path)
    expected = read.copy()
    for f in range(1, frames):
        expected[f] = unwrap_to(expected[f], expected[f - 1], is_angle)
    got = unwrap_sequence(read, is_angle)
    assert np.abs(got - expected).max() <= 1e-9
    assert (np.abs(np.diff(got[:, :2], axis=0)) <= np.pi + 1e-9).all()
