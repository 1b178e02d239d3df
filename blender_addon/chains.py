"""NLA strips played in sequence (:mod:`looprig.core.tracks.chain`): each run of strips of the
targets' objects is a clip, each gap between two runs a transition solved within the
motors' limits.

**Retarget NLA Strips** samples the targets only inside the strips (what the animator
animated), lays the clips and the gaps between them on the scene's own time line (a
gap of 8 frames is a transition of 8 frames), fills each gap with a blend from the end
of one clip to the start of the next and solves the whole under every motor limit
(``limit_mode`` hold). The robot's action runs from the first strip's first frame to
the last strip's last one; the animator's strips and keys are not touched.
"""

from __future__ import annotations

import itertools

import bpy
from looprig.core.errors import LooprigError
from looprig.core.retarget import retarget
from looprig.core.tracks.chain import chain_clips

from .operators_retarget import LOOPRIG_OT_retarget, read_inputs
from .operators_robot import RobotError
from .sampling import make_clip, track_samples


def strip_runs(scene, object_names) -> list[tuple[float, float, str]]:
    """The frame ranges (start, end, name) of the unmuted NLA strips of the objects named,
    overlapping ones merged into one run, in time order; a run is named for its first
    strip. Raises RobotError when the runs leave no gap between them."""
    strips = []
    for name in sorted(set(object_names)):
        ad = bpy.data.objects[name].animation_data
        if ad is None:
            continue
        for track in ad.nla_tracks:
            if track.mute:
                continue
            strips += [(s.frame_start, s.frame_end, s.name) for s in track.strips if not s.mute]
    runs: list[list] = []
    for start, end, name in sorted(strips):
        if runs and start < runs[-1][1]:  # overlapping strips (of several objects) play as one
            runs[-1][1] = max(runs[-1][1], end)
        else:
            runs.append([start, end, name])
    if len(runs) < 2:
        raise RobotError(
            f"Retarget NLA Strips: the targets' objects have {len(runs)} run(s) of NLA strips; "
            "place two or more strips one after the other, with a gap for each transition"
        )
    for (_, end, a), (start, _, b) in itertools.pairwise(runs):
        if start - end < 1.0:
            raise RobotError(
                f"Retarget NLA Strips: strips {a!r} and {b!r} leave {start - end:g} frames between them; "
                "move the second later: the gap is the transition"
            )
    return [(float(s), float(e), n) for s, e, n in runs]


def chain_inputs(context):
    """The retarget inputs with the targets sampled inside the strips only and chained
    (:func:`~looprig.core.tracks.chain.chain_clips`, the gaps as transitions), the clip spanning the
    runs; and the chain."""
    inputs, sources = read_inputs(context, sample=False)
    if inputs.mapping.timing != "keep":
        raise RobotError("Retarget NLA Strips keeps the strips' timing: set Timing to Keep")
    scene = context.scene
    runs = strip_runs(scene, [src.object_name for src in sources])
    rate = inputs.clip.rate
    clips = [track_samples(context, sources, make_clip(scene, a, b, rate)) for a, b, _ in runs]
    gaps = [(b[0] - a[1]) / inputs.clip.fps for a, b in itertools.pairwise(runs)]  # [s]
    chain = chain_clips(clips, gaps, rate, [name for _, _, name in runs])
    inputs.clip = make_clip(scene, runs[0][0], runs[-1][1], rate)
    inputs.samples = chain.samples
    if len(inputs.clip.times) != len(chain.samples.times):  # a gap not a whole number of samples
        raise RobotError(f"Retarget NLA Strips: the gaps between strips must be whole samples at {rate:g} Hz")
    return inputs, chain


class LOOPRIG_OT_retarget_strips(bpy.types.Operator):
    """Solve the robot's motion for the NLA strips of the targets played in sequence, each
    gap between strips a transition held within the motor limits"""

    bl_idname = "looprig.retarget_strips"
    bl_label = "Retarget NLA Strips"
    bl_options = {"REGISTER", "UNDO"}

    # the Retarget operator's reporting (a registered class is not subclassed: Blender keys
    # its RNA by class)
    _finish = LOOPRIG_OT_retarget._finish
    _fail = LOOPRIG_OT_retarget._fail

    def execute(self, context):
        try:
            inputs, chain = chain_inputs(context)
            result = retarget(inputs.model.mechanism, inputs.samples, inputs.mapping)
            transition = chain.release(result)
            finished = self._finish(context, inputs, result)
        except (RobotError, LooprigError, ValueError) as error:
            return self._fail(context, error)
        parts = ", ".join(p.name for p in chain.parts if p.kind == "clip")
        line = f"chained {parts}: {transition} transition sample(s) between them"
        context.scene.looprig.status += f"; {line}"
        self.report({"INFO"}, line)
        return finished


classes = (LOOPRIG_OT_retarget_strips,)


register, unregister = bpy.utils.register_classes_factory(classes)
