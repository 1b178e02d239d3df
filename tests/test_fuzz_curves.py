"""Fuzzing the curves and export readers: real exported files, mutated byte by byte and by structure.

Seeds are real files written by every export (curves CSV, plain CSV, curves JSON, Dynamixel CSV
and JSON, C headers with ticks and with floats), from curves that carry limits, hardware ids and
recorded violations. Each case mutates one seed — bytes flipped, spans deleted, duplicated or cut
short, hostile bytes inserted (0xff, NUL, a BOM), hostile tokens put in CSV cells, header cells and
C array bodies (1e308, inf, nan, ...), JSON values anywhere in the document swapped for hostile ones
(Infinity, NaN, 2**70, strings, lists, null) — then reads it back with the matching reader and
uses what it read (limit check, conversion to values, a second export).

Outcome classes: ``ok`` (read, and the result is consistent), ``clean`` (a one-line LooprigError
naming the file), ``traceback`` (any other exception, or an error that spans lines or does not
name the file), ``hang`` (more than 10 s), ``wrong`` (read without complaint but inconsistent:
values not finite, shapes that disagree, ticks that are not whole numbers, or a second export and
read that changes values, times, ticks or the recorded violations). The normal run tries a quick
slice; ``LOOPRIG_FUZZ=1`` runs 12,000 cases and prints the counts.
"""

import json
import math
import os
import random
import re
import signal
from collections import Counter
from pathlib import Path

import numpy as np
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.curves.limit_checks import all_violations
from looprig.core.errors import LooprigError
from looprig.core.export import (
    CHeaderSettings,
    DynamixelMotor,
    DynamixelSettings,
    plain_csv_metadata_path,
    read_c_header,
    read_csv,
    read_dynamixel_csv,
    read_dynamixel_json,
    read_json,
    write_c_header,
    write_csv,
    write_dynamixel_csv,
    write_dynamixel_json,
    write_json,
    write_plain_csv,
)

FULL = bool(os.environ.get("LOOPRIG_FUZZ"))
CASES = 12_000 if FULL else 400
HANG_SECONDS = 10

HOSTILE_TOKENS = [
    "1e308",
    "-1e308",
    "1e309",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "Infinity",
    "-0",
    "0",
    "-1",
    "99999999999999999999999",
    "1e-320",
    "",
    " ",
    "x",
    "é",
    "\u202e",
    "0x10",
    "1_000",
    "[",
    "]",
    "{",
    "}",
    '"',
    ",",
    "\\",
    "null",
    "true",
    "1e18",
    "-9223372036854775809",
]
HOSTILE_BYTES = [b"\xff", b"\x00", b"\xef\xbb\xbf", b"\xc3", b"\r", b"\n", b"\n\n", b",", b"#", b"\xe9"]
HOSTILE_JSON = [
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    -1e308,
    2**70,
    -(2**70),
    0,
    -1,
    0.5,
    True,
    None,
    "x",
    "",
    [],
    {},
    [1, 2],
    [[0]],
    {"a": 1},
    "1e308",
    [math.inf],
    [None],
    ["rad"],
]


def seed_curves() -> ActuatorCurves:
    """Three actuators (angles and a slider) with limits, ids, and violations to record."""
    t = np.arange(61) / 30.0
    values = np.column_stack([np.sin(2 * np.pi * t), 0.3 * np.cos(np.pi * t), 0.01 * t])
    return ActuatorCurves(
        t,
        values,
        ("hip", "knee/1", "lift"),
        units=("rad", "rad", "m"),
        lower=[-0.9, -1.0, 0.0],
        upper=[0.9, 1.0, 0.05],
        velocity_limit=[5.0, 3.0, 0.1],
        hardware_ids=(1, "can:7", None),
    )


def write_seeds(folder: Path) -> dict[str, Path]:
    curves = seed_curves()
    servo = DynamixelSettings(motors={"lift": DynamixelMotor(100, -1, metres_per_revolution=0.04)})
    paths = {
        "csv": folder / "seed.csv",
        "json": folder / "seed.json",
        "dxl_csv": folder / "seed.dxl.csv",
        "dxl_json": folder / "seed.dxl.json",
        "h_ticks": folder / "seed_ticks.h",
        "h_float": folder / "seed_float.h",
    }
    write_csv(curves, paths["csv"], allow_violations=True)
    write_json(curves, paths["json"], allow_violations=True)
    write_dynamixel_csv(curves, paths["dxl_csv"], servo, allow_violations=True)
    write_dynamixel_json(curves, paths["dxl_json"], servo, allow_violations=True)
    write_c_header(curves, paths["h_ticks"], CHeaderSettings(dynamixel=servo), allow_violations=True)
    write_c_header(curves, paths["h_float"], CHeaderSettings(kind="float"), allow_violations=True)
    paths["plain_csv"] = folder / "seed.plain.csv"
    write_plain_csv(curves, paths["plain_csv"], allow_violations=True)
    paths["plain_meta"] = plain_csv_metadata_path(paths["plain_csv"])
    return paths


# --------------------------------------------------------------------------- mutations
def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not out:
            out += rng.choice(HOSTILE_BYTES)
            continue
        i = rng.randrange(len(out))
        op = rng.randrange(6)
        if op == 0:
            out[i] = rng.randrange(256)
        elif op == 1:
            del out[i : i + rng.randint(1, 40)]
        elif op == 2:
            out[i:i] = rng.choice(HOSTILE_BYTES)
        elif op == 3:
            j = min(len(out), i + rng.randint(1, 200))
            out[i:i] = out[i:j]
        elif op == 4:
            del out[i:]
        else:
            out[i:i] = rng.choice(HOSTILE_TOKENS).encode()
    return bytes(out)


def mutate_csv(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(lines))
        line = lines[k]
        if line.startswith("#"):
            key = line.partition(": ")[0]
            if rng.random() < 0.7:
                replacement = json.dumps(rng.choice(HOSTILE_JSON))
            else:
                replacement = rng.choice(HOSTILE_TOKENS)
            lines[k] = f"{key}: {replacement}"
        else:
            cells = line.split(",")
            c = rng.randrange(len(cells))
            token = rng.choice(HOSTILE_TOKENS)
            unit = rng.choice(["rad", "m", "s", "tick", "deg", ""])
            cells[c] = token if rng.random() < 0.6 else f"{token} [{unit}]"
            if rng.random() < 0.2:
                cells.append(token)
            lines[k] = ",".join(cells)
    return "\n".join(lines)


def json_paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from json_paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:8]):
            yield from json_paths(value, (*prefix, i))


def mutate_json(text: str, rng: random.Random) -> str:
    doc = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in json_paths(doc) if p]
        path = rng.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if rng.random() < 0.15 and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = rng.choice(HOSTILE_JSON)
    return json.dumps(doc)  # allow_nan: writes Infinity and NaN as Python's json would read them


NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?f?")


def mutate_header(text: str, rng: random.Random) -> str:
    numbers = list(NUMBER.finditer(text))
    out = text
    for _ in range(rng.randint(1, 3)):
        m = rng.choice(numbers)
        token = rng.choice(HOSTILE_TOKENS + ["1e39f", "3.4e38f", "-2147483649", "65536", "0x7fff"])
        out = out[: m.start()] + token + out[m.end() :]
        numbers = list(NUMBER.finditer(out))
    return out


STRUCTURED = {
    "csv": mutate_csv,
    "plain_csv": mutate_csv,
    "dxl_csv": mutate_csv,
    "json": mutate_json,
    "plain_meta": mutate_json,
    "dxl_json": mutate_json,
    "h_ticks": mutate_header,
    "h_float": mutate_header,
}


# --------------------------------------------------------------------------- reading and checking
def consistent_curves(curves: ActuatorCurves) -> bool:
    return (
        curves.values.shape == (curves.n_frames, curves.n_actuators)
        and bool(np.all(np.isfinite(curves.values)))
        and bool(np.all(np.isfinite(curves.times)))
    )


def use(kind: str, path: Path, out: Path) -> bool:
    """Read ``path`` with the reader for ``kind`` and use the result; True if consistent."""
    if kind == "plain_meta":  # the side file of a plain CSV, read through the CSV it describes
        data = path.with_name(path.name.replace(".meta.json", ".csv"))
        return use("plain_csv", data, out)
    if kind in ("csv", "plain_csv", "json"):
        curves = (read_json if kind == "json" else read_csv)(path)
        recorded = write_json(curves, out, allow_violations=True)
        again = read_json(out)  # a second round trip must lose nothing
        return (
            consistent_curves(curves)
            and recorded == all_violations(curves)
            and np.array_equal(again.values, curves.values)
            and np.array_equal(again.times, curves.times)
            and list(again.carried_violations) == recorded
        )
    if kind.startswith("dxl"):
        ticks = (read_dynamixel_json if kind == "dxl_json" else read_dynamixel_csv)(path)
        whole = ticks.ticks.dtype.kind == "i" and ticks.ticks.shape == (ticks.times.size, len(ticks.names))
        curves = ticks.to_curves()
        write_dynamixel_json(curves, out, ticks.settings, allow_violations=True)
        again = read_dynamixel_json(out)  # values back to the same ticks
        return whole and consistent_curves(curves) and np.array_equal(again.ticks, ticks.ticks)
    header = read_c_header(path)
    return (
        header.values.shape[1] == len(header.names)
        and bool(np.all(np.isfinite(header.values)))
        and math.isfinite(header.rate_hz)
        and header.rate_hz > 0
    )


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang


def outcome(kind: str, path: Path, out: Path) -> tuple[str, str]:
    """(class, detail) of one case."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    try:
        good = use(kind, path, out)
    except Hang:
        return "hang", ""
    except LooprigError as exc:
        message = str(exc)
        names = (path.name, out.name, path.name.replace(".meta.json", ".csv"))
        named = any(name in message for name in names)
        if "\n" in message or not named:
            return "traceback", f"{type(exc).__name__}: {message[:300]}"
        return "clean", ""
    except Exception as exc:  # anything else is a bug
        return "traceback", f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        signal.alarm(0)
    return ("ok", "") if good else ("wrong", "")


def run_fuzz(folder: Path, cases: int, seed: int = 20261122) -> tuple[Counter, list[str]]:
    seeds = write_seeds(folder)
    rng = random.Random(seed)
    counts: Counter = Counter()
    examples: list[str] = []
    kinds = sorted(seeds)
    for case in range(cases):
        kind = kinds[case % len(kinds)]
        data = seeds[kind].read_bytes()
        if rng.random() < 0.5:
            mutated = mutate_bytes(data, rng)
        else:
            mutated = STRUCTURED[kind](data.decode("utf-8"), rng).encode("utf-8")
        path = folder / f"case{seeds[kind].name}"
        path.write_bytes(mutated)
        if kind == "plain_meta":  # the intact CSV beside the mutated side file
            (folder / "caseseed.plain.csv").write_bytes(seeds["plain_csv"].read_bytes())
        kind_outcome, detail = outcome(kind, path, folder / "again.json")
        counts[kind_outcome] += 1
        if kind_outcome in ("traceback", "hang", "wrong") and len(examples) < 20:
            examples.append(f"case {case} {kind}: {kind_outcome} {detail}")
    return counts, examples


def test_unmutated_seeds_read_back(tmp_path):
    for kind, path in write_seeds(tmp_path).items():
        assert outcome(kind, path, tmp_path / "again.json") == ("ok", ""), kind


def test_fuzz_curves_readers(tmp_path, capsys):
    counts, examples = run_fuzz(tmp_path, CASES)
    with capsys.disabled():
        print(f"\ncurves readers fuzz, {CASES} cases: {dict(sorted(counts.items()))}")
    assert sum(counts.values()) == CASES
    assert counts["traceback"] == 0 and counts["hang"] == 0 and counts["wrong"] == 0, "\n".join(examples)
    assert counts["clean"] > CASES // 4  # the mutations do reach the readers' checks


# --------------------------------------------------------------------------- writers
WRITERS = {
    "csv": (write_csv, read_csv),
    "plain_csv": (write_plain_csv, read_csv),
    "json": (write_json, read_json),
    "dxl_csv": (write_dynamixel_csv, read_dynamixel_csv),
    "dxl_json": (write_dynamixel_json, read_dynamixel_json),
}
MAGNITUDES = [0.0, 1e-300, 1.0, 3.2, 7.0, 1e3, 1e9, 1e18, 1e150, 1e300, 1.7e308]


def test_writers_never_write_garbage_for_any_finite_curves(tmp_path):
    """Random finite curves (up to 1.7e308), limits and servo settings: every writer either
    writes a file that reads back to the same samples, ticks within the register and every
    violation recorded, or raises one LooprigError line and leaves the previous file intact."""
    rng = random.Random(7)
    outcomes: Counter = Counter()
    for case in range(300 if not FULL else 3000):
        frames = rng.randint(1, 12)
        times = np.cumsum([rng.choice([1e-3, 0.05, 1.0]) for _ in range(frames)])
        scale = rng.choice(MAGNITUDES)
        values = np.array([[rng.uniform(-1, 1) * scale, rng.uniform(-4, 4)] for _ in range(frames)])
        limit = rng.choice([np.inf, 0.5, 10.0])
        curves = ActuatorCurves(
            times, values, ("a", "b"), lower=-limit, upper=limit, velocity_limit=rng.choice([np.inf, 2.0])
        )
        mode = rng.choice(["position", "extended_position"])
        name = rng.choice(sorted(WRITERS))
        write, read = WRITERS[name]
        path = tmp_path / f"{case}.{name}"
        path.write_text("previous")
        options = {"allow_violations": rng.random() < 0.7}
        if name.startswith("dxl"):
            options["settings"] = DynamixelSettings(mode=mode)
        try:
            recorded = write(curves, path, **options)
        except LooprigError as exc:
            assert "\n" not in str(exc) and path.read_text() == "previous", (case, str(exc))
            outcomes["refused"] += 1
            continue
        back = read(path)
        if name.startswith("dxl"):
            assert np.all(np.abs(back.ticks) <= 2**31 - 1)
            np.testing.assert_allclose(back.to_values(), values, atol=np.pi / 4096 * (1 + 1e-9), rtol=1e-15)
            assert list(back.violations) == recorded
        else:
            np.testing.assert_array_equal(back.values, values)
            assert list(back.carried_violations) == recorded
        outcomes["written"] += 1
    assert outcomes["written"] > 0 and outcomes["refused"] > 0, outcomes
