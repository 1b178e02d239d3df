"""A loop closed by hand with its pivot off the links is reported by Check (issue 25, item 4).

On d29a55b a four-bar of Rigid Body Constraints whose closing hinge stood 5 mm past
where the coupler and the rocker meet passed Check silently (ok, dof 1, loops 1).
"""

import bpy
import numpy as np
from helpers import problems
from mathutils import Matrix

from blender_addon import demo_scene as demo
from blender_addon import scene_build

WIDTH = 0.02  # the bars' width [m]: each bar reaches WIDTH / 2 past its pivots


def fourbar_with_closing_pivot(offset: np.ndarray):
    """The demo four-bar (bars as :func:`.scene_build.bar_object` makes them) with the
    coupler-rocker hinge moved by ``offset`` (3,) [m] from B."""
    collection = scene_build.new_collection(bpy.context, "hand_built")
    bpy.context.scene.looprig.robot = collection
    A, B, _ = demo.fourbar_points(demo.CRANK_START)
    O2, O4 = np.zeros(3), np.array([demo.GROUND, 0.0, 0.0])
    ground = scene_build.bar_object("ground", O2, O4, WIDTH, 0.01, collection)
    ground.looprig_body.grounded = True
    crank = scene_build.bar_object("crank", O2, A, WIDTH, 0.01, collection)
    coupler = scene_build.bar_object("coupler", A, B, WIDTH, 0.01, collection, 0.015)
    rocker = scene_build.bar_object("rocker", O4, B, WIDTH, 0.01, collection)
    for name, a, b, at in (
        ("crank_joint", ground, crank, O2),
        ("coupler_joint", crank, coupler, A),
        ("closing_hinge", coupler, rocker, B + offset),
        ("rocker_joint", ground, rocker, O4),
    ):
        scene_build.constraint_object(
            bpy.context, name, "HINGE", a, b, Matrix.Translation(at.tolist()), collection
        )
    bpy.context.scene.objects["crank_joint"].looprig_joint.actuated = True
    return B - O4


def test_a_closing_hinge_5_mm_past_the_rocker_is_reported_with_the_gap_and_its_object(empty_scene):
    """The hinge 5 mm beyond the rocker's end (WIDTH / 2 + 5 mm past B along the rocker):
    its axis passes 5 mm outside the rocker's bar, a distance in closed form."""
    rocker = fourbar_with_closing_pivot(np.zeros(3))
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert not [p for p in problems(bpy.context) if "does not meet" in p[2]]
    bpy.ops.wm.read_homefile(use_empty=True)
    fourbar_with_closing_pivot(rocker / np.linalg.norm(rocker) * (WIDTH / 2 + 0.005))
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}  # a warning: the robot still solves
    found = [p for p in problems(bpy.context) if "does not meet at rest" in p[2]]
    assert ("WARNING", "closing_hinge") in {(severity, name) for severity, name, _ in found}, found
    messages = [m for _, _, m in found]
    assert any("its axis passes 5 mm outside 'rocker'" in m for m in messages), messages
    assert all(m.startswith("joint 'closing_hinge' does not meet at rest") for m in messages)


def test_a_pivot_moved_within_the_links_is_no_closure_gap(empty_scene):
    """2 mm across the links (inside both bars' width) is a consistent four-bar with other
    link lengths: nothing in the scene contradicts it."""
    fourbar_with_closing_pivot(np.array([0.0, 0.002, 0.0]))
    assert bpy.ops.looprig.check_robot() == {"FINISHED"}
    assert not [p for p in problems(bpy.context) if "does not meet" in p[2]]
