"""Aim targets (issue 28): a frame's axis looks at a point.

The aim term against finite differences; pan-tilt and pan-tilt-roll necks against the
closed-form look-at angles; Locked Track; bad mapping entries; Reachy Mini looking
at a point on a circle (defaults); an aim the neck's speed limit cannot follow.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from jacobians import numerical_jacobian
from looprig.core.errors import LooprigWarning, TargetError
from looprig.core.maths.rotations import quat_to_matrix, retract
from looprig.core.model.mechanism import Mechanism
from looprig.core.model.parts import Actuator, Body, Frame, Joint, JointKind
from looprig.core.retarget import AimSpec, RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.solvers.ik import IKProblem
from looprig.core.terms import AimObjective, AimTask, Reference, Targets
from looprig.core.terms.aim import up_rotation

#: Where the neck's axes meet [m].
CENTRE = np.array([0.0, 0.0, 0.15])
#: The eye sits this far ahead of CENTRE along its forward axis x [m].
EYE = 0.05


def neck(roll: bool = False, velocity: float | None = None) -> Mechanism:
    """A pan (about z) - tilt (about y) [- roll (about x)] neck whose axes meet at CENTRE; the
    frame ``eye`` EYE ahead of it on the last body, world axes at rest (x forward, z up)."""
    motor = Actuator(motion="angle", velocity_limit=velocity) if velocity else Actuator(motion="angle")
    bodies = [
        Body("base", position=np.zeros(3), grounded=True),
        Body("pan", position=CENTRE - [0, 0, 0.05], mass=0.3),
        Body("tilt", position=CENTRE + [0.02, 0, 0], mass=0.2),
    ]
    joints = [
        Joint(
            "pan",
            JointKind.REVOLUTE,
            "base",
            "pan",
            CENTRE - [0, 0, 0.1],
            np.array([0.0, 0, 1]),
            actuator=motor,
        ),
        Joint("tilt", JointKind.REVOLUTE, "pan", "tilt", CENTRE, np.array([0.0, 1, 0]), actuator=motor),
    ]
    last = "tilt"
    if roll:
        bodies.append(Body("roll", position=CENTRE + [0.04, 0, 0.01], mass=0.1))
        joints.append(
            Joint("roll", JointKind.REVOLUTE, "tilt", "roll", CENTRE, np.array([1.0, 0, 0]), actuator=motor)
        )
        last = "roll"
    frames = [Frame("eye", last, position=CENTRE + [EYE, 0, 0])]
    return Mechanism(bodies, joints, frames, name="neck")


def circle(count: int = 101, rate: float = 100.0):
    """Times (F,) [s] and a point (F, 3) [m] going round a tilted ellipse ahead of the neck."""
    t = np.arange(count) / rate
    w = 2 * np.pi * t
    return t, np.stack([0.6 + 0.1 * np.cos(w), 0.3 * np.sin(w), 0.15 + 0.2 * np.sin(2 * w)], -1)


def samples_of(times, **tracks) -> TrackSamples:
    """Tracks given as positions (F, 3) or (positions, rotations (F, 3, 3))."""
    positions, rotations = {}, {}
    for name, value in tracks.items():
        p, R = value if isinstance(value, tuple) else (value, np.tile(np.eye(3), (len(times), 1, 1)))
        positions[name], rotations[name] = np.asarray(p, float), np.asarray(R, float)
    return TrackSamples(np.asarray(times, float), positions, rotations)


def curves_of(result) -> dict[str, np.ndarray]:
    return {name: result.curves.values[:, k] for k, name in enumerate(result.curves.names)}


def look_angles(points: np.ndarray):
    """The closed-form pan and tilt [rad] that point x of a pan-tilt neck at ``points``."""
    d = points - CENTRE
    return np.arctan2(d[:, 1], d[:, 0]), -np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1]))


# ----------------------------------------------------------------------------- the term
def test_the_aim_jacobian_matches_finite_differences_on_the_neck():
    """Batched over three poses, with an up axis, a lock axis and a grounded-body aim."""
    m = neck(roll=True)
    problem = IKProblem(m)
    aims = [
        AimObjective("eye", (1, 0, 0), up=(0, 0, 1), weight=3.0),
        AimObjective("eye", (0, 1, 0), lock=(0, 0, 1)),
        AimObjective("pan", (1, 0, 0)),
        AimObjective("base", (1, 0, 0)),
    ]
    term = AimTask(m, aims, [0, 1, 2, 3])
    rng = np.random.default_rng(7)
    s0 = m.initial_state()
    states = np.stack([retract(s0, rng.normal(scale=0.5, size=(len(s0), 6))) for _ in range(3)])
    targets = Targets(rng.normal(size=(3, 4, 3)), up_rotation(rng.normal(size=(3, 4, 3))))
    reference = Reference(states, quat_to_matrix(states[..., 3:]), np.zeros((3, 3)))
    r, J = term.residual(problem.point(states, targets, reference))
    for b in range(3):

        def residual(s, b=b):
            one = Reference(s[None], quat_to_matrix(s[None, :, 3:]), np.zeros((1, 3)))
            return term.residual(problem.point(s[None], targets.take(slice(b, b + 1)), one), False)[0][0]

        numeric = numerical_jacobian(residual, states[b], problem.constraints.free_bodies)
        assert np.abs(J[b] - numeric).max() < 1e-7 * max(1.0, np.abs(numeric).max())
        assert np.allclose(r[b], residual(states[b]))


def test_the_residual_is_zero_only_when_the_axis_points_at_the_point():
    """At the answer the residual vanishes; with the axis pointing away it is largest
    (|a - u| = 2), where a cross-product residual would vanish too."""
    m = neck()
    term = AimTask(m, [AimObjective("eye", (1, 0, 0))], [0])
    problem = IKProblem(m)
    s = m.initial_state()[None]
    point = problem.point(s, Targets(np.array([[[2.0, 0, 0.15]]]), np.eye(3)[None, None]), None)
    assert np.abs(term.residual(point, False)[0]).max() < 1e-15
    behind = problem.point(s, Targets(np.array([[[-2.0, 0, 0.15]]]), np.eye(3)[None, None]), None)
    assert np.linalg.norm(term.residual(behind, False)[0]) == pytest.approx(2.0)


# ----------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("whole_clip", [True, False], ids=["clip", "frame-by-frame"])
def test_a_pan_tilt_neck_looks_at_the_closed_form_angles(whole_clip):
    """Defaults, one aim, the eye 5 cm ahead of where the axes meet: pan and tilt are the
    atan2 of the target to 1e-9 rad at every sample, the aim met to 1e-9 rad."""
    times, points = circle()
    mapping = RetargetMapping((), aims=(AimSpec("eye", track="look"),), rate=100.0, whole_clip=whole_clip)
    result = retarget(neck(), samples_of(times, look=points), mapping)
    pan, tilt = look_angles(points)
    curves = curves_of(result)
    assert np.abs(curves["pan"] - pan).max() < 1e-9
    assert np.abs(curves["tilt"] - tilt).max() < 1e-9
    assert result.aim_error.max() < 1e-9 and result.summary()["max_aim_error_rad"] < 1e-9
    assert not result.unreachable.any() and result.aim_names == ["eye"]


def test_a_pan_tilt_roll_neck_with_an_up_axis_matches_its_closed_form():
    """Track To: the eye's z kept towards an up direction that a track turns (about x, up
    to 0.5 rad): pan, tilt and roll are the Z-Y-X angles of the frame [x = line of sight,
    z = up across it] to 1e-9 rad."""
    times, points = circle()
    lean = 0.5 * np.sin(2 * np.pi * times)
    turning = np.stack([np.eye(3)] * len(times))
    turning[:, 1, 1], turning[:, 1, 2], turning[:, 2, 1], turning[:, 2, 2] = (
        np.cos(lean),
        -np.sin(lean),
        np.sin(lean),
        np.cos(lean),
    )
    aim = AimSpec("eye", track="look", up=(0, 0, 1), up_track="sky")
    samples = samples_of(times, look=points, sky=(np.zeros((len(times), 3)), turning))
    result = retarget(neck(roll=True), samples, RetargetMapping((), aims=(aim,), rate=100.0))
    x = (points - CENTRE) / np.linalg.norm(points - CENTRE, axis=-1, keepdims=True)
    g = turning[:, :, 2]
    z = g - np.sum(g * x, -1, keepdims=True) * x
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    R = np.stack([x, np.cross(z, x), z], -1)
    curves = curves_of(result)
    assert np.abs(curves["pan"] - np.arctan2(R[:, 1, 0], R[:, 0, 0])).max() < 1e-9
    assert np.abs(curves["tilt"] + np.arcsin(R[:, 2, 0])).max() < 1e-9
    assert np.abs(curves["roll"] - np.arctan2(R[:, 2, 1], R[:, 2, 2])).max() < 1e-9
    assert np.ptp(curves["roll"]) > 0.5


def test_locked_track_turns_about_the_lock_axis_only():
    """Locked Track (lock z): the pan follows the target's azimuth, the tilt stays where it
    starts (the aim is met in the horizontal plane whatever the target's height; the tilt is
    free there, so it is kept by the pull to the start to within the solver's step)."""
    times, points = circle()
    aim = AimSpec("eye", track="look", lock=(0, 0, 1))
    result = retarget(neck(), samples_of(times, look=points), RetargetMapping((), aims=(aim,), rate=100.0))
    pan, _ = look_angles(points)
    curves = curves_of(result)
    assert np.abs(curves["pan"] - pan).max() < 1e-9
    assert np.abs(curves["tilt"]).max() < 1e-5
    assert result.aim_error.max() < 1e-9


def test_a_fixed_point_and_an_aim_named_by_its_track():
    """``point`` instead of a track; and an aim whose frame names a target's track (as the
    Maya exporter writes it), its axis in the track's axes turned by the target's offset."""
    times = np.arange(11) / 10.0
    spot = (0.4, -0.3, 0.5)
    fixed = retarget(neck(), samples_of(times), RetargetMapping((), aims=(AimSpec("eye", point=spot),)))
    pan, tilt = look_angles(np.array([spot]))
    assert np.abs(curves_of(fixed)["pan"] - pan).max() < 1e-9
    assert np.abs(curves_of(fixed)["tilt"] - tilt).max() < 1e-9
    # the track "ctrl" drives the eye with its y axis along the eye's x (offset: 90 deg about z)
    quarter = (np.sqrt(0.5), 0.0, 0.0, np.sqrt(0.5))
    ctrl = TargetSpec("ctrl", "eye", (0, 0, 0), offset_rotation=quarter)
    mapping = RetargetMapping((ctrl,), aims=(AimSpec("ctrl", axis=(0, 1, 0), point=spot),), rate=10.0)
    named = retarget(neck(), samples_of(times, ctrl=np.zeros((11, 3))), mapping)
    assert np.abs(curves_of(named)["pan"] - pan).max() < 1e-9


def test_a_mapping_with_aims_round_trips_through_its_file_form(tmp_path):
    mapping = RetargetMapping(
        (),
        aims=(
            AimSpec("eye", (1, 0, 0), track="look", up=(0, 0, 1), up_track="sky", weight=2.0),
            AimSpec("eye", (1, 0, 0), point=(1, 2, 3), lock=(0, 0, 1), min_distance=0.1),
        ),
    )
    mapping.save(tmp_path / "m.json")
    assert RetargetMapping.load(tmp_path / "m.json") == mapping
    assert json.loads((tmp_path / "m.json").read_text())["aims"][1]["point"] == [1, 2, 3]


# ----------------------------------------------------------------------------- limits, warnings
def test_an_aim_the_neck_is_too_slow_for_is_limited():
    """A target that swings faster than the pan's 1 rad/s limit: held (the default), every
    limit keeps and the frames the limit keeps from the aim are limited, bound by the pan's
    velocity; elsewhere the aim ray passes within the reach tolerance of the point."""
    times = np.arange(101) / 100.0
    swing = np.stack([np.full(101, 0.6), 0.1 * np.sin(2 * np.pi * times), np.full(101, 0.15)], -1)
    result = retarget(
        neck(velocity=1.0),
        samples_of(times, look=swing),
        RetargetMapping((), aims=(AimSpec("eye", track="look"),), rate=100.0),
    )
    summary = result.summary()
    assert summary["limited_frames"] > 0 and summary["unreachable_frames"] == 0
    assert "velocity" in summary["limited_by"]["pan"]
    assert np.abs(np.diff(curves_of(result)["pan"])).max() * 100 <= 1.0 + 1e-6
    exact = ~result.limited  # the ray passes within the reach tolerance of the point there
    assert (result.aim_miss[exact] <= 1e-4).all() and exact.sum() > 20


def test_a_point_near_the_eye_is_one_warning_per_stretch():
    """The point passes within 2 cm of the eye twice: two warnings, each naming the aim and
    its stretch; the aim is still met."""
    times = np.arange(101) / 100.0
    eye = CENTRE + [EYE, 0, 0]
    x = 0.01 + 0.2 * np.abs(np.sin(2 * np.pi * times))  # 1 cm ahead at t = 0, 0.5, 1
    points = eye + np.stack([x, 0 * x, 0 * x], -1)
    mapping = RetargetMapping((), aims=(AimSpec("eye", track="look"),), rate=100.0)
    with pytest.warns(LooprigWarning) as caught:
        result = retarget(neck(), samples_of(times, look=points), mapping)
    near = [str(w.message) for w in caught if "within 0.02 m" in str(w.message)]
    assert len(near) == 3 and all("aim 0 ('eye')" in line and "\n" not in line for line in near)
    assert result.aim_error.max() < 1e-9


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "aim, message",
    [
        (
            {"frame": "eye", "axis": [0, 0, 0], "track": "look"},
            "aim 0: mapping aim 'eye': axis must not be zero",
        ),
        (
            {"frame": "eye", "point": [0.05, 0.0, 0.15]},
            "mapping aim 0 ('eye'): the point [0.05, 0.0, 0.15] is at",
        ),
        ({"frame": "eyes", "track": "look"}, "mapping aim 0 ('eyes'): no frame or body 'eyes'"),
        ({"frame": "eye", "track": "gaze"}, "mapping aim 0 ('eye'): track: no track 'gaze'"),
        ({"frame": "eye", "up": [1, 0, 0], "track": "look"}, "up [1.0, 0.0, 0.0] must be perpendicular"),
    ],
    ids=["zero-axis", "point-at-origin", "unknown-frame", "missing-track", "up-along-axis"],
)
def test_bad_aims_are_one_line_naming_the_entry_and_nothing_is_written(tmp_path, capsys, aim, message):
    from looprig.cad_import import save_mechanism
    from looprig.core.tracks.format import Clip, Track, write_tracks

    from looprig.cli import main

    robot = save_mechanism(neck(), tmp_path / "neck.looprig.json")
    _, points = circle(11, 10.0)
    quaternions = np.tile([1.0, 0, 0, 0], (11, 1))
    write_tracks(Clip(10.0, 0, {"look": Track(points, quaternions, False)}), tmp_path / "t.json")
    (tmp_path / "m.json").write_text(json.dumps({"aims": [aim]}))
    out = tmp_path / "out"
    code = main(
        [
            "retarget",
            str(robot),
            str(tmp_path / "t.json"),
            "--map",
            str(tmp_path / "m.json"),
            "-o",
            str(out),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and message in err, err
    assert not out.exists() or not any(out.iterdir())


def test_mapping_entries_are_checked_on_reading():
    for aim, message in [
        ({"frame": "eye"}, "give the point it looks at as a track or a fixed point"),
        ({"frame": "eye", "track": "a", "point": [1, 2, 3]}, "one of them"),
        ({"frame": "eye", "track": "a", "weight": -1}, "weight must be a finite non-negative number"),
        ({"frame": "eye", "track": "a", "up": [0, 0, 1], "lock": [0, 1, 0]}, "not both"),
        ({"frame": "eye", "track": "a", "up_track": "b"}, "up_track needs an up axis"),
        ({"frame": "eye", "track": "a", "gaze": 1}, "unknown keys ['gaze']"),
    ]:
        with pytest.raises(TargetError, match=None) as caught:
            RetargetMapping.from_dict({"aims": [aim]}, "m.json")
        assert message in str(caught.value) and str(caught.value).startswith("m.json: ")
        assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------- Reachy Mini
MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
REACHY = MODELS / "reachy_mini" / "mjcf" / "reachy_mini.xml"


def reachy_circle(times):
    """A point on a circle of radius 0.15 m, 0.5 m in front of Reachy Mini's head (its
    frame ``head``, x forward), in the plane across its gaze."""
    from looprig.cad_import import load_mechanism

    with pytest.warns(Warning):
        mechanism = load_mechanism(REACHY)
    w = 2 * np.pi * times
    centre = mechanism.frame("head").position + [0.5, 0.0, 0.0]
    return mechanism, centre + 0.15 * np.stack([0 * w, np.cos(w), np.sin(w)], -1)


@pytest.mark.skipif(not REACHY.exists(), reason="the shared Reachy Mini model is not here")
def test_reachy_mini_looks_at_a_point_going_round_a_circle():
    """Defaults, no other head target: the head's forward axis is within 1e-7 rad of the
    line of sight at every sample, the body yaw and the antennas hold still (to 1e-9 rad),
    and a gaze that comes back to its start comes back to the same pose."""
    times = np.arange(101) / 100.0
    mechanism, points = reachy_circle(times)
    mapping = RetargetMapping((), aims=(AimSpec("head", (1, 0, 0), track="look"),), rate=100.0)
    with pytest.warns(LooprigWarning, match="held at their start values"):
        result = retarget(mechanism, samples_of(times, look=points), mapping)
    assert result.aim_error.max() < 1e-7 and not result.unreachable.any()
    curves = curves_of(result)
    for name in ("yaw_body", "left_antenna", "right_antenna"):
        assert np.abs(curves[name] - curves[name][0]).max() < 1e-9 and abs(curves[name][0]) < 1e-9
    values = result.curves.values
    assert np.abs(values[-1] - values[0]).max() < 1e-6  # back round the circle, back in place
    assert np.abs(values).max() < 0.5  # a head turn of 17 degrees, not a wander
    assert result.summary()["limit_solve"] is None  # no limit asked anything of it


def test_the_command_line_retargets_an_aim_and_reports_it(tmp_path, capsys):
    """``looprig retarget`` with a mapping of aims alone: the curves are written, report.json
    has ``max_aim_error_rad`` and the terminal line says it."""
    from looprig.cad_import import save_mechanism
    from looprig.core.export import read_csv
    from looprig.core.tracks.format import Clip, Track, write_tracks

    from looprig.cli import main

    robot = save_mechanism(neck(), tmp_path / "neck.looprig.json")
    _, points = circle(21, 20.0)
    write_tracks(
        Clip(20.0, 0, {"look": Track(points, np.tile([1.0, 0, 0, 0], (21, 1)), False)}), tmp_path / "t.json"
    )
    (tmp_path / "m.json").write_text(json.dumps({"aims": [{"frame": "eye", "track": "look"}], "rate": 20.0}))
    out = tmp_path / "out"
    argv = [
        "retarget",
        str(robot),
        str(tmp_path / "t.json"),
        "--map",
        str(tmp_path / "m.json"),
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    assert "max aim error" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["max_aim_error_rad"] < 1e-9 and report["unreachable_frames"] == 0
    curves = read_csv(out / "curves.csv")
    pan, tilt = look_angles(points)
    assert np.abs(curves.values[:, list(curves.names).index("pan")] - pan).max() < 1e-9
    assert np.abs(curves.values[:, list(curves.names).index("tilt")] - tilt).max() < 1e-9


def eyes(separation: float = 0.06) -> Mechanism:
    """Two pan-tilt eyes side by side (each its own chain from the base, axes meeting at
    its centre), frames ``left`` and ``right`` EYE ahead of their centres."""
    motor = Actuator(motion="angle")
    bodies, joints, frames = [Body("base", position=np.zeros(3), grounded=True)], [], []
    for side, y in (("left", separation / 2), ("right", -separation / 2)):
        centre = CENTRE + [0, y, 0]
        bodies += [
            Body(f"{side}_pan", position=centre - [0, 0, 0.05], mass=0.1),
            Body(f"{side}_tilt", position=centre + [0.01, 0, 0], mass=0.05),
        ]
        joints += [
            Joint(
                f"{side}_pan",
                JointKind.REVOLUTE,
                "base",
                f"{side}_pan",
                centre - [0, 0, 0.1],
                np.array([0.0, 0, 1]),
                actuator=motor,
            ),
            Joint(
                f"{side}_tilt",
                JointKind.REVOLUTE,
                f"{side}_pan",
                f"{side}_tilt",
                centre,
                np.array([0.0, 1, 0]),
                actuator=motor,
            ),
        ]
        frames.append(Frame(side, f"{side}_tilt", position=centre + [EYE, 0, 0]))
    return Mechanism(bodies, joints, frames, name="eyes")


def test_two_eyes_aim_at_once_and_converge():
    """A list of aims: both eyes look at the same near point, each along its own line of
    sight (they converge: the pans differ), each to 1e-9 rad of its closed form."""
    times, points = circle()
    points = points * [0.5, 1, 1]  # nearer: 0.25-0.35 m ahead
    aims = (AimSpec("left", track="look"), AimSpec("right", track="look"))
    result = retarget(eyes(), samples_of(times, look=points), RetargetMapping((), aims=aims, rate=100.0))
    curves = curves_of(result)
    for side, y in (("left", 0.03), ("right", -0.03)):
        d = points - (CENTRE + [0, y, 0])
        assert np.abs(curves[f"{side}_pan"] - np.arctan2(d[:, 1], d[:, 0])).max() < 1e-9
        assert np.abs(curves[f"{side}_tilt"] + np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1]))).max() < 1e-9
    assert result.aim_error.shape == (len(times), 2) and result.aim_error.max() < 1e-9
    assert (curves["right_pan"] - curves["left_pan"]).min() > 0.05  # converging on a near point
