"""Maya tracks export, run on the Maya emulation in ``tests/maya_emulation`` (an emulation, not Maya).

Truths:

* Closed form: the world transform of a keyed hierarchy is, in column-vector
  form, ``T_world = T_parent_world · T_local`` with ``T_local = Trans(t) ·
  R · Scale(s)``, where ``R`` for Maya rotate order ``abc`` applies the
  rotation about ``a`` first, then ``b``, then ``c``, about fixed axes
  (Maya's row-vector ``R = Ra · Rb · Rc``, ``v' = v · R``). Key values
  interpolate linearly between keys and hold outside them. Maya's flat-16
  world matrix is ``T_world`` transposed, row-major (translation at 12-14).
  The expected orientation is the polar factor of the upper 3x3 block.
* Conversion into looprig's convention (``read_tracks``): metres, and for a
  Y-up scene ``(x, y, z) -> (x, -z, y)`` on positions and ``C · R`` on
  rotations, ``C`` = +90 degrees about x.
"""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from looprig.core.maths.rotations import quat_to_matrix
from looprig.core.tracks import read_tracks
from scipy.linalg import polar
from scipy.spatial.transform import Rotation

EMULATION = Path(__file__).parent / "maya_emulation"
Y_UP_TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
CM = {"mm": 0.1, "cm": 1.0, "m": 100.0, "in": 2.54, "ft": 30.48, "yd": 91.44}


@pytest.fixture
def maya(monkeypatch):
    """A fresh emulated Maya session (``maya._scene``); ``tests/maya_emulation`` on sys.path."""
    monkeypatch.syspath_prepend(str(EMULATION))
    from maya import _scene

    _scene.reset()
    return _scene


@pytest.fixture
def host(maya):
    from looprig.maya_scripts import maya_facade

    return maya_facade


@pytest.fixture
def export(host):
    from looprig.maya_scripts.export_tracks import export_tracks

    def run(path, *args, **kwargs):
        return export_tracks(str(path), *args, host=host, **kwargs)

    return run


# ----------------------------------------------------------------------------- scenes and closed forms
HIERARCHY = [
    {
        "name": "base",
        "values": {
            "translateX": 10.0,
            "translateY": 5.0,
            "translateZ": -3.0,
            "scaleX": 1.5,
            "scaleY": 1.5,
            "scaleZ": 1.5,
        },
        "keys": {"rotateY": [[1, 0.0], [24, 90.0]]},
    },
    {
        "name": "arm",
        "parent": "base",
        "rotateOrder": "zxy",
        "values": {"translateY": 30.0, "rotateX": 30.0},
        "keys": {"translateX": [[1, 0.0], [13, 20.0]], "rotateZ": [[1, 0.0], [24, 45.0]]},
    },
    {
        "name": "tip",
        "parent": "arm",
        "rotateOrder": "yzx",
        "values": {
            "translateY": 15.0,
            "rotateX": 10.0,
            "rotateY": 20.0,
            "rotateZ": 30.0,
            "scaleX": 1.0,
            "scaleY": 2.0,
            "scaleZ": 0.5,
        },
        "keys": {"rotateX": [[4, 10.0], [20, -60.0]]},
    },
]


def scene(nodes=HIERARCHY, linear="cm", up="y", time="film", playback=(1, 24), current=5, **extra):
    return {
        "emulated_maya_scene": 1,
        "units": {"linear": linear, "angle": "deg", "time": time},
        "up_axis": up,
        "playback": list(playback),
        "current_time": current,
        "nodes": nodes,
        **extra,
    }


ORDERS = ("xyz", "yzx", "zxy", "xzy", "yxz", "zyx")


def channel(node, name, frame, default):
    keys = node.get("keys", {}).get(name)
    if keys:
        times, values = zip(*[(k[0], k[1]) for k in keys], strict=True)
        return float(np.interp(frame, times, values))
    return float(node.get("values", {}).get(name, default))


def local_transform(node, frame, cm_per_unit):
    """4x4 column-vector local transform ``Trans · R · Scale`` [cm]."""
    order = node.get("rotateOrder", "xyz")
    angles = {a: channel(node, "rotate" + a.upper(), frame, 0.0) for a in "xyz"}
    rotation = Rotation.from_euler(order, [angles[a] for a in order], degrees=True).as_matrix()
    scale = np.diag([channel(node, "scale" + a, frame, 1.0) for a in "XYZ"])
    t = np.eye(4)
    t[:3, :3] = rotation @ scale
    t[:3, 3] = [channel(node, "translate" + a, frame, 0.0) * cm_per_unit for a in "XYZ"]
    return t


def world_transform(nodes, name, frame, cm_per_unit=1.0):
    by_name = {n["name"]: n for n in nodes}
    node, t = by_name[name], np.eye(4)
    while node is not None:
        t = local_transform(node, frame, cm_per_unit) @ t
        node = by_name.get(node.get("parent"))
    return t


def maya_flat(t):
    """Maya's flat-16 world matrix of a column-vector transform."""
    return t.T.reshape(16)


def rotation_of(t):
    u, _p = polar(t[:3, :3])
    return u


def wxyz(rotation):
    x, y, z, w = Rotation.from_matrix(rotation).as_quat()
    return np.array([w, x, y, z])


# ----------------------------------------------------------------------------- the emulation is honest
def test_emulated_world_matrix_is_the_closed_form_in_all_three_query_paths(maya, host):
    """cmds.getAttr(time=), the API DG context and the timeline path all give the closed form."""
    from maya import cmds

    maya.load_scene(scene())
    sampler = host.WorldMatrixSampler(["|base|arm|tip", "arm", "base"])
    timeline = host.WorldMatrixSampler(["|base|arm|tip", "arm", "base"], "timeline")
    for frame in (-3.0, 1.0, 1.02, 4.5, 7.25, 13.0, 19.99, 24.0, 40.0):
        expected = [maya_flat(world_transform(HIERARCHY, n, frame)) for n in ("tip", "arm", "base")]
        np.testing.assert_allclose(sampler.sample(frame), expected, atol=1e-9)
        np.testing.assert_allclose(timeline.sample(frame), expected, atol=1e-9)
        np.testing.assert_allclose(cmds.getAttr("tip.worldMatrix[0]", time=frame), expected[0], atol=1e-9)


def test_emulated_rotation_convention_matches_maya_documentation(maya):
    """Maya's transform doc: RX = [[1,0,0],[0,c,s],[0,-s,c]] (row vectors): +90 about x takes y to z."""
    from maya import cmds

    maya.load_scene(scene([{"name": "n", "values": {"rotateX": 90.0, "translateY": 2.0}}]))
    m = np.array(cmds.getAttr("n.worldMatrix[0]")).reshape(4, 4)
    np.testing.assert_allclose(m[1, :3], [0.0, 0.0, 1.0], atol=1e-12)  # the object's y axis
    np.testing.assert_allclose(m[3, :3], [0.0, 2.0, 0.0], atol=1e-12)  # translation row


def test_emulation_converts_units_keeps_matrices_in_cm_and_rejects_unknown_flags(maya):
    from maya import cmds

    maya.load_scene(
        scene([{"name": "n", "keys": {"translateX": [[0, 0.0], [10, 1.0, "step"], [20, 3.0]]}}], linear="m")
    )
    assert cmds.getAttr("n.translateX", time=5) == 0.5  # linear
    assert cmds.getAttr("n.translateX", time=15) == 1.0  # held by the step out-tangent
    assert cmds.getAttr("n.worldMatrix[0]", time=15)[12] == pytest.approx(100.0)  # centimetres
    cmds.currentUnit(linear="cm")
    assert cmds.getAttr("n.translateX", time=15) == pytest.approx(100.0)
    with pytest.raises(TypeError, match="not emulated"):
        cmds.ls("n", dagObjects=True)
    with pytest.raises(ValueError, match="No object matches"):
        cmds.getAttr("nope.translateX")


# ----------------------------------------------------------------------------- closed-form export
@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_export_matches_closed_form_and_core_reads_it_in_metres_z_up(maya, export, tmp_path, suffix):
    maya.load_scene(scene(), "/shows/demo/shot010.ma")
    path = tmp_path / f"shot010.tracks{suffix}"
    result = export(path, ["tip", "|base|arm", "base=root"], start=1, end=24, rate=12)
    assert result.tracks == {"tip": "|base|arm|tip", "arm": "|base|arm", "root": "|base"}
    clip = read_tracks(path)
    frames = [k * 24 / 12 for k in range(1, 13)]  # 12 Hz grid in a 24 fps scene: frames 2, 4, ... 24
    assert clip.fps == 12 and clip.frame_start == 1 and clip.n_frames == 12
    np.testing.assert_allclose(clip.times, np.array(frames) / 24)
    raw = json.loads(path.read_text()) if suffix == ".json" else None
    for track, node in (("tip", "tip"), ("arm", "arm"), ("root", "base")):
        t_world = [world_transform(HIERARCHY, node, f) for f in frames]
        p_cm = np.array([t[:3, 3] for t in t_world])
        rotations = np.array([rotation_of(t) for t in t_world])
        if raw is not None:  # file: Maya's cm, Y up
            np.testing.assert_allclose(raw["tracks"][track]["position"], p_cm, atol=1e-9)
            q_file = np.array(raw["tracks"][track]["orientation"])
            q_expected = np.array([wxyz(r) for r in rotations])
            np.testing.assert_allclose(np.abs(np.sum(q_file * q_expected, axis=1)), 1.0, atol=1e-9)
        got = clip.tracks[track]
        np.testing.assert_allclose(got.positions, p_cm @ Y_UP_TO_Z_UP.T * 0.01, atol=1e-11)
        np.testing.assert_allclose(quat_to_matrix(got.orientations), Y_UP_TO_Z_UP @ rotations, atol=1e-9)
    assert clip.source["application"] == "Maya 2025"
    assert clip.source["scene"] == "/shows/demo/shot010.ma"
    assert clip.source["length_unit"] == "cm" and clip.source["up_axis"] == "Y"
    assert clip.source["maya_time_unit"] == "film" and clip.source["maya_fps"] == 24


def test_quaternions_are_continuous_across_samples(maya, export, tmp_path):
    maya.load_scene(scene([{"name": "spin", "keys": {"rotateY": [[1, 0.0], [24, 700.0]]}}]))
    export(tmp_path / "spin.json", ["spin"])
    q = np.array(json.loads((tmp_path / "spin.json").read_text())["tracks"]["spin"]["orientation"])
    assert np.all(np.sum(q[1:] * q[:-1], axis=1) > 0.9)


@pytest.mark.parametrize(
    ("linear", "up", "file_unit"),
    [
        ("cm", "y", "cm"),
        ("m", "z", "m"),
        ("mm", "y", "mm"),
        ("in", "z", "in"),
        ("ft", "y", "ft"),
        ("yd", "y", "m"),
    ],
)
def test_units_and_up_axis_land_in_looprig_convention(maya, export, tmp_path, linear, up, file_unit):
    """Keyed translate 1.5 units along Maya's up axis, rotated +90 about x; read back in metres, Z up."""
    up_channel = "translate" + up.upper()
    node = {"name": "target", "values": {up_channel: 1.5, "translateX": 0.25, "rotateX": 90.0}}
    maya.load_scene(scene([node], linear=linear, up=up, time="ntsc", playback=(0, 3)))
    result = export(tmp_path / "t.json", ["target"])
    raw = json.loads((tmp_path / "t.json").read_text())
    assert (raw["length_unit"], raw["up_axis"]) == (file_unit, up.upper())
    assert raw["fps"] == 30 and result.samples == 4
    assert raw["source"]["maya_linear_unit"] == linear
    metres = CM[linear] / 100
    clip = read_tracks(tmp_path / "t.json")
    expected = [[0.25 * metres, 0.0, 1.5 * metres]] * 4
    np.testing.assert_allclose(clip.tracks["target"].positions, expected, atol=1e-12)
    r_maya = Rotation.from_euler("x", 90, degrees=True).as_matrix()
    c = Y_UP_TO_Z_UP if up == "y" else np.eye(3)
    np.testing.assert_allclose(quat_to_matrix(clip.tracks["target"].orientations[0]), c @ r_maya, atol=1e-12)


# ----------------------------------------------------------------------------- sample plans
def test_sub_frame_sampling_count_and_times(maya, export, tmp_path):
    """1200 Hz at 24 fps: 50 samples per frame; translateX keyed to the frame number shows the times."""
    ramp = {"name": "clock", "keys": {"translateX": [[0, 0.0], [100, 100.0]]}}
    maya.load_scene(scene([ramp]))
    result = export(tmp_path / "clock.json", ["clock"], start=1, end=3, rate=1200)
    assert result.samples == 101 and result.plan.samples_per_frame == 50
    clip = read_tracks(tmp_path / "clock.json")
    assert (clip.frame_start, clip.frame_end, clip.fps) == (50, 150, 1200)
    np.testing.assert_allclose(clip.times, np.arange(50, 151) / 1200)
    sampled_frames = clip.tracks["clock"].positions[:, 0] * 100  # cm of the ramp = Maya frame
    np.testing.assert_allclose(sampled_frames, 1 + np.arange(101) / 50, atol=1e-12)


def test_sample_plans_off_the_frame_grid_and_at_ntsc_rates():
    from looprig.maya_scripts.export_tracks import plan_samples

    plan = plan_samples(1, 2, 25, 60)  # grid every 25/60 frame from frame 0
    assert (plan.first, plan.last) == (3, 4)
    assert plan.frames == pytest.approx([1.25, 5 / 3])
    plan = plan_samples(1, 120, 24)  # default: one sample per frame
    assert (plan.first, plan.last, plan.count, plan.rate) == (1, 120, 120, 24)
    ntsc = plan_samples(1, 2, 24000 / 1001, 1200)
    assert ntsc.frames[0] >= 1 and ntsc.frames[-1] <= 2
    assert ntsc.frames[0] - 1 < ntsc.scene_fps / 1200 and 2 - ntsc.frames[-1] < ntsc.scene_fps / 1200
    assert plan_samples(0.5, 0.5, 24, 48).frames == [0.5]


@pytest.mark.parametrize(
    ("start", "end", "rate", "message"),
    [
        (10, 1, None, "end frame 1 is before start frame 10"),
        (1, 10, 0, "sample rate must be positive"),
        (1, 10, -24, "sample rate must be positive"),
        (1, 10, 2400, "above the 1200 Hz limit"),
        (1, math.nan, None, "end frame must be a finite number"),
        (1.01, 1.02, None, "no sample of the 24 Hz grid"),
        (True, 2, None, "start frame must be a finite number"),
    ],
)
def test_bad_ranges_and_rates_are_refused(maya, export, tmp_path, start, end, rate, message):
    from looprig.maya_scripts.errors import RangeError

    maya.load_scene(scene())
    with pytest.raises(RangeError, match=message):
        export(tmp_path / "bad.json", ["tip"], start=start, end=end, rate=rate)
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- errors leave nothing behind
def test_missing_nodes_are_all_named_and_nothing_is_written(maya, export, tmp_path):
    from looprig.maya_scripts.errors import NodeError

    maya.load_scene(scene(), "/shot.ma")
    state = maya.session()
    state.selection = [state.find("arm")[0]]
    old = tmp_path / "old.json"
    old.write_text("previous export")
    with pytest.raises(NodeError) as error:
        export(old, ["base", "nope", "tipp", "tip"], rate=1200)
    message = str(error.value)
    assert "no transform 'nope'" in message and "no transform 'tipp'" in message
    assert "did you mean tip" in message
    assert error.value.missing == ("nope", "tipp")
    assert old.read_text() == "previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]
    assert state.current_seconds == pytest.approx(5 / 24)
    assert [n.path for n in state.selection] == ["|base|arm"]


def test_ambiguous_and_non_transform_names_are_refused_and_paths_resolve_them(maya, export, tmp_path):
    from looprig.maya_scripts.errors import NodeError

    nodes = [
        {"name": "armL"},
        {"name": "armR", "values": {"translateX": -5.0}},
        {"name": "hand", "id": "handL", "parent": "armL"},
        {"name": "hand", "id": "handR", "parent": "armR"},
    ]
    maya.load_scene(scene(nodes, sets={"grp": ["armL"]}))
    with pytest.raises(NodeError, match=r"'hand' matches 2 transforms \(\|armL\|hand, \|armR\|hand\)"):
        export(tmp_path / "x.json", ["hand"])
    with pytest.raises(NodeError, match=r"'grp' is not a transform \(it is a objectSet\)"):
        export(tmp_path / "x.json", ["grp"])
    result = export(tmp_path / "x.json", ["armL|hand", "armR|hand"])
    assert list(result.tracks) == ["armL|hand", "armR|hand"]
    result = export(tmp_path / "y.json", ["arm*"])
    assert list(result.tracks) == ["armL", "armR"]
    with pytest.raises(NodeError, match="track name 'h' is given to both"):
        export(tmp_path / "z.json", ["armL|hand=h", "armR|hand=h"])


def test_failure_while_sampling_names_node_and_frame_and_keeps_old_file(maya, export, tmp_path):
    from looprig.maya_scripts.errors import SampleError

    flat = {"name": "squash", "keys": {"scaleY": [[1, 1.0], [11, 0.0]]}}
    maya.load_scene(scene([flat]))
    path = tmp_path / "squash.json"
    path.write_text("keep me")
    with pytest.raises(SampleError, match=r"node '\|squash' at frame 11: zero \(or flattening\) scale"):
        export(path, ["squash"])
    assert path.read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["squash.json"]


def test_cancel_from_progress_writes_nothing_and_restores_time_and_selection(maya, export, tmp_path):
    from looprig.maya_scripts.errors import ExportCancelled
    from maya import cmds

    maya.load_scene(scene(selection=["arm"]))
    calls = []

    def progress(done, total):
        calls.append((done, total))
        cmds.currentTime(17)  # someone moves the time and the selection meanwhile
        cmds.select("tip")
        if done > total // 2:
            raise ExportCancelled("stop")

    with pytest.raises(ExportCancelled):
        export(tmp_path / "c.json", ["tip"], rate=240, progress=progress)
    assert calls and calls[0][1] == 231 and all(d % 2 == 0 for d, _ in calls)
    assert list(tmp_path.iterdir()) == []
    assert cmds.currentTime(query=True) == pytest.approx(5)
    assert cmds.ls(selection=True) == ["arm"]


def test_timeline_evaluation_matches_context_and_restores_time_and_refresh(maya, export, tmp_path):
    maya.load_scene(scene(selection=["tip", "base"]))
    state = maya.session()
    a = export(tmp_path / "a.json", ["tip", "arm"], start=2, end=9, rate=48)
    b = export(tmp_path / "b.json", ["tip", "arm"], start=2, end=9, rate=48, evaluation="timeline")
    da, db = (json.loads(p.read_text()) for p in (tmp_path / "a.json", tmp_path / "b.json"))
    assert a.samples == b.samples == 15
    for name in ("tip", "arm"):
        np.testing.assert_allclose(da["tracks"][name]["position"], db["tracks"][name]["position"], atol=1e-12)
        np.testing.assert_allclose(
            da["tracks"][name]["orientation"], db["tracks"][name]["orientation"], atol=1e-12
        )
    assert state.calls["refresh"] == 2 and not state.refresh_suspended
    assert state.current_seconds == pytest.approx(5 / 24)
    assert [n.name for n in state.selection] == ["tip", "base"]


def test_one_evaluation_per_sample_time_and_no_attribute_queries(maya, export, tmp_path):
    maya.load_scene(scene())
    calls = maya.session().calls
    calls.clear()
    result = export(tmp_path / "e.json", ["tip", "arm", "base"], start=1, end=5, rate=600)
    assert result.samples == 101
    assert calls["MDGContext"] == 101
    assert calls["MPlug.asMObject"] == 3 * 101
    assert calls["getAttr"] == 0
    assert calls["currentTime"] == 2  # queried before and after the export, never set


# ----------------------------------------------------------------------------- node sources
def test_default_set_then_selection_then_clear_error(maya, export, tmp_path):
    from looprig.maya_scripts.errors import NodeError

    maya.load_scene(scene(sets={"looprig_tracks": ["tip", "arm"]}, selection=["base"]))
    assert list(export(tmp_path / "a.json").tracks) == ["tip", "arm"]
    assert list(export(tmp_path / "b.json", use_selection=True).tracks) == ["base"]
    assert list(export(tmp_path / "c.json", set_name="looprig_tracks").tracks) == ["tip", "arm"]
    maya.load_scene(scene(selection=["arm"]))
    assert list(export(tmp_path / "d.json").tracks) == ["arm"]
    with pytest.raises(NodeError, match="no object set 'shots'"):
        export(tmp_path / "e.json", set_name="shots")
    maya.load_scene(scene())
    with pytest.raises(NodeError, match="nothing to export"):
        export(tmp_path / "f.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "c.json", "d.json"]


# ----------------------------------------------------------------------------- matrix maths
def test_decomposition_of_sheared_and_mirrored_matrices_is_the_polar_rotation():
    from looprig.maya_scripts.export_tracks import decompose_world_matrix

    rng = np.random.default_rng(7)
    for _ in range(20):
        a = rng.normal(size=(3, 3)) + 2 * np.eye(3)
        if np.linalg.det(a) < 0:
            a[:, 0] *= -1
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = a, rng.normal(size=3)
        position, q, mirrored = decompose_world_matrix(list(maya_flat(t)))
        assert not mirrored
        np.testing.assert_allclose(position, t[:3, 3])
        np.testing.assert_allclose(quat_to_matrix(np.array(q)), polar(a)[0], atol=1e-10)
    mirror = np.diag([-1.0, 2.0, 3.0])
    t = np.eye(4)
    t[:3, :3] = Rotation.from_euler("z", 30, degrees=True).as_matrix() @ mirror
    _p, q, mirrored = decompose_world_matrix(list(maya_flat(t)))
    assert mirrored
    np.testing.assert_allclose(quat_to_matrix(np.array(q)), polar(-t[:3, :3])[0], atol=1e-12)


def test_npz_written_without_numpy_is_what_numpy_reads(maya, export, tmp_path):
    maya.load_scene(scene())
    export(tmp_path / "a.npz", ["tip", "arm"], start=1, end=4)
    with np.load(tmp_path / "a.npz", allow_pickle=False) as archive:
        header = json.loads(str(archive["header"]))
        assert archive["positions"].shape == (2, 4, 3) and archive["orientations"].shape == (2, 4, 4)
        assert archive["positions"].dtype == np.float64
    assert header["track_names"] == ["tip", "arm"] and header["frame_start"] == 1
    assert os.listdir(tmp_path) == ["a.npz"]
