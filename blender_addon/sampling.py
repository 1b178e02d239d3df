"""World transforms of objects and bones per (sub)frame -> :class:`TrackSamples`.

Sampling steps the scene through the requested times (``frame_set`` with a
sub-frame for rates above the scene's), reads every object's world matrix in
one ``foreach_get`` and every pose bone's with one per armature, then puts the
scene back on the frame it was on. Lengths come out in metres.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np
from looprig.core.retarget import TrackSamples

from .robot_model import rigid_part
from .scene_data import unit_scale


@dataclass(frozen=True)
class Clip:
    """Which times to sample: scene frames ``frames`` (F,) (fractional for sub-frames)
    and the matching times (F,) [s] from the first frame; ``rate`` [Hz]; ``fps`` [Hz]."""

    frames: np.ndarray
    times: np.ndarray
    rate: float
    fps: float

    @property
    def frame_start(self) -> float:
        return float(self.frames[0])


def scene_fps(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def make_clip(scene, frame_start: float, frame_end: float, rate: float | None = None) -> Clip:
    """Samples at ``rate`` [Hz] (default: the scene rate) from ``frame_start`` to ``frame_end``."""
    fps = scene_fps(scene)
    rate = float(rate) if rate else fps
    duration = (frame_end - frame_start) / fps
    count = int(np.floor(duration * rate + 1e-9)) + 1
    times = np.arange(max(count, 1)) / rate
    return Clip(frame_start + times * fps, times, rate, fps)


def _frame_set(scene, frame: float) -> None:
    whole = int(np.floor(frame))
    scene.frame_set(whole, subframe=float(frame - whole))


@dataclass(frozen=True)
class Source:
    """One thing to sample: an object, or a bone of an armature object."""

    name: str
    object_name: str
    bone: str = ""


def iter_world_matrices(context, sources: list[Source], frames: np.ndarray, out: dict, chunk: int = 100):
    """Fill ``out`` (name -> (F, 4, 4) world matrices [m]) frame by frame, yielding the
    number of frames done after every ``chunk`` frames (the modal retarget samples
    between UI events). The scene returns to its current frame when the generator
    finishes or is closed.
    """
    scene = context.scene
    s = unit_scale(scene)
    objects = bpy.data.objects
    index = {src.object_name: objects.find(src.object_name) for src in sources}
    for src in sources:
        if index[src.object_name] < 0:
            raise KeyError(f"no object {src.object_name!r}")
    armatures = sorted({src.object_name for src in sources if src.bone})
    bone_index = {
        (src.object_name, src.bone): objects[src.object_name].pose.bones.find(src.bone)
        for src in sources
        if src.bone
    }
    n_objects = len(objects)
    buffer = np.empty(n_objects * 16, dtype=np.float32)
    for src in sources:
        out[src.name] = np.empty((len(frames), 4, 4))
    current = (scene.frame_current, scene.frame_subframe)
    try:
        for f, frame in enumerate(frames):
            _frame_set(scene, frame)
            objects.foreach_get("matrix_world", buffer)
            world = buffer.reshape(n_objects, 4, 4).transpose(0, 2, 1)  # column-major -> rows
            poses = {}
            for name in armatures:
                bones = objects[name].pose.bones
                b = np.empty(len(bones) * 16, dtype=np.float32)
                bones.foreach_get("matrix", b)
                poses[name] = b.reshape(len(bones), 4, 4).transpose(0, 2, 1)
            for src in sources:
                T = world[index[src.object_name]].astype(float)
                if src.bone:
                    T = T @ poses[src.object_name][bone_index[(src.object_name, src.bone)]]
                T[:3, :] *= s
                out[src.name][f] = T
            if (f + 1) % chunk == 0 or f == len(frames) - 1:
                yield f + 1
    finally:
        scene.frame_set(current[0], subframe=current[1])


def sample_world_matrices(context, sources: list[Source], frames: np.ndarray, progress=None) -> dict:
    """(F, 4, 4) world matrices [m] per source name at the scene frames ``frames``.

    progress(done, total) is called every 50 frames. The scene returns to its
    current frame afterwards.
    """
    out: dict = {}
    for done in iter_world_matrices(context, sources, frames, out, chunk=50):
        if progress is not None:
            progress(done, len(frames))
    return out


def samples_from_matrices(matrices: dict, clip: Clip) -> TrackSamples:
    """:class:`TrackSamples` of world matrices (metres, z up) over a clip; rotations are the
    matrices' rotation parts (object scale removed)."""
    positions, rotations = {}, {}
    for name, T in matrices.items():
        positions[name] = T[:, :3, 3].copy()
        rotations[name] = rigid_part(T)[:, :3, :3]
    bad = [n for n, p in positions.items() if not np.all(np.isfinite(p))]
    if bad:
        raise ValueError(f"target {bad[0]!r} has non-finite positions")
    return TrackSamples(clip.times.copy(), positions, rotations)


def track_samples(context, sources: list[Source], clip: Clip) -> TrackSamples:
    """:class:`TrackSamples` of the sources' world transforms over a clip (metres, z up)."""
    return samples_from_matrices(sample_world_matrices(context, sources, clip.frames), clip)
