"""Recorded motion workflow: a ``looprig play --record`` file back on the robot (:mod:`.recording`)."""

from __future__ import annotations

import bpy
import numpy as np
from bpy_extras.io_utils import ImportHelper
from looprig.core.errors import LooprigError

from . import recording
from .operators_robot import RobotError, checked_model, file_filter, robot_collection


class LOOPRIG_OT_import_recording(bpy.types.Operator, ImportHelper):
    """Import what the servos did (looprig play --record) as a second action, with error curves
    (recorded minus asked) for the Graph Editor; the robot's keys and actions stay as they are"""

    bl_idname = "looprig.import_recording"
    bl_label = "Import Recorded Motion"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".csv"
    filter_glob: file_filter(".csv", ".json")

    def execute(self, context):
        try:
            collection = robot_collection(context)
            model = checked_model(context)
            carrier, action, result = recording.import_recording(context, collection, model, self.filepath)
        except (RobotError, LooprigError, ValueError, OSError) as error:
            self.report({"ERROR"}, f"cannot import {self.filepath!r}: {error}")
            return {"CANCELLED"}
        worst, curves = np.abs(result.errors).max(axis=0), result.recorded
        rows = zip(curves.names, worst, curves.units, strict=True)
        summary = ", ".join(f"{n} {w:.3g} {u}" for n, w, u in rows)
        self.report({"INFO"}, f"imported {action.name!r} on {carrier.name!r}; largest error: {summary}")
        return {"FINISHED"}


classes = (LOOPRIG_OT_import_recording,)


register, unregister = bpy.utils.register_classes_factory(classes)
