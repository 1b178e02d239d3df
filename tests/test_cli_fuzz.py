"""The command line end to end under hostile files, and under ``kill -9``.

Fuzz: a four-bar shot's mapping and tracks files and a curves file in four
formats are mutated (structured: a JSON value replaced by a hostile one, a key
dropped, a CSV field replaced; byte level: bytes flipped, non-UTF-8 bytes
inserted, the file cut short, a chunk repeated) and fed to ``looprig.cli.main``
(``retarget``, ``check``, ``export``, ``play --dry-run``). Every case ends in one
outcome class:

* ``ok``: exit 0 and what was written is valid (curves readable and finite,
  the report's frame count equal to the curves');
* ``clean error``: exit 2 or 3 with one ``looprig: error:`` line;
* ``traceback``: an exception escaped ``main`` or the exit code is another;
* ``messy error``: exit 2 or 3 but not one error line;
* ``silently wrong``: exit 0 with invalid or inconsistent output;
* ``hang``: no answer within :data:`BUDGET_S`.

Only ``ok`` and ``clean error`` may occur. A quick slice (:data:`QUICK_CASES`)
runs in ``make test``; ``LOOPRIG_FUZZ=1`` runs :data:`FULL_CASES` and prints the
counts.

Kill: ``looprig retarget`` is killed with SIGKILL at times spread over its run,
in a folder holding an earlier complete run; what is left must never look like a
complete run it is not (a ``report.json`` always matches the curves beside it).
"""

import contextlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import (
    read_csv,
    read_dynamixel_json,
    read_json,
    write_csv,
    write_dynamixel_json,
    write_json,
)
from shots import fourbar_shot

from looprig.cli import main

FULL = bool(os.environ.get("LOOPRIG_FUZZ"))
QUICK_CASES, FULL_CASES = 120, 10_000
BUDGET_S = 120
HOSTILE_JSON = [
    None,
    True,
    False,
    0,
    -1,
    1e308,
    -1e308,
    1e-308,
    2**63,
    "x",
    "",
    [],
    {},
    [[]],
    "nan",
    float("nan"),
    float("inf"),
    -float("inf"),
    1e9,
    -1e9,
    0.001,
    "\u00e9\u00e9",
]
HOSTILE_FIELDS = [
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "",
    "x",
    "1e-320",
    "0",
    "-0",
    "99999999999999999999",
]


class Hang(BaseException):
    """Raised by the alarm when a case runs past the budget."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The seed files: name -> (bytes, the command line that reads it, with {} for its path)."""
    folder = tmp_path_factory.mktemp("seeds")
    tracks, mapping, _, _ = fourbar_shot(folder, "seed", 2.0, seconds=0.05, rate=60.0)
    t = np.arange(31) / 30.0
    curves = ActuatorCurves(
        t,
        np.column_stack([0.3 * np.sin(t), 0.2 * t]),
        ("crank", "slide"),
        units=("rad", "rad"),
        velocity_limit=2.0,
        lower=-1.0,
        upper=1.0,
        hardware_ids=(1, 2),
    )
    write_csv(curves, folder / "c.csv")
    write_json(curves, folder / "c.json")
    write_dynamixel_json(curves, folder / "c.dynamixel.json")
    retarget = ["retarget", "fourbar", "{tracks}", "--map", "{map}", "-o", "{out}", "--quiet"]
    seeds = {
        "map.json": (mapping.read_bytes(), [retarget]),
        "tracks.json": (tracks.read_bytes(), [retarget]),
        "c.csv": (
            (folder / "c.csv").read_bytes(),
            [["check", "{}"], ["export", "{}", "--format", "dynamixel-json", "-o", "{out}/x.json"]],
        ),
        "c.json": (
            (folder / "c.json").read_bytes(),
            [["check", "{}", "--strict"], ["play", "{}", "--dry-run"]],
        ),
        "c.dynamixel.json": ((folder / "c.dynamixel.json").read_bytes(), [["play", "{}", "--dry-run"]]),
    }
    return seeds, tracks, mapping


def mutate_json(rng: random.Random, data: bytes) -> bytes | None:
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node[:4]):
                walk(v, (*path, i))

    walk(doc, ())
    path = rng.choice(paths[1:] or paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if not path:
        return json.dumps(rng.choice(HOSTILE_JSON)).encode()
    if isinstance(parent, dict) and rng.random() < 0.2:
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(HOSTILE_JSON)
    return json.dumps(doc).encode()


def mutate_csv(rng: random.Random, data: bytes) -> bytes | None:
    lines = data.decode("utf-8", "replace").splitlines()
    rows = [i for i, line in enumerate(lines) if line and not line.startswith("#")]
    if not rows:
        return None
    i = rng.choice(rows)
    fields = lines[i].split(",")
    fields[rng.randrange(len(fields))] = rng.choice(HOSTILE_FIELDS)
    lines[i] = ",".join(fields)
    if rng.random() < 0.2:
        del lines[rng.choice(rows)]
    return ("\n".join(lines) + "\n").encode()


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    how = rng.randrange(4)
    if how == 0:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == 1:
        at = rng.randrange(len(data))
        data[at:at] = rng.choice([b"\xff\xfe", b"\xc3\x28", b"\x80", b"\x00"])
    elif how == 2:
        del data[rng.randrange(len(data)) :]
    else:
        at, size = rng.randrange(len(data)), rng.randint(1, 200)
        data[at:at] = data[at : at + size]
    return bytes(data)


def mutate(rng: random.Random, name: str, data: bytes) -> bytes:
    if rng.random() < 0.6:
        structured = (mutate_csv if name.endswith(".csv") else mutate_json)(rng, data)
        if structured is not None:
            return structured
    return mutate_bytes(rng, data)


def valid_outputs(argv: list[str], out: Path, stdout: str) -> bool:
    """What an exit-0 case wrote is readable, finite and consistent."""
    command = argv[0]
    if command == "retarget":
        report = json.loads((out / "report.json").read_text())
        curves = read_csv(out / "curves.csv")
        return report["frames"] == curves.n_frames and bool(np.isfinite(curves.values).all())
    if command == "export":
        ticks = read_dynamixel_json(out / "x.json")
        return bool(np.isfinite(ticks.times).all()) and ticks.ticks.shape[0] == len(ticks.times)
    if command == "play":
        return "sync writes of Goal Position(116)" in stdout
    return bool(stdout.strip())


def run_case(rng: random.Random, case: int, corpus, folder: Path) -> tuple[str, str]:
    seeds, tracks, mapping = corpus
    name = rng.choice(sorted(seeds))
    data, commands = seeds[name]
    template = rng.choice(commands)
    work = folder / f"case{case}"
    work.mkdir()
    target = work / name
    target.write_bytes(mutate(rng, name, data))
    paths = {"{}": str(target), "{tracks}": str(tracks), "{map}": str(mapping), "{out}": str(work / "out")}
    if name == "tracks.json":
        paths["{tracks}"] = str(target)
    if name == "map.json":
        paths["{map}"] = str(target)
    argv = []
    for arg in template:
        for key, value in paths.items():
            arg = arg.replace(key, value)
        argv.append(arg)
    (work / "out").mkdir()

    def on_alarm(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    stdout, stderr = io.StringIO(), io.StringIO()
    signal.alarm(BUDGET_S)
    try:
        with (
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("always")
            code = main(argv)
    except Hang:
        return "hang", " ".join(argv)
    except BaseException as error:
        return "traceback", f"{' '.join(argv)}: {type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    errors = [line for line in stderr.getvalue().splitlines() if not line.startswith("looprig: warning: ")]
    if code == 0:
        try:
            good = valid_outputs(argv, work / "out", stdout.getvalue())
        except Exception as error:
            return "silently wrong", f"{' '.join(argv)}: {type(error).__name__}: {error}"
        return ("ok", "") if good else ("silently wrong", " ".join(argv))
    if code in (2, 3):
        clean = len(errors) == 1 and errors[0].startswith("looprig: error: ") and "Traceback" not in errors[0]
        return ("clean error", "") if clean else ("messy error", f"{' '.join(argv)}: {errors}")
    return "traceback", f"{' '.join(argv)}: exit {code}: {errors[-3:]}"


def test_cli_fuzz(corpus, tmp_path):
    cases = FULL_CASES if FULL else QUICK_CASES
    rng = random.Random(20261122)
    outcomes, examples, slowest = Counter(), {}, (0.0, "")
    for case in range(cases):
        start = time.perf_counter()
        outcome, detail = run_case(rng, case, corpus, tmp_path)
        elapsed = time.perf_counter() - start
        slowest = max(slowest, (elapsed, detail or str(case)))
        outcomes[outcome] += 1
        examples.setdefault(outcome, detail)
        if FULL and case % 1000 == 999:
            print(f"{case + 1} cases: {dict(outcomes)}", file=sys.__stderr__)
    print(f"CLI fuzz, {cases} cases: {dict(outcomes)}; slowest {slowest[0]:.1f} s")
    bad = {k: examples[k] for k in outcomes if k not in ("ok", "clean error")}
    assert not bad, bad
    assert outcomes["ok"] > 0 and outcomes["clean error"] > 0


def test_kill_9_mid_run_never_leaves_a_set_that_looks_complete(tmp_path):
    """SIGKILL at times spread over a retarget run, into a folder holding an earlier run of
    another clip: any report.json left matches the curves beside it."""
    early = fourbar_shot(tmp_path, "early", 2.0, seconds=0.25, rate=120.0)
    late = fourbar_shot(tmp_path, "late", 1.0, seconds=1.0, rate=240.0)
    out, earlier = tmp_path / "out", tmp_path / "earlier"

    def command(shot, folder):
        tracks, mapping, _, _ = shot
        return [
            *(sys.executable, "-m", "looprig.cli", "retarget", "fourbar", str(tracks), "--map", str(mapping)),
            *("-o", str(folder), "--formats", "csv", "json", "--quiet"),
        ]

    def consistent() -> str:
        names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
        stale = {f"{n}.stale" for n in ("curves.csv", "curves.json", "report.json")}
        assert names <= {"curves.csv", "curves.json", "report.json"} | stale, names
        if "report.json" not in names:
            return "no report"
        report = json.loads((out / "report.json").read_text())
        for curves in (read_csv(out / "curves.csv"), read_json(out / "curves.json")):
            assert curves.n_frames == report["frames"]
        return f"{report['frames']} frames"

    subprocess.run(command(early, earlier), check=True, timeout=300)
    start = time.perf_counter()
    subprocess.run(command(late, out), check=True, timeout=300)
    full_run = time.perf_counter() - start
    seen = Counter()
    for fraction in (0.3, 0.6, 0.8, 0.9, 0.95, 1.0):
        shutil.rmtree(out)
        shutil.copytree(earlier, out)  # a complete earlier run in the folder
        process = subprocess.Popen(command(late, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(fraction * full_run)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        seen[consistent()] += 1
    print(f"kill -9 outcomes: {dict(seen)} (run {full_run:.1f} s)")
    assert sum(seen.values()) == 6
