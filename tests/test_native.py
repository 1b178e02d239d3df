"""Native looprig mechanism file: lossless round trip, schema, errors, four-bar across formats."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from looprig.cad_import import (
    NATIVE_SCHEMA,
    FileFormatError,
    MeshRef,
    load_mechanism,
    load_model,
    save_mechanism,
)
from looprig.cad_import.native import mechanism_to_dict
from looprig.cad_import.native_read import load_native, mechanism_from_dict
from looprig.core import (
    ActuatedMotion,
    Actuator,
    Body,
    Frame,
    Joint,
    JointKind,
    Mechanism,
    MechanismError,
    solve_fk,
)
from looprig.core.library import NAMES, build
from looprig.core.library.planar import fourbar_closed_form
from looprig.core.maths.rotations import quat_to_matrix

DATA = Path(__file__).parent / "data"
DOCS = Path(__file__).parents[1] / "docs" / "files.md"

# unit quaternions and axes are renormalised by the Mechanism on load: at most a few ulp
UNIT_VECTOR_ULP = 4


def assert_same_mechanism(a: Mechanism, b: Mechanism) -> None:
    assert a.name == b.name
    assert (
        len(a.bodies) == len(b.bodies) and len(a.joints) == len(b.joints) and len(a.frames) == len(b.frames)
    )
    for x, y in zip(a.bodies, b.bodies, strict=True):
        assert (x.name, x.mass, x.grounded, x.mesh) == (y.name, y.mass, y.grounded, y.mesh)
        np.testing.assert_array_equal(x.position, y.position)
        np.testing.assert_array_max_ulp(x.orientation, y.orientation, UNIT_VECTOR_ULP)
        assert (x.inertia is None) == (y.inertia is None)
        if x.inertia is not None:
            np.testing.assert_array_equal(x.inertia, y.inertia)
        np.testing.assert_array_equal(x.T_body_mesh, y.T_body_mesh)
    for x, y in zip(a.joints, b.joints, strict=True):
        assert (x.name, x.kind, x.parent, x.child, x.actuator) == (
            y.name,
            y.kind,
            y.parent,
            y.child,
            y.actuator,
        )
        np.testing.assert_array_equal(x.anchor, y.anchor)
        np.testing.assert_array_max_ulp(x.axis, y.axis, UNIT_VECTOR_ULP)
        assert (x.secondary_axis is None) == (y.secondary_axis is None)
        if x.secondary_axis is not None:
            np.testing.assert_array_max_ulp(x.secondary_axis, y.secondary_axis, UNIT_VECTOR_ULP)
    for x, y in zip(a.frames, b.frames, strict=True):
        assert (x.name, x.body) == (y.name, y.body)
        np.testing.assert_array_equal(x.position, y.position)
        np.testing.assert_array_max_ulp(x.orientation, y.orientation, UNIT_VECTOR_ULP)


@pytest.mark.parametrize("name", NAMES)
def test_library_mechanisms_round_trip(tmp_path, name):
    mechanism = build(name)
    path = save_mechanism(mechanism, tmp_path / f"{name}.looprig.json")
    assert_same_mechanism(mechanism, load_mechanism(path))


# ---------------------------------------------------------------- property-based round trip
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
positive = st.floats(1e-6, 1e3, allow_nan=False, allow_infinity=False)
vec3 = st.lists(finite, min_size=3, max_size=3).map(np.array)
unit3 = vec3.filter(lambda v: np.linalg.norm(v) > 1e-3)
quat = st.lists(finite, min_size=4, max_size=4).map(np.array).filter(lambda q: np.linalg.norm(q) > 1e-3)
names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
limit = st.one_of(st.just(np.inf), positive)


@st.composite
def actuators(draw, kind):
    motions = {
        JointKind.REVOLUTE: [ActuatedMotion.ANGLE],
        JointKind.PRISMATIC: [ActuatedMotion.DISPLACEMENT],
        JointKind.CYLINDRICAL: [ActuatedMotion.ANGLE, ActuatedMotion.DISPLACEMENT],
    }.get(kind)
    if not motions or not draw(st.booleans()):
        return None
    lower = draw(st.one_of(st.just(-np.inf), finite))
    upper = draw(st.one_of(st.just(np.inf), finite.filter(lambda u: u >= lower)))
    return Actuator(
        motion=draw(st.sampled_from(motions)),
        lower=lower,
        upper=upper,
        velocity_limit=draw(limit),
        acceleration_limit=draw(limit),
        hardware_id=draw(st.one_of(st.none(), st.integers(-(2**40), 2**40), names)),
        zero_offset_ticks=draw(st.integers(-1_048_575, 1_048_575)),
        direction=draw(st.sampled_from([1, -1])),
        metres_per_revolution=draw(st.one_of(st.none(), st.floats(1e-4, 1.0))),
    )


@st.composite
def mechanisms(draw):
    n = draw(st.integers(1, 6))
    body_names = draw(st.lists(names, min_size=n, max_size=n, unique=True))
    bodies = []
    for k, name in enumerate(body_names):
        inertia = None
        if draw(st.booleans()):
            a = np.array(draw(st.lists(finite, min_size=9, max_size=9))).reshape(3, 3)
            inertia = a + a.T
        mesh = draw(st.one_of(st.none(), st.just("/abs/meshes/part.stl"), st.just("package://pkg/x.dae")))
        T = np.eye(4)
        if draw(st.booleans()):
            T[:3, :] = np.array(draw(st.lists(finite, min_size=12, max_size=12))).reshape(3, 4)
        bodies.append(Body(name, draw(vec3), draw(quat), draw(positive), inertia, k == 0, mesh, T))
    joints = []
    joint_names = draw(st.lists(names, min_size=n - 1, max_size=n - 1 + 3, unique=True))
    for k, jname in enumerate(joint_names):
        if k < n - 1:
            parent, child = body_names[draw(st.integers(0, k))], body_names[k + 1]
        else:  # extra joints close loops
            if n < 2:
                break
            i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
            parent, child = body_names[i], body_names[j]
        kind = draw(st.sampled_from(list(JointKind)))
        axis = draw(unit3)
        secondary = None
        if kind == JointKind.UNIVERSAL or draw(st.booleans()):
            other = draw(unit3)
            secondary = np.cross(axis, other)
            if np.linalg.norm(secondary) < 1e-3:
                secondary = (
                    np.cross(axis, [1.0, 0.0, 0.0])
                    if abs(axis[0]) < 0.5 * np.linalg.norm(axis)
                    else np.cross(axis, [0.0, 1.0, 0.0])
                )
        joints.append(Joint(jname, kind, parent, child, draw(vec3), axis, secondary, draw(actuators(kind))))
    frame_names = draw(st.lists(names, max_size=3, unique=True))
    frames = [Frame(f, body_names[draw(st.integers(0, n - 1))], draw(vec3), draw(quat)) for f in frame_names]
    try:
        return Mechanism(bodies, joints, frames, name=draw(names))
    except MechanismError:
        from hypothesis import reject

        reject()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(mechanisms())
def test_any_mechanism_round_trips(tmp_path_factory, mechanism):
    path = tmp_path_factory.mktemp("rt") / "m.looprig.json"
    save_mechanism(mechanism, path)
    loaded = load_mechanism(path)
    assert_same_mechanism(mechanism, loaded)
    # and a second round trip is a fixed point of the text
    save_mechanism(loaded, path.with_name("again.looprig.json"))
    assert_same_mechanism(loaded, load_mechanism(path.with_name("again.looprig.json")))


def test_mesh_paths_inside_the_folder_are_written_relative(tmp_path):
    mechanism = build("two_link_arm")
    mesh = str((tmp_path / "meshes" / "arm.stl").resolve())
    bodies = [
        Body(
            b.name,
            b.position,
            b.orientation,
            b.mass,
            b.inertia,
            b.grounded,
            mesh if b.name == "forearm" else "/elsewhere/x.obj",
            np.diag([0.001, 0.001, 0.001, 1.0]),
        )
        for b in mechanism.bodies
    ]
    mechanism = Mechanism(bodies, mechanism.joints, mechanism.frames, name="arm")
    meshes = {"forearm": [MeshRef(mesh, np.eye(4), "collision", (1.0, 0.0, 0.0, 1.0))]}
    path = save_mechanism(mechanism, tmp_path / "arm.looprig.json", meshes=meshes)
    data = json.loads(path.read_text())
    forearm = next(b for b in data["bodies"] if b["name"] == "forearm")
    assert forearm["mesh"] == "meshes/arm.stl"
    assert forearm["meshes"][0]["path"] == "meshes/arm.stl" and forearm["meshes"][0]["role"] == "collision"
    assert next(b for b in data["bodies"] if b["name"] == "base")["mesh"] == "/elsewhere/x.obj"
    loaded = load_model(path)
    assert_same_mechanism(mechanism, loaded.mechanism)
    assert loaded.meshes["forearm"][0].path == mesh and loaded.meshes["forearm"][0].rgba == (
        1.0,
        0.0,
        0.0,
        1.0,
    )
    # the folder moves: paths follow it
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "arm.looprig.json").write_text(path.read_text())
    assert load_mechanism(moved / "arm.looprig.json").bodies[2].mesh == str(moved / "meshes" / "arm.stl")


def test_schema_is_published_in_the_docs():
    text = DOCS.read_text()
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    schemas = [json.loads(b) for b in blocks if '"$schema"' in b and "looprig mechanism file" in b]
    assert schemas == [NATIVE_SCHEMA]


def _check_against_schema(value, schema, where="document"):
    """A small JSON-Schema subset checker (type, required, properties, items, enum, const, sizes)."""
    if "const" in schema:
        assert value == schema["const"], where
    if "enum" in schema:
        assert value in schema["enum"], where
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        python = {
            "object": dict,
            "array": list,
            "string": str,
            "number": (int, float),
            "integer": int,
            "boolean": bool,
            "null": type(None),
        }
        assert any(
            isinstance(value, python[t]) and not (t in ("number", "integer") and isinstance(value, bool))
            for t in types
        ), (where, value)
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{where}: missing {key}"
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check_against_schema(value[key], sub, f"{where}.{key}")
    if isinstance(value, list):
        assert schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", 10**9), where
        if "items" in schema:
            for k, item in enumerate(value):
                _check_against_schema(item, schema["items"], f"{where}[{k}]")


@pytest.mark.parametrize("name", NAMES)
def test_written_files_follow_the_schema(name):
    _check_against_schema(mechanism_to_dict(build(name)), NATIVE_SCHEMA)


def test_fixture_follows_the_schema():
    _check_against_schema(json.loads((DATA / "fourbar.looprig.json").read_text()), NATIVE_SCHEMA)


def _document():
    return mechanism_to_dict(build("fourbar"))


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda d: d.update(format="urdf"), 'expected "format": "looprig-mechanism"'),
        (lambda d: d.update(version=2), "the file is version 2"),
        (lambda d: d["bodies"][1].update(mass=-1.0), "mass must be positive"),
        (lambda d: d["bodies"][1].update(mass="heavy"), "bodies[1].mass: expected a number"),
        (
            lambda d: d["bodies"][1].update(position=[0, 0]),
            "bodies[1].position: expected numbers of shape (3,)",
        ),
        (lambda d: d["bodies"][1].update(position=[0, "a", 0]), "bodies[1].position"),
        (lambda d: d["bodies"][1].pop("orientation"), "bodies[1]: missing 'orientation'"),
        (lambda d: d["joints"][0].update(kind="screw"), "joints[0].kind: unknown joint kind 'screw'"),
        (lambda d: d["joints"][0].update(axis=[0, 0, 0]), "is zero-length"),
        (lambda d: d["joints"][0].update(parent="crank2"), "no body 'crank2'; bodies are"),
        (lambda d: d["joints"][0]["actuator"].update(motion="twist"), "joints[0].actuator.motion"),
        (lambda d: d["joints"][0]["actuator"].update(hardware_id=True), "hardware_id"),
        (lambda d: d["joints"][0]["actuator"].update(lower=5.0, upper=1.0), "lower limit exceeds upper"),
        (lambda d: d["frames"][0].update(body="nowhere"), "no body 'nowhere'"),
        (lambda d: d.update(bodies={}), "expected list"),
        (lambda d: d["bodies"][0].update(grounded=False), "no grounded body"),
        (lambda d: d["bodies"][1].update(inertia=[[1, 2, 3], [0, 1, 0], [0, 0, 1]]), "not symmetric"),
    ],
)
def test_malformed_native_files(tmp_path, edit, fragment):
    data = _document()
    edit(data)
    path = tmp_path / "bad.looprig.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FileFormatError) as info:
        load_mechanism(path)
    assert fragment in str(info.value) and str(path) in str(info.value)


def test_json_syntax_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "format": "looprig-mechanism",\n  "version": 1,\n  "name": oops\n}')
    with pytest.raises(FileFormatError, match="not valid JSON") as info:
        load_mechanism(path)
    assert info.value.line == 4
    path.write_text(json.dumps(_document()).replace('"mass": 1.0', '"mass": NaN', 1))
    with pytest.raises(FileFormatError, match="NaN is not valid JSON"):
        load_mechanism(path)


# ---------------------------------------------------------------- the four-bar in every format
FOURBAR_FILES = [
    ("fourbar_closing.urdf", "closing_B_1"),
    ("fourbar_looprig.urdf", "B_coupler"),
    ("fourbar_connect.xml", "B"),
    ("fourbar.looprig.json", "B"),
]


def _coupler_pin_path(filename, frame, angles):
    """World position of the coupler-rocker pin over crank angles (relative to the initial one)."""
    m = (
        load_mechanism(DATA / filename, missing_meshes="warn")
        if filename.endswith("xml")
        else load_mechanism(DATA / filename)
    )
    f = m.frame(frame)
    b = m.body_index(f.body)
    s0 = m.initial_state()
    local = quat_to_matrix(s0[b, 3:]).T @ (f.position - s0[b, :3])
    state, out = None, []
    for angle in angles:
        state = solve_fk(m, [angle], initial_state=state).state
        out.append(quat_to_matrix(state[b, 3:]) @ local + state[b, :3])
    return np.array(out)


def test_fourbar_gives_the_same_fk_in_every_format():
    """URDF + closing frames, URDF + looprig closure, MJCF + connect and native: one full crank turn.

    Closed form: the pin B lies on circle(A, 0.35) and circle((0.3, 0), 0.3), open branch,
    with A = 0.1 (cos t, sin t) and t = 90 deg + the actuator angle.
    """
    import warnings

    angles = np.linspace(0.0, 2 * np.pi, 37)
    _, B = fourbar_closed_form(np.pi / 2 + angles)
    paths = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for filename, frame in FOURBAR_FILES:
            paths.append(_coupler_pin_path(filename, frame, angles))
    for path in paths:
        np.testing.assert_allclose(path[:, :2], B, atol=1e-9)
        np.testing.assert_allclose(path[:, 2], 0.0, atol=1e-9)
        np.testing.assert_allclose(path, paths[0], atol=1e-9)


def test_unbounded_limits_cross_the_file_boundary_as_null():
    from looprig.core.model.filevalues import limit_from_file, limit_to_file

    assert limit_to_file(np.inf) is None and limit_to_file(-np.inf) is None
    assert limit_to_file(2.5) == 2.5
    assert limit_from_file(None) == np.inf and limit_from_file(None, -np.inf) == -np.inf
    assert limit_from_file(limit_to_file(-1.25), -np.inf) == -1.25
    with pytest.raises(ValueError, match="NaN"):
        limit_to_file(np.nan)


def test_couplings_round_trip_and_are_validated(tmp_path):
    """A gear, and a differential with polynomial terms, save and load bit-exact; a file
    written before differentials (one ``source`` and ``ratio``) still loads; a wrong entry
    is one line naming it."""
    from looprig.core.model.parts import Coupling

    base = build("slider_crank")
    revolute = [j.name for j in base.joints if j.kind == JointKind.REVOLUTE]
    slider = next(j.name for j in base.joints if j.kind == JointKind.PRISMATIC)
    couplings = [
        Coupling("c", slider, revolute[0], 0.01, -0.125),
        Coupling("d", revolute[1], (revolute[0], slider), (0.1 + 0.2, -1 / 3), 0.7, ((0.0, 1e-17), (2.5,))),
    ]
    m = Mechanism(base.bodies, base.joints, base.frames, name="coupled", couplings=couplings)
    path = save_mechanism(m, tmp_path / "c.looprig.json")
    fields = [(c.name, c.joint, c.sources, c.ratios, c.offset, c.polynomial) for c in m.couplings]
    again = load_native(path).mechanism.couplings
    assert [(c.name, c.joint, c.sources, c.ratios, c.offset, c.polynomial) for c in again] == fields
    data = json.loads(path.read_text())
    assert "polynomial" not in data["couplings"][0]
    legacy = dict(data, couplings=[{"name": "c", "joint": slider, "source": revolute[0], "ratio": 0.01}])
    (old,) = mechanism_from_dict(legacy).mechanism.couplings
    assert (old.sources, old.ratios, old.offset, old.polynomial) == ((revolute[0],), (0.01,), 0.0, ())
    for key, value, message in [
        ("sources", ["nothing"], "coupling 'c' source: no joint 'nothing'"),
        ("sources", [revolute[0], 3], r"couplings\[0\]\.sources: expected a list of joint names"),
        ("ratios", [0.01, 1], "coupling 'c': expected one ratio per source"),
        ("ratios", "0.01", r"couplings\[0\]\.ratios: expected a list of numbers"),
        ("polynomial", [[1, "x"]], r"couplings\[0\]\.polynomial\[0\]\[1\]: expected a number"),
        ("polynomial", [[1], [2]], "coupling 'c': expected one tuple of polynomial coefficients per source"),
    ]:
        bad = json.loads(path.read_text())
        bad["couplings"][0][key] = value
        with pytest.raises(FileFormatError, match=message) as error:
            mechanism_from_dict(bad, path)
        assert "\n" not in str(error.value)
    assert "couplings" not in json.loads(save_mechanism(base, tmp_path / "b.looprig.json").read_text())


def test_body_colour_round_trips_and_is_validated(tmp_path):
    base = build("fourbar")
    bodies = [
        Body(b.name, b.position, b.orientation, b.mass, b.inertia, b.grounded, color=(0.1, 0.2, 0.3, 1.0))
        for b in base.bodies
    ]
    m = Mechanism(bodies, base.joints, base.frames, name="coloured")
    path = save_mechanism(m, tmp_path / "c.looprig.json")
    assert [b.color for b in load_native(path).mechanism.bodies] == [(0.1, 0.2, 0.3, 1.0)] * len(bodies)
    with pytest.raises(MechanismError, match=r"color: components must lie in \[0, 1\]"):
        Mechanism([Body("g", grounded=True, color=(1.5, 0, 0, 1))], [])
