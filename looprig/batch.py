"""Batch retargeting: many shots, each an isolated job, on a local process pool or a Dask cluster.

A jobs file (JSON, see ``docs/pipeline.md``) lists one entry per shot: robot,
tracks, mapping, output folder and optional mapping overrides. :func:`run_batch`
runs every job that is not already done, in parallel, and returns one
:class:`JobResult` per job; one job's failure never stops the others.

A job is *done* when its output folder holds ``looprig-job.json`` whose ``key``
equals the job's key now: the SHA-256 of the robot, tracks and mapping files'
bytes (a reference mechanism's name instead of a file), the job's settings
(overrides, formats, strict) and looprig's version, and whose listed outputs
are all present with the SHA-256 recorded for them. That file is written last,
only after a successful run, so a failed, refused or interrupted job runs again.
"""

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import __version__
from .core import LooprigError
from .core.library import NAMES

JOBS_FORMAT = "looprig-jobs"
JOBS_VERSION = 1
STAMP_NAME = "looprig-job.json"
SUMMARY_FORMAT = "looprig-batch-summary"
#: Job statuses: ok and skipped pass; refused (limits, strict findings) and failed do not.
PASSING = ("ok", "skipped")


class JobsFileError(LooprigError, ValueError):
    """The jobs file is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class Job:
    """One shot: retarget ``tracks`` onto ``robot`` with ``mapping`` into ``output``.

    robot: a reference mechanism name or a URDF/MJCF/native file; tracks: a tracks
    file or BVH, or several played in sequence (a tuple) with ``transition`` [s]
    between each pair; mapping: a mapping file; output: the output folder;
    overrides: mapping settings that replace the file's (e.g. ``{"rate": 600}``);
    formats: curve export formats; strict: refuse curves with findings (see the
    CLI's ``--strict``); pins: frames of the clip kept at their times when its
    timing is ``stretch`` (the CLI's ``--pin``). Paths are absolute (the reader
    resolves them against the jobs file's folder).
    """

    name: str
    robot: str
    tracks: str | tuple[str, ...]
    mapping: str
    output: str
    overrides: dict = field(default_factory=dict)
    formats: tuple[str, ...] = ("csv",)
    strict: bool = False
    transition: float = 0.3
    pins: tuple[float, ...] = ()

    @property
    def track_files(self) -> tuple[str, ...]:
        """The tracks files, one or several (played in sequence)."""
        return (self.tracks,) if isinstance(self.tracks, str) else tuple(self.tracks)

    def key(self) -> str:
        """SHA-256 over the inputs' bytes, the settings and looprig's version (hex)."""
        digest = hashlib.sha256()
        robot = self.robot if self.robot in NAMES and not Path(self.robot).exists() else None
        parts = [("robot-name", robot.encode())] if robot else [("robot", _file_bytes(self.robot))]
        parts += [("tracks", _file_bytes(path)) for path in self.track_files]
        parts += [("mapping", _file_bytes(self.mapping))]
        settings = {"overrides": self.overrides, "formats": list(self.formats), "strict": self.strict}
        if len(self.track_files) > 1 or self.pins:  # keys of jobs written before chains stay
            settings |= {"transition": self.transition, "pins": list(self.pins)}
        parts += [("settings", json.dumps(settings, sort_keys=True).encode())]
        parts += [("looprig", __version__.encode())]
        for label, data in parts:
            digest.update(f"{label}:{len(data)}:".encode())
            digest.update(data)
        return digest.hexdigest()


def _file_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise LooprigError(f"{path}: cannot read: {error.strerror or error}") from None


@dataclass
class JobResult:
    """One job's outcome; ``status`` is ok, skipped, refused or failed.

    frames: solved frames; worst_position_error_m [m], max_residual [m];
    violations: limit violations in the curves; unreachable: unreachable frames;
    seconds: wall time of the job; message: why it failed or was refused.
    """

    name: str
    status: str
    output: str
    message: str = ""
    frames: int = 0
    worst_position_error_m: float | None = None
    max_residual_m: float | None = None
    violations: int = 0
    unreachable: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status in PASSING


# ------------------------------------------------------------------------------ jobs file


def read_jobs(path) -> list[Job]:
    """The jobs of a jobs file (format in ``docs/pipeline.md``); paths resolved against its folder."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise JobsFileError(f"{path}: cannot read jobs file: {error}") from None
    if not isinstance(data, dict) or data.get("format") != JOBS_FORMAT:
        raise JobsFileError(f'{path}: not a jobs file (expected "format": "{JOBS_FORMAT}")')
    if data.get("version") != JOBS_VERSION:
        raise JobsFileError(f"{path}: unsupported jobs file version {data.get('version')!r}")
    defaults, entries = data.get("defaults", {}), data.get("jobs")
    if not isinstance(defaults, dict) or not isinstance(entries, list) or not entries:
        raise JobsFileError(f'{path}: "jobs" must be a non-empty list and "defaults" an object')
    jobs = [_job(path, index, {**defaults, **entry}) for index, entry in enumerate(entries)]
    seen = {}
    for job in jobs:
        if job.output in seen:
            raise JobsFileError(f"{path}: jobs {seen[job.output]!r} and {job.name!r} share the output folder")
        seen[job.output] = job.name
    return jobs


_JOB_KEYS = {
    "name",
    "robot",
    "tracks",
    "mapping",
    "output",
    "overrides",
    "formats",
    "strict",
    "transition",
    "pins",
}


def _job(path: Path, index: int, entry) -> Job:
    from .curve_files import EXPORT_FORMATS

    where = f"{path}: job {index}"
    if not isinstance(entry, dict):
        raise JobsFileError(f"{where}: must be an object")
    unknown = set(entry) - _JOB_KEYS
    if unknown:
        raise JobsFileError(f"{where}: unknown key(s) {sorted(unknown)}; keys are {sorted(_JOB_KEYS)}")

    def require_path(key: str) -> None:
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise JobsFileError(f"{where}: {key!r} must be a path (a string)")

    require_path("robot")
    given = entry.get("tracks")
    files = given if isinstance(given, list) else [given]
    if not files or not all(isinstance(f, str) and f for f in files):
        raise JobsFileError(
            f"{where}: 'tracks' must be a path (a string) or a list of paths (clips in sequence)"
        )
    require_path("mapping")
    tracks = [str((path.parent / f).resolve()) for f in files]
    name = entry.get("name", Path(tracks[0]).name.split(".")[0])
    where = f"{path}: job {name!r}"
    output = entry.get("output", name)
    overrides, formats = entry.get("overrides", {}), entry.get("formats", ["csv"])
    strict = entry.get("strict", False)
    if not isinstance(name, str) or not name or not isinstance(output, str) or not output:
        raise JobsFileError(f"{where}: 'name' and 'output' must be non-empty strings")
    if not isinstance(overrides, dict):
        raise JobsFileError(f"{where}: 'overrides' must be an object of mapping settings")
    if not isinstance(formats, list) or not formats or any(f not in EXPORT_FORMATS for f in formats):
        raise JobsFileError(f"{where}: 'formats' must be a list of {sorted(EXPORT_FORMATS)}")
    if not isinstance(strict, bool):
        raise JobsFileError(f"{where}: 'strict' must be true or false")
    transition, pins = entry.get("transition", 0.3), entry.get("pins", [])
    if isinstance(transition, bool) or not isinstance(transition, int | float) or not transition > 0:
        raise JobsFileError(f"{where}: 'transition' must be a positive number of seconds, got {transition!r}")
    if not isinstance(pins, list) or not all(
        isinstance(p, int | float) and not isinstance(p, bool) for p in pins
    ):
        raise JobsFileError(f"{where}: 'pins' must be a list of frame numbers, got {pins!r}")
    robot = entry["robot"]
    if robot not in NAMES or (path.parent / robot).exists():
        robot = str((path.parent / robot).resolve())
    return Job(
        name=name,
        robot=robot,
        tracks=tracks[0] if isinstance(given, str) else tuple(tracks),
        mapping=str((path.parent / entry["mapping"]).resolve()),
        output=str((path.parent / output).resolve()),
        overrides=overrides,
        formats=tuple(formats),
        strict=strict,
        transition=float(transition),
        pins=tuple(float(p) for p in pins),
    )


def write_jobs(path, jobs: Sequence[Job]) -> Path:
    """Write a jobs file for ``jobs`` (paths as given); the inverse of :func:`read_jobs`."""
    from .outputs import write_text

    entries = [{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(job).items()} for job in jobs]
    document = {"format": JOBS_FORMAT, "version": JOBS_VERSION, "jobs": entries}
    return write_text(path, json.dumps(document, indent=2) + "\n")


# ------------------------------------------------------------------------------ one job


def run_job(job: Job) -> JobResult:
    """Run one job in isolation: every error becomes a failed result, never an exception.

    Skips the job (status ``skipped``) when its output holds the stamp of an
    identical successful run (see the module docstring).
    """
    from .app import RetargetRefused
    from .core.curves.violations import LimitViolationError

    start = time.perf_counter()
    result = JobResult(job.name, "failed", job.output)
    try:
        key = job.key()
        stamp = _done_stamp(job, key)
        if stamp is not None:
            return JobResult(**{**stamp["result"], "status": "skipped", "seconds": 0.0})
        outcome = _retarget(job)
        _fill(result, outcome.summary)
        result.status = "ok"
        _write_stamp(job, key, result, outcome.written)
    except (LimitViolationError, RetargetRefused) as error:
        result.status, result.message = "refused", str(error).splitlines()[0]
        _fill(result, getattr(error, "summary", None))
    except LooprigError as error:
        result.message = str(error).splitlines()[0]
    except Exception as error:  # isolation: a bug in one shot must not stop the batch
        result.message = f"internal error: {type(error).__name__}: {error}"
    result.seconds = time.perf_counter() - start
    return result


def _retarget(job: Job):
    from .app import load_chain, load_mechanism, load_samples, retarget_to_folder
    from .core.retarget import RetargetMapping
    from .core.tracks.retime import pin_times

    mapping = RetargetMapping.load(job.mapping)
    if job.overrides:
        mapping = RetargetMapping.from_dict(
            {**mapping.to_dict(), **job.overrides}, f"{job.mapping} (overrides)"
        )
    chain = None
    if len(job.track_files) > 1:
        if job.pins:
            raise JobsFileError(f"job {job.name!r}: 'pins': clips played in sequence are not retimed")
        chain = load_chain(job.track_files, mapping.rate, job.transition)
        samples = chain.samples
    else:
        samples = load_samples(job.track_files[0])
    return retarget_to_folder(
        load_mechanism(job.robot),
        samples,
        mapping,
        Path(job.output),
        job.formats,
        strict=job.strict,
        inputs=[p for p in (job.robot, *job.track_files, job.mapping) if Path(p).exists()],
        pins=pin_times(samples, job.pins) if job.pins else (),
        chain=chain,
    )


def _fill(result: JobResult, summary: dict | None) -> None:
    if not summary:
        return
    result.frames = summary["frames"]
    result.worst_position_error_m = summary["max_position_error_m"]
    result.max_residual_m = summary["max_residual"]
    result.violations = sum(len(a["violations"]) for a in summary["actuators"])
    result.unreachable = summary["unreachable_frames"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_stamp(job: Job, key: str, result: JobResult, written: Sequence[Path]) -> None:
    from .outputs import write_text

    stamp = {
        "key": key,
        "looprig": __version__,
        "outputs": {Path(p).name: _sha256(Path(p)) for p in written},
        "result": asdict(result),
    }
    write_text(Path(job.output) / STAMP_NAME, json.dumps(stamp, indent=2, allow_nan=False) + "\n")


def _done_stamp(job: Job, key: str) -> dict | None:
    """The stamp of an identical earlier success whose outputs are intact, else None."""
    folder = Path(job.output)
    try:
        stamp = json.loads((folder / STAMP_NAME).read_text(encoding="utf-8"))
        if stamp["key"] != key:
            return None
        if any(_sha256(folder / name) != digest for name, digest in stamp["outputs"].items()):
            return None
        JobResult(**stamp["result"])
        return stamp
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ------------------------------------------------------------------------------ many jobs


def run_batch(
    jobs: Sequence[Job],
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[JobResult, int, int], None] | None = None,
) -> list[JobResult]:
    """Run ``jobs`` in parallel; results in job order.

    scheduler: the address of a running Dask ``distributed`` scheduler
    (``tcp://host:8786``); without it a local process pool of ``workers``
    processes (default: the CPU count; 1 runs the jobs one after the other in
    this process). progress(result, done, total) is called as each job ends.
    """
    results: list[JobResult | None] = [None] * len(jobs)

    def finished(index: int, result: JobResult) -> None:
        results[index] = result
        if progress is not None:
            progress(result, sum(r is not None for r in results), len(jobs))

    if scheduler is not None:
        _run_on_dask(jobs, scheduler, finished)
    elif workers == 1:
        for index, job in enumerate(jobs):
            finished(index, run_job(job))
    else:
        _run_on_pool(jobs, workers or os.cpu_count() or 1, finished)
    return results


def _lost(job: Job, error: BaseException) -> JobResult:
    return JobResult(job.name, "failed", job.output, f"worker lost: {type(error).__name__}: {error}")


def _run_on_pool(jobs: Sequence[Job], workers: int, finished) -> None:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        futures = {pool.submit(run_job, job): i for i, job in enumerate(jobs)}
        for future in as_completed(futures):
            index = futures[future]
            try:
                finished(index, future.result())
            except Exception as error:  # the pool broke (a worker process died): this job is lost
                finished(index, _lost(jobs[index], error))


def _run_on_dask(jobs: Sequence[Job], address: str, finished) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise LooprigError(
            "--scheduler needs the distributed package (pip install 'looprig[batch]')"
        ) from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:  # ValueError: an address distributed cannot parse
        raise LooprigError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    with client:
        futures = {
            client.submit(run_job, job, pure=False, key=f"looprig-{i}-{job.name}"): i
            for i, job in enumerate(jobs)
        }
        for future in as_completed(futures):
            index = futures[future]
            try:
                finished(index, future.result())
            except Exception as error:
                finished(index, _lost(jobs[index], error))


# ------------------------------------------------------------------------------ summary


def summary_document(results: Sequence[JobResult], jobs_file=None) -> dict:
    """The machine-readable summary (format in ``docs/pipeline.md``)."""
    counts = {
        status: sum(r.status == status for r in results) for status in ("ok", "skipped", "refused", "failed")
    }
    return {
        "format": SUMMARY_FORMAT,
        "version": 1,
        "looprig": __version__,
        "jobs_file": None if jobs_file is None else str(jobs_file),
        "passed": all(r.passed for r in results),
        "counts": counts,
        "jobs": [{k: _json_number(v) for k, v in asdict(r).items()} for r in results],
    }


def _json_number(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value
