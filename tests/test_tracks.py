"""Tracks files (JSON, NPZ) and BVH: round trips, unit and up-axis conversion, validation."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from looprig.core.errors import LooprigError
from looprig.core.maths.rotations import quat_from_rotvec, quat_to_matrix
from looprig.core.tracks.bvh import read_bvh
from looprig.core.tracks.format import (
    Clip,
    Track,
    TrackError,
    clip_from_dict,
    from_looprig,
    read_tracks,
    to_looprig,
    write_tracks,
)


def document(**changes):
    data = {
        "format": "looprig-tracks",
        "version": 1,
        "fps": 24,
        "length_unit": "cm",
        "up_axis": "Y",
        "source": {"application": "Maya 2025"},
        "frame_start": 1,
        "frame_end": 3,
        "tracks": {
            "hand": {
                "position": [[0, 100, 0], [0, 101, 0], [10, 102, -20]],
                "orientation": [[1, 0, 0, 0], [1, 0, 0, 0], [np.cos(0.25), 0, np.sin(0.25), 0]],
            },
            "foot": {"position": [[10, 0, 5], [10, 0, 5], [10, 0, 5]]},
        },
    }
    data.update(changes)
    return data


def test_y_up_centimetres_become_z_up_metres():
    clip = clip_from_dict(document())
    hand = clip.tracks["hand"]
    # (x, y, z) cm, Y up -> (x, -z, y) m, Z up
    np.testing.assert_allclose(hand.positions, [[0, 0, 1], [0, 0, 1.01], [0.1, 0.2, 1.02]], atol=1e-15)
    np.testing.assert_allclose(clip.tracks["foot"].positions[0], [0.1, -0.05, 0.0], atol=1e-15)
    # identity orientation in a Y-up world: the object's y axis (Maya's up) is looprig's up (z)
    R = quat_to_matrix(hand.orientations[0])
    np.testing.assert_allclose(R @ [0, 1, 0], [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(R @ [1, 0, 0], [1, 0, 0], atol=1e-15)
    # a turn of 0.5 rad about Maya's up (y) is a turn about looprig's up (z) of the object
    # 0.5 rad about Maya's up (y) is 0.5 rad about looprig's up (z): x axis -> (cos, sin, 0)
    R2 = quat_to_matrix(hand.orientations[2])
    np.testing.assert_allclose(R2 @ [1, 0, 0], [np.cos(0.5), np.sin(0.5), 0.0], atol=1e-15)
    assert not clip.tracks["foot"].has_orientation
    assert (clip.fps, clip.frame_start, clip.frame_end, clip.n_frames) == (24.0, 1, 3, 3)
    np.testing.assert_allclose(clip.times, np.array([1, 2, 3]) / 24)
    assert clip.source["application"] == "Maya 2025" and clip.source["length_unit"] == "cm"


@pytest.mark.parametrize(
    ("unit", "scale"), [("m", 1.0), ("cm", 0.01), ("mm", 0.001), ("in", 0.0254), ("ft", 0.3048)]
)
def test_units(unit, scale):
    p, q = to_looprig([[1.0, 2.0, 3.0]], [[1.0, 0, 0, 0]], unit, "Z")
    np.testing.assert_allclose(p, [[scale, 2 * scale, 3 * scale]])
    np.testing.assert_allclose(q, [[1.0, 0, 0, 0]])


finite = st.floats(-1e4, 1e4, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(finite, min_size=3, max_size=3),
    st.lists(st.floats(-3, 3), min_size=3, max_size=3),
    st.sampled_from(["m", "cm", "mm", "in", "ft"]),
    st.sampled_from(["Y", "Z"]),
)
def test_conversion_round_trips(p, rotvec, unit, up):
    q = quat_from_rotvec(np.array(rotvec))
    p2, q2 = from_looprig(*to_looprig(np.array(p), q, unit, up), unit, up)
    np.testing.assert_allclose(p2, p, atol=1e-9 * max(1.0, np.abs(p).max()))
    assert abs(abs(q2 @ q) - 1) < 1e-12


def random_clip(seed=0, frames=20, tracks=3):
    rng = np.random.default_rng(seed)
    out = {}
    for k in range(tracks):
        q = quat_from_rotvec(rng.normal(size=(frames, 3)))
        out[f"track {k}/ü"] = Track(rng.normal(size=(frames, 3)), np.where(q[:, :1] < 0, -q, q), k != 1)
    out["track 1/ü"].orientations[:] = [1, 0, 0, 0]
    return Clip(30.0, 5, out, {"application": "test"})


@pytest.mark.parametrize("suffix", [".json", ".npz"])
@pytest.mark.parametrize(("unit", "up"), [("m", "Z"), ("cm", "Y"), ("mm", "Y")])
def test_file_round_trip(tmp_path, suffix, unit, up):
    clip = random_clip()
    path = write_tracks(clip, tmp_path / f"clip{suffix}", length_unit=unit, up_axis=up)
    back = read_tracks(path)
    assert (back.fps, back.frame_start, back.n_frames) == (clip.fps, clip.frame_start, clip.n_frames)
    assert list(back.tracks) == list(clip.tracks)
    assert back.source["application"] == "test" and back.source["length_unit"] == unit
    for name, track in clip.tracks.items():
        np.testing.assert_allclose(back.tracks[name].positions, track.positions, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(
            np.abs(np.sum(back.tracks[name].orientations * track.orientations, -1)), 1.0, atol=1e-12
        )
        assert back.tracks[name].has_orientation == track.has_orientation
    if suffix == ".json":
        data = json.loads(path.read_text())
        assert data["length_unit"] == unit and data["up_axis"] == up
        assert "orientation" not in data["tracks"]["track 1/ü"]


def test_samples_for_retargeting():
    clip = clip_from_dict(document())
    samples = clip.samples()
    np.testing.assert_allclose(samples.times, clip.times)
    np.testing.assert_allclose(samples.rotations["hand"], quat_to_matrix(clip.tracks["hand"].orientations))
    np.testing.assert_allclose(samples.positions["foot"], clip.tracks["foot"].positions)


def _bad(edit):
    data = document()
    edit(data)
    return data


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (
            _bad(lambda d: d["tracks"]["hand"]["position"].__setitem__(1, [0, float("nan"), 0])),
            "track 'hand', frame 2: position [0.0, nan, 0.0] is not finite",
        ),
        (
            _bad(lambda d: d["tracks"]["hand"]["orientation"].__setitem__(2, [0.5, 0, 0, 0])),
            "track 'hand', frame 3: orientation [0.5, 0.0, 0.0, 0.0] is not a unit quaternion (norm 0.5)",
        ),
        (
            _bad(lambda d: d["tracks"]["foot"]["position"].pop()),
            "track 'foot': 2 position samples, but the frame",
        ),
        (
            _bad(lambda d: d["tracks"]["foot"]["position"].__setitem__(0, [1, 2])),
            "track 'foot', frame 0: position sample is not 3 numbers",
        ),
        (
            _bad(lambda d: d["tracks"]["hand"].__setitem__("orientation", [[1, 0, 0, 0]])),
            "track 'hand': orientations must be 3 quaternions",
        ),
        (_bad(lambda d: d.update(length_unit="furlong")), "unknown length unit 'furlong'; units are: m, cm"),
        (_bad(lambda d: d.update(up_axis="X")), "unknown up axis 'X'"),
        (_bad(lambda d: d.update(fps=0)), "fps must be a positive number"),
        (_bad(lambda d: d.update(version=7)), "the file is version 7"),
        (_bad(lambda d: d.update(format="something")), 'expected "format": "looprig-tracks"'),
        (_bad(lambda d: d.update(frame_end=0)), "frame_end 0 is before frame_start 1"),
        (_bad(lambda d: d.update(tracks=[])), "'tracks' must be an object"),
        (_bad(lambda d: d["tracks"].__setitem__("x", {"orientation": []})), "track 'x': expected an object"),
    ],
)
def test_invalid_tracks(tmp_path, data, fragment):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TrackError) as info:
        read_tracks(path)
    assert fragment in str(info.value) and str(path) in str(info.value)
    assert isinstance(info.value, LooprigError)


def test_nan_tokens_and_syntax_errors(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document()).replace('"fps": 24', '"fps": NaN'))
    with pytest.raises(TrackError, match="fps must be a positive number, got nan"):
        read_tracks(path)
    path.write_text(json.dumps(document()).replace("[10, 0, 5]]", "[10, Infinity, 5]]"))
    with pytest.raises(TrackError, match="track 'foot', frame 3: position"):
        read_tracks(path)
    path.write_text('{"format": "looprig-tracks",\n "fps": }')
    with pytest.raises(TrackError, match="not valid JSON") as info:
        read_tracks(path)
    assert info.value.line == 2
    path.with_suffix(".npz").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(TrackError, match="not a looprig tracks NPZ"):
        read_tracks(path.with_suffix(".npz"))


BVH = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Spine
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 5 0
    }
  }
  JOINT Leg
  {
    OFFSET 5 0 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 -20 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
0 100 0 0 0 0 0 0 0 0 0 0
10 100 0 90 0 0 0 90 0 0 0 0
"""


def test_bvh_world_positions():
    """Frame 2: hips at (10, 100, 0) cm turned 90 deg about z; the spine turned 90 deg about x on top.

    Hips z-turn maps the spine offset (0, 10, 0) to (-10, 0, 0): spine at (0, 100, 0).
    Spine rotation R = Rz(90) Rx(90); its End Site offset (0, 5, 0): Rx(90) gives (0, 0, 5), Rz(90) keeps it:
    (0, 100, 5). Leg offset (5, 0, 0) -> (0, 5, 0): leg at (10, 105, 0); its end (0, -20, 0) -> (20, 0, 0)
    under Rz(90): (30, 105, 0). Then cm, Y up -> m, Z up: (x, y, z) -> (x, -z, y) / 100.
    """
    clip = read_bvh(None, text=BVH)
    assert clip.fps == pytest.approx(25.0) and clip.n_frames == 2 and clip.frame_start == 1
    assert list(clip.tracks) == ["Hips", "Spine", "Spine_end", "Leg", "Leg_end"]

    def yup_cm(x, y, z):
        return np.array([x, -z, y]) / 100

    expected0 = {
        "Hips": (0, 100, 0),
        "Spine": (0, 110, 0),
        "Spine_end": (0, 115, 0),
        "Leg": (5, 100, 0),
        "Leg_end": (5, 80, 0),
    }
    expected1 = {
        "Hips": (10, 100, 0),
        "Spine": (0, 100, 0),
        "Spine_end": (0, 100, 5),
        "Leg": (10, 105, 0),
        "Leg_end": (30, 105, 0),
    }
    for name in expected0:
        np.testing.assert_allclose(clip.tracks[name].positions[0], yup_cm(*expected0[name]), atol=1e-12)
        np.testing.assert_allclose(clip.tracks[name].positions[1], yup_cm(*expected1[name]), atol=1e-12)
    # orientations: world axes of the spine at frame 2 = C Rz(90) Rx(90)
    C = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]])
    Rx = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    np.testing.assert_allclose(quat_to_matrix(clip.tracks["Spine"].orientations[1]), C @ Rz @ Rx, atol=1e-12)


@pytest.mark.parametrize(
    ("text", "fragment", "line"),
    [
        (BVH.replace("Frames: 2", "Frames: 3"), "needs 36 values, found 24", None),
        (BVH.replace("OFFSET 0 10 0", "OFFSET 0 ten 0"), "OFFSET of 'Spine': 'ten' is not a number", 8),
        (
            BVH.replace("Zrotation Xrotation Yrotation\n    End", "Zrotation Wrotation Yrotation\n    End"),
            "unknown channel 'Wrotation'",
            9,
        ),
        (BVH.replace("10 100 0 90", "10 nan 0 90"), "frame 2: 'nan' is not finite", 29),
        (BVH.replace("Frame Time: 0.04", "Frame Time: 0"), "frame time must be positive", None),
        (BVH[:60], "file ends where", None),
        ("HIERARCHY\nJOINT x", "expected ROOT", 2),
        (BVH.replace("JOINT Leg", "JOINT Spine"), "joint name 'Spine' appears twice", None),
    ],
)
def test_bvh_errors(text, fragment, line):
    with pytest.raises(TrackError) as info:
        read_bvh("walk.bvh", text=text)
    assert fragment in str(info.value) and "walk.bvh" in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_bvh_deep_nesting_is_refused():
    text = "HIERARCHY\nROOT r\n" + "{ OFFSET 0 0 0 CHANNELS 0 JOINT j\n" * 300
    with pytest.raises(TrackError, match="nested more than"):
        read_bvh("deep.bvh", text=text)
