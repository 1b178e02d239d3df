"""A gap a file's rounding leaves in its loops is accepted up to 1e-5 of the robot's size
(six significant digits, as exporters write with ``%g``); beyond, or beyond the file's own
gap at its zero configuration, it is the file's error."""

import warnings

import pytest
from looprig.cad_import import FileFormatError, FileFormatWarning, load_model
from looprig.cad_import.tree import mean_joint_distance

pytest.importorskip("mujoco")

#: the four-bar of tests/data/fourbar_connect.xml closed by a hinge written as two connects
#: (a point and one 0.1 m along the axis, as onshape-to-robot writes ``closing_*`` and
#: ``closing_*_z`` sites); the rocker's second site is ``{offset}`` m off the axis
FOURBAR = """<mujoco model="fourbar_hinge_closure">
  <compiler angle="degree"/>
  <default><joint type="hinge" axis="0 0 1"/><geom type="capsule" size="0.005" density="1000"/></default>
  <worldbody>
    <body name="crank" euler="0 0 90">
      <joint name="crank_joint"/>
      <geom fromto="0 0 0 0.1 0 0"/>
      <body name="coupler" pos="0.1 0 0" euler="0 0 -55.20278383948521">
        <joint name="coupler_joint"/>
        <geom fromto="0 0 0 0.35 0 0"/>
        <site name="B_1" pos="0.35 0 0"/>
        <site name="B_1_z" pos="0.35 0 0.1"/>
      </body>
    </body>
    <body name="rocker" pos="0.3 0 0" euler="0 0 92.40485067467179">
      <joint name="rocker_joint"/>
      <geom fromto="0 0 0 0.3 0 0"/>
      <site name="B_2" pos="0.3 0 0"/>
      <site name="B_2_z" pos="0.3 {offset} 0.1"/>
    </body>
  </worldbody>
  <equality>
    <connect name="pin_B" site1="B_1" site2="B_2"/>
    <connect name="pin_B_z" site1="B_1_z" site2="B_2_z"/>
  </equality>
  <actuator><position name="crank_motor" joint="crank_joint"/></actuator>
</mujoco>"""


def load(tmp_path, offset: float):
    path = tmp_path / "fourbar.xml"
    path.write_text(FOURBAR.format(offset=repr(offset)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FileFormatWarning)
        model = load_model(path, meshes=False)
    return model, [str(w.message) for w in caught]


def test_one_unit_of_the_sixth_digit_is_the_files_gap_accepted_and_said(tmp_path):
    """1e-6 m off on a 0.3 m rocker (one unit in the sixth significant digit): no pose closes
    the two connects (half of it stays in each), 2.4e-6 of the mean joint distance: said."""
    model, notes = load(tmp_path, 1e-6)
    mechanism = model.mechanism
    (note,) = [n for n in notes if "keep a gap of" in n]
    assert "the file's own at its zero configuration: 1e-06 m" in note
    assert 1e-6 < model.closure_residual / mean_joint_distance(mechanism) < 1e-5
    assert mechanism.closure_gap == pytest.approx(1e-6)
    assert len(mechanism.actuated_joints) == 1


def test_a_gap_beyond_the_files_precision_is_refused(tmp_path):
    """1e-4 m off: the gap left (5e-5 m) is the file's error; one line naming the equality."""
    refused = r"fourbar\.xml: equality 'pin_B(_z)?': the loop closures cannot all be met"
    with pytest.raises(FileFormatError, match=refused):
        load(tmp_path, 1e-4)
