"""Fuzzing the loaders: any input gives a valid object or a documented looprig error.

Valid files (the four-bar fixtures, a tracks file, a BVH clip) are mutated —
characters replaced, inserted or deleted, the text cut short, attribute values
and numbers swapped for hostile ones (NaN, inf, huge, negative, empty, zero
vectors) — and structured random URDF trees are generated. Every load must
return a Mechanism / Clip or raise a :class:`LooprigError` (FileFormatError,
TrackError, ...); anything else is a bug. About 3000 cases in the normal run;
``LOOPRIG_FUZZ=1`` runs ten times more.
"""

import json
import os
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from looprig.cad_import import load_mechanism
from looprig.cad_import.mjcf import load_mjcf
from looprig.cad_import.native_read import load_native
from looprig.cad_import.urdf import load_urdf
from looprig.core.errors import LooprigError
from looprig.core.model.mechanism import Mechanism
from looprig.core.tracks.bvh import read_bvh
from looprig.core.tracks.format import Clip, clip_from_dict

DATA = Path(__file__).parent / "data"
SCALE = 10 if os.environ.get("LOOPRIG_FUZZ") else 1


def fuzz_settings(examples: int):
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        database=None,
    )


HOSTILE = [
    "nan",
    "inf",
    "-inf",
    "1e309",
    "-1",
    "0",
    "0 0 0",
    "",
    " ",
    "1 2",
    "1 2 3 4",
    "x",
    "\u00e9",
    "-0",
    "1e-320",
    "99999999999999999999",
    "package://",
    "../../../../etc/passwd",
    "&amp;",
    "<",
]


@st.composite
def mutated(draw, text: str):
    """``text`` with a few random edits."""
    out = text
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 5))
        if not out:
            break
        i = draw(st.integers(0, len(out) - 1))
        if choice == 0:  # replace a character
            out = out[:i] + draw(st.characters(codec="utf-8", exclude_categories=["Cs"])) + out[i + 1 :]
        elif choice == 1:  # delete a span
            out = out[:i] + out[i + draw(st.integers(1, 20)) :]
        elif choice == 2:  # insert a hostile token
            out = out[:i] + draw(st.sampled_from(HOSTILE)) + out[i:]
        elif choice == 3:  # cut short
            out = out[:i]
        elif choice == 4:  # swap a quoted attribute value / number for a hostile one
            start = out.find('"', i)
            end = out.find('"', start + 1) if start >= 0 else -1
            if start >= 0 and end > start:
                out = out[: start + 1] + draw(st.sampled_from(HOSTILE)) + out[end:]
        else:  # duplicate a line
            lines = out.splitlines(keepends=True)
            k = draw(st.integers(0, len(lines) - 1))
            out = "".join([*lines[: k + 1], lines[k], *lines[k + 1 :]])
    return out


def check(load, text, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = load(text)
        except LooprigError:
            return
    assert isinstance(result, kind)


URDF_TEXTS = [(DATA / name).read_text() for name in ("fourbar_closing.urdf", "fourbar_looprig.urdf")]
MJCF_TEXT = (DATA / "fourbar_connect.xml").read_text()
NATIVE_TEXT = (DATA / "fourbar.looprig.json").read_text()


@fuzz_settings(900)
@given(st.sampled_from(URDF_TEXTS).flatmap(mutated))
def test_fuzz_urdf(tmp_path_factory, text):
    path = tmp_path_factory.getbasetemp() / "fuzz.urdf"

    def load(t):
        return load_urdf(path, text=t.encode("utf-8", "surrogatepass"), sidecar=None).mechanism

    check(load, text, Mechanism)


@fuzz_settings(250)
@given(mutated(MJCF_TEXT))
def test_fuzz_mjcf(text):
    check(lambda t: load_mjcf("fuzz.xml", text=t).mechanism, text, Mechanism)


@fuzz_settings(700)
@given(mutated(NATIVE_TEXT))
def test_fuzz_native(text):
    check(lambda t: load_native("fuzz.looprig.json", text=t).mechanism, text, Mechanism)


TRACKS = json.dumps(
    {
        "format": "looprig-tracks",
        "version": 1,
        "fps": 30,
        "length_unit": "cm",
        "up_axis": "Y",
        "frame_start": 0,
        "frame_end": 1,
        "tracks": {
            "a": {"position": [[0, 1, 2], [3, 4, 5]], "orientation": [[1, 0, 0, 0], [0, 1, 0, 0]]},
            "b": {"position": [[0, 0, 0], [1, 1, 1]]},
        },
    },
    indent=1,
)


@fuzz_settings(600)
@given(mutated(TRACKS))
def test_fuzz_tracks(text):
    def load(t):
        try:
            data = json.loads(t)
        except (ValueError, RecursionError):
            return Clip(1.0, 0, {})  # not JSON: read_tracks reports it; nothing to check here
        return clip_from_dict(data, "fuzz.json")

    check(load, text, Clip)


BVH = (Path(__file__).parent / "test_tracks.py").read_text().split('BVH = """', 1)[1].split('"""', 1)[0]


@fuzz_settings(500)
@given(mutated(BVH))
@example(BVH.replace("CHANNELS 3", "CHANNELS \u00b9", 1))  # a digit to str.isdigit, not to int()
def test_fuzz_bvh(text):
    check(lambda t: read_bvh("fuzz.bvh", text=t), text, Clip)


# ---------------------------------------------------------------- structured random URDF trees
KINDS = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball", ""]
NUMBER = st.one_of(st.floats(-10, 10, allow_nan=False), st.sampled_from([float("nan"), float("inf"), 0.0]))


@st.composite
def urdf_trees(draw):
    n = draw(st.integers(1, 6))
    links = [f"l{k}" for k in range(n)]
    parts = []
    for link in links:
        mass = draw(st.one_of(st.none(), NUMBER))
        inertial = "" if mass is None else f'<inertial><mass value="{mass}"/></inertial>'
        parts.append(f'<link name="{link}">{inertial}</link>')
    for k in range(1, n + draw(st.integers(0, 2))):
        parent = draw(st.sampled_from([*links, "ghost"]))
        child = links[k] if k < n else draw(st.sampled_from(links))
        axis = " ".join(str(draw(NUMBER)) for _ in range(3))
        xyz = " ".join(str(draw(NUMBER)) for _ in range(3))
        lower, upper = draw(NUMBER), draw(NUMBER)
        parts.append(
            f'<joint name="j{k}" type="{draw(st.sampled_from(KINDS))}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
            f'<limit lower="{lower}" upper="{upper}" velocity="{draw(NUMBER)}"/></joint>'
        )
    if n > 1 and draw(st.booleans()):
        a, b = draw(st.sampled_from(links)), draw(st.sampled_from(links))
        kind = draw(st.sampled_from(["spherical", "revolute", "fixed", "prismatic"]))
        parts.append(f'<looprig_closure name="c" kind="{kind}" frame1="{a}" frame2="{b}"/>')
    if draw(st.booleans()):
        parts.append(f'<looprig_actuator joint="j{draw(st.integers(0, n))}"/>')
    return '<robot name="r">' + "".join(parts) + "</robot>"


@fuzz_settings(300)
@given(urdf_trees())
def test_fuzz_random_urdf_trees(tmp_path_factory, text):
    path = tmp_path_factory.getbasetemp() / "tree.urdf"
    check(lambda t: load_urdf(path, text=t, sidecar=None).mechanism, text, Mechanism)


def test_fuzz_files_on_disk(tmp_path):
    """The dispatching entry point on odd files: empty, binary, directories, wrong extension."""
    cases = {
        "empty.urdf": b"",
        "binary.xml": bytes(range(256)),
        "text.json": b"[1, 2, 3]",
        "nothing.bin": b"\x00\x01",
        "unclosed.xml": b"<mujoco>",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(LooprigError):
            load_mechanism(tmp_path / name)
    with pytest.raises(LooprigError):
        load_mechanism(tmp_path)
    with pytest.raises(LooprigError):
        load_mechanism(tmp_path / "does-not-exist.urdf")


# ---------------------------------------------------------------- the shared models, counted
MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
#: (file to mutate, name it is written as, the unmutated companion files written beside it)
SOURCES = [
    (DATA / "fourbar_closing.urdf", "robot.urdf", {}),
    (DATA / "fourbar_looprig.urdf", "robot.urdf", {}),
    (DATA / "fourbar_connect.xml", "model.xml", {}),
    (DATA / "fourbar.looprig.json", "model.looprig.json", {}),
    (
        MODELS / "gepetto_5bar_linkage/robot.urdf",
        "robot.urdf",
        {"robot.yaml": "gepetto_5bar_linkage/robot.yaml"},
    ),
    (
        MODELS / "gepetto_5bar_linkage/robot.yaml",
        "robot.yaml",
        {"robot.urdf": "gepetto_5bar_linkage/robot.urdf"},
    ),
    (MODELS / "gepetto_digit_like/robot.yaml", "robot.yaml", {"robot.urdf": "gepetto_digit_like/robot.urdf"}),
    (MODELS / "gepetto_digit_like/robot.urdf", "robot.urdf", {"robot.yaml": "gepetto_digit_like/robot.yaml"}),
    (MODELS / "reachy_mini/urdf/robot.urdf", "robot.urdf", {}),
    (MODELS / "mujoco_testdata_equality/equality_site.xml", "model.xml", {}),
    (MODELS / "mujoco_testdata_equality/jdotv_weld_3d.xml", "model.xml", {}),
    (MODELS / "robotiq_2f85/2f85.xml", "model.xml", {}),
    (MODELS / "agility_cassie/cassie.xml", "model.xml", {}),
]
HOSTILE_BYTES = [b"\xff", b"\xfe\xff", b"\xc3(", b"\x00", b"\xed\xa0\x80", b"\x80", b"\xf4\x90\x80\x80"]
CASE_SECONDS = 20  # a case still running after this long is counted as a hang


EXAMPLES: dict[str, str] = {}  # one case of each failing class, for the assertion message


class Hang(Exception):
    pass


def mutate_bytes(rng, data: bytes) -> bytes:
    """A few byte-level or structured edits: invalid UTF-8, flipped and deleted bytes, cuts,
    attribute values and numbers swapped for hostile ones."""
    out = bytearray(data)
    for _ in range(rng.integers(1, 4)):
        if not out:
            break
        i = int(rng.integers(0, len(out)))
        choice = rng.integers(0, 7)
        if choice == 0:
            out[i] = int(rng.integers(0, 256))
        elif choice == 1:
            out[i:i] = HOSTILE_BYTES[rng.integers(len(HOSTILE_BYTES))]
        elif choice == 2:
            del out[i : i + int(rng.integers(1, 40))]
        elif choice == 3:
            del out[i:]
        elif choice == 4:
            out[i:i] = HOSTILE[rng.integers(len(HOSTILE))].encode()
        else:  # replace an attribute value or a number token
            start = out.find(b'"', i)
            end = out.find(b'"', start + 1) if start >= 0 else -1
            if start >= 0 and end > start:
                out[start + 1 : end] = HOSTILE[rng.integers(len(HOSTILE))].encode()
    return bytes(out)


def classify(path: Path) -> str:
    """Load one file: ``loaded``, ``clean error`` (one line, a LooprigError naming the file),
    ``unclear error``, ``traceback`` (any other exception), ``hang`` or ``silently wrong``
    (loaded, but masses, limits or the assembled loops are not sound)."""
    import signal

    import numpy as np
    from looprig.cad_import import load_model
    from looprig.core.model.constraints import ConstraintSet

    def alarm(*_):
        raise Hang

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_model(path, missing_meshes="warn")
    except Hang:
        EXAMPLES.setdefault("hang", str(path))
        return "hang"
    except LooprigError as error:
        message = str(error)
        if "\n" not in message and str(path.parent) in message:
            return "clean error"
        EXAMPLES.setdefault("unclear error", message)
        return "unclear error"
    except Exception as error:
        EXAMPLES.setdefault("traceback", f"{path}: {type(error).__name__}: {error}")
        return "traceback"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    m = model.mechanism
    state = m.initial_state()
    constraints = ConstraintSet(m, actuated=False)
    sound = (
        np.all(np.isfinite(state))
        and all(np.isfinite(b.mass) and b.mass > 0 for b in m.bodies)
        and all(
            j.actuator.lower <= j.actuator.upper and j.actuator.velocity_limit > 0 for j in m.actuated_joints
        )
        and np.abs(constraints.residual(state)).max(initial=0.0) <= 1e-6 * constraints.length_scale
    )
    if not sound:
        EXAMPLES.setdefault("silently wrong", str(path))
    return "loaded" if sound else "silently wrong"


def run_shared_model_fuzz(cases: int, folder: Path, seed: int = 0) -> dict[str, int]:
    """``cases`` mutated files over :data:`SOURCES`; returns the count of each outcome."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sources = [(path.read_bytes(), name, companions) for path, name, companions in SOURCES if path.is_file()]
    counts = dict.fromkeys(
        ("loaded", "clean error", "unclear error", "traceback", "hang", "silently wrong"), 0
    )
    for case in range(cases):
        data, name, companions = sources[case % len(sources)]
        where = folder / f"case{case}"
        where.mkdir()
        for companion, source in companions.items():
            (where / companion).write_bytes((MODELS / source).read_bytes())
        target = where / name
        target.write_bytes(mutate_bytes(rng, data))
        load = where / "robot.urdf" if name == "robot.yaml" else target
        counts[classify(load)] += 1
    return counts


def test_fuzz_shared_models_counted(tmp_path):
    """Byte-level and structured mutations of the shared models (URDF, YAML side files,
    MJCF, native): 0 tracebacks, 0 hangs, 0 silently wrong, every error one clear line.
    A quick slice here; ``LOOPRIG_FUZZ=1`` runs 10,400 cases and prints the counts."""
    cases = 10_400 if os.environ.get("LOOPRIG_FUZZ") else 130
    counts = run_shared_model_fuzz(cases, tmp_path)
    print(f"\nshared-model fuzz, {cases} cases: {counts}")
    assert sum(counts.values()) == cases
    assert (
        counts["traceback"] == counts["hang"] == counts["silently wrong"] == counts["unclear error"] == 0
    ), (counts, EXAMPLES)
