"""``looprig batch``: many shots, isolated, resumable, on a real Dask ``distributed.LocalCluster``.

The cluster (scheduler and one in-process worker with two threads on 127.0.0.1)
is started and stopped by the tests. Every shot is a four-bar clip with a
closed-form crank curve (tests/shots.py), so the batch's outputs are checked
against the answer as well as against a serial run.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from looprig.core.export import read_csv
from looprig.core.retarget import RetargetMapping, TargetSpec
from shots import coupler_path, fourbar_shot

from looprig import batch
from looprig.cli import main

distributed = pytest.importorskip("distributed")

SPEEDS = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        host="127.0.0.1",
        protocol="tcp",
        dashboard_address=None,
    ) as local:
        yield local.scheduler_address


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Eight good shots and a broken one (a tracks file cut in the middle); their closed forms."""
    folder = tmp_path_factory.mktemp("shots")
    answers = {}
    for i, speed in enumerate(SPEEDS):
        _, _, times, theta = fourbar_shot(folder, f"shot{i:02d}", speed, seconds=0.5, rate=120.0)
        answers[f"shot{i:02d}"] = (times, theta)
    fourbar_shot(folder, "broken", 1.0, seconds=0.5, rate=120.0)
    text = (folder / "broken.tracks.json").read_text()
    (folder / "broken.tracks.json").write_text(text[: len(text) // 2])
    return folder, answers


def jobs_file(folder: Path, out: str, names, name="jobs.json", **extra) -> Path:
    entries = [
        {
            "name": n,
            "robot": "fourbar",
            "tracks": f"{n}.tracks.json",
            "mapping": f"{n}.map.json",
            "output": f"{out}/{n}",
            **extra.get(n, {}),
        }
        for n in names
    ]
    path = folder / name
    path.write_text(json.dumps({"format": "looprig-jobs", "version": 1, "jobs": entries}))
    return path


def test_eight_shots_on_a_local_cluster_one_broken_resume_and_serial_equality(cluster, shots, capsys):
    folder, answers = shots
    names = [*answers, "broken"]
    jobs = jobs_file(folder, "farm", names)
    assert main(["batch", str(jobs), "--scheduler", cluster]) == 4  # one job did not pass
    printed = capsys.readouterr().out
    summary = json.loads((folder / "batch-summary.json").read_text())
    assert summary["format"] == "looprig-batch-summary" and summary["passed"] is False
    assert summary["counts"] == {"ok": 8, "skipped": 0, "refused": 0, "failed": 1}
    by_name = {j["name"]: j for j in summary["jobs"]}
    assert by_name["broken"]["status"] == "failed" and "broken.tracks.json" in by_name["broken"]["message"]
    assert "broken" in printed and "8 ok, 1 failed" in printed
    for name, (times, theta) in answers.items():  # every good shot matches its closed form
        curves = read_csv(folder / "farm" / name / "curves.csv")
        assert np.allclose(curves.times, times)
        assert np.abs(curves.column("crank_joint") - theta).max() < 1e-6
        assert by_name[name]["frames"] == len(times) and by_name[name]["status"] == "ok"
    assert (
        not (folder / "farm" / "broken").exists() or not (folder / "farm" / "broken" / "report.json").exists()
    )

    # the same jobs in this process, one after the other: byte-identical curves and reports
    serial = jobs_file(folder, "serial", names, name="serial.json")
    results = batch.run_batch(batch.read_jobs(serial), workers=1)
    assert [r.status for r in results] == ["ok"] * 8 + ["failed"]
    for name in answers:
        for file in ("curves.csv", "report.json"):
            assert (folder / "farm" / name / file).read_bytes() == (
                folder / "serial" / name / file
            ).read_bytes()

    # resume: nothing changed -> skipped; a changed override and a deleted output -> run again
    assert main(["batch", str(jobs), "--scheduler", cluster, "--quiet"]) == 4
    counts = json.loads((folder / "batch-summary.json").read_text())["counts"]
    assert counts == {"ok": 0, "skipped": 8, "refused": 0, "failed": 1}
    (folder / "farm" / "shot03" / "curves.csv").unlink()
    jobs = jobs_file(folder, "farm", names, shot05={"overrides": {"state_weight": 1e-8}})
    assert main(["batch", str(jobs), "--scheduler", cluster, "--quiet"]) == 4
    after = {j["name"]: j["status"] for j in json.loads((folder / "batch-summary.json").read_text())["jobs"]}
    assert [n for n, s in after.items() if s == "ok"] == ["shot03", "shot05"]
    assert sum(s == "skipped" for s in after.values()) == 6


def test_a_local_process_pool_and_all_passing_exits_0(shots, tmp_path, capsys):
    folder, answers = shots
    names = list(answers)[:2]
    jobs = jobs_file(folder, "pool", names, name="pool.json")
    summary = tmp_path / "summary.json"
    assert main(["batch", str(jobs), "--workers", "2", "--summary", str(summary)]) == 0
    document = json.loads(summary.read_text())
    assert document["passed"] is True and document["counts"]["ok"] == 2
    assert all((folder / "pool" / n / batch.STAMP_NAME).exists() for n in names)


def test_a_refused_job_is_reported_and_not_stamped(shots):
    """A strict job whose target moved out of reach: refused, earlier curves marked stale, no stamp."""
    folder, _ = shots
    jobs = batch.read_jobs(
        jobs_file(folder, "strict", ["shot07"], name="strict.json", shot07={"strict": True})
    )
    (result,) = batch.run_batch(jobs, workers=1)
    assert result.status == "ok"
    far = dict(json.loads((folder / "shot07.map.json").read_text()))
    far["targets"][0]["offset_position"] = [0.0, 0.0, 5.0]
    (folder / "far.map.json").write_text(json.dumps(far))
    job = batch.Job(**{**jobs[0].__dict__, "mapping": str(folder / "far.map.json")})
    (result,) = batch.run_batch([job], workers=1)
    assert result.status == "refused" and "unreachable" in result.message
    out = Path(job.output)
    assert not (out / "curves.csv").exists() and (out / "curves.csv.stale").exists()
    assert not (out / batch.STAMP_NAME).exists() and (out / "report.refused.json").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "cannot read jobs file"),
        ('{"format": "x"}', "not a jobs file"),
        ('{"format": "looprig-jobs", "version": 1, "jobs": []}', "non-empty list"),
        ('{"format": "looprig-jobs", "version": 1, "jobs": [{"robot": "fourbar"}]}', "'tracks' must be"),
        (
            '{"format": "looprig-jobs", "version": 1, "jobs": [{"robot": "r", "tracks": "t", "mapping": "m",'
            ' "colour": 1}]}',
            "unknown key(s) ['colour']",
        ),
        (
            '{"format": "looprig-jobs", "version": 1, "jobs": [{"robot": "r", "tracks": "t", "mapping": "m",'
            ' "formats": ["gif"]}]}',
            "'formats' must be",
        ),
    ],
)
def test_bad_jobs_files_are_one_line_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "jobs.json"
    path.write_text(content)
    assert main(["batch", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err and str(path) in err


EMULATION = Path(__file__).parent / "maya_emulation"


def maya_scene(path: Path, theta: np.ndarray) -> Path:
    """An emulated Maya scene (24 fps, cm, Y up) whose locator 'coupler' is keyed at every frame
    on the four-bar's coupler path for the crank angles ``theta`` (frames 1..len(theta))."""
    points, _ = coupler_path(theta)
    maya_points = np.column_stack([points[:, 0], points[:, 2], -points[:, 1]]) * 100.0  # Z up m -> Y up cm
    keys = {
        attr: [[frame + 1, float(value)] for frame, value in enumerate(maya_points[:, axis])]
        for axis, attr in enumerate(("translateX", "translateY", "translateZ"))
    }
    scene = {
        "emulated_maya_scene": 1,
        "units": {"linear": "cm", "angle": "deg", "time": "film"},
        "up_axis": "y",
        "playback": [1, len(theta)],
        "current_time": 1,
        "nodes": [{"name": "coupler", "keys": keys}],
        "sets": {"looprig_tracks": ["coupler"]},
    }
    path.write_text(json.dumps(scene))
    return path


def test_maya_export_then_batch_on_a_cluster_equals_a_serial_run(cluster, tmp_path, monkeypatch):
    """Two shots exported by the Maya batch exporter (on the Maya emulation), retargeted by
    ``looprig batch`` on the LocalCluster and serially: identical curves, equal to the closed form."""
    monkeypatch.syspath_prepend(str(EMULATION))
    from looprig.maya_scripts import batch as maya_batch
    from looprig.maya_scripts import maya_facade
    from maya import _scene

    times = np.arange(25) / 24.0
    mapping = tmp_path / "coupler.map.json"
    # the faster shot turns the crank at 6 rad/s at its end, its limit: the closed form is the exact answer
    RetargetMapping(
        (TargetSpec("coupler", "coupler_point"),), rate=24.0, state_weight=1e-9, limit_mode="report"
    ).save(mapping)
    answers = {}
    for shot, speed in (("shot010", 2.0), ("shot020", 3.0)):
        _scene.reset()
        scene = maya_scene(tmp_path / f"{shot}.ma", speed * times**2)
        out = tmp_path / f"{shot}.tracks.json"
        assert maya_batch.main([str(scene), "-o", str(out), "--quiet"], host=maya_facade) == 0
        answers[shot] = speed * times**2
    entries = [
        {"name": s, "robot": "fourbar", "tracks": f"{s}.tracks.json", "mapping": "coupler.map.json"}
        for s in answers
    ]
    for label in ("farm", "serial"):
        document = {
            "format": "looprig-jobs",
            "version": 1,
            "jobs": [{**e, "output": f"{label}/{e['name']}"} for e in entries],
        }
        (tmp_path / f"{label}.json").write_text(json.dumps(document))
    assert main(["batch", str(tmp_path / "farm.json"), "--scheduler", cluster, "--quiet"]) == 0
    assert main(["batch", str(tmp_path / "serial.json"), "--workers", "1", "--quiet"]) == 0
    for shot, theta in answers.items():
        farm, serial = (tmp_path / label / shot / "curves.csv" for label in ("farm", "serial"))
        assert farm.read_bytes() == serial.read_bytes()
        curves = read_csv(farm)
        assert np.allclose(curves.times, times + 1 / 24)  # Maya's frame 1 is at 1/24 s
        assert np.abs(curves.column("crank_joint") - theta).max() < 1e-6


def test_a_bad_scheduler_address_and_worker_count_are_one_line_exit_2(shots, capsys):
    folder, answers = shots
    jobs = jobs_file(folder, "none", list(answers)[:1], name="none.json")
    assert main(["batch", str(jobs), "--scheduler", "no-port-here"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "looprig: error: cannot reach the Dask scheduler at no-port-here: missing port number in address "
        "'no-port-here'"
    ]
    with pytest.raises(SystemExit) as exit_info:
        main(["batch", str(jobs), "--workers", "0"])
    assert exit_info.value.code == 2 and "must be a whole number >= 1" in capsys.readouterr().err
