"""The main job on the bundled default: retarget a dance onto the Dancer robot.

The Dancer (two 6R legs closing a loop through a 6-DoF pelvis, 8 servos; see
:func:`looprig.core.library.legs.dancer`) follows the pelvis of a 4-second
clip keyed at 60 fps (``data/dancer_groove.tracks.json``), mapped by
``data/dancer_groove.map.json``. The clip is resampled and solved at the
mapping's rate; the curves are checked against every servo's limits, written in
every export format (limit violations recorded in each file) with a PNG plot
and a report, and summarised per actuator.
"""

import json
from pathlib import Path

from .app import RetargetOutcome, retarget_to_folder
from .core.library import build
from .core.library.clips import dancer_groove_clip
from .core.maths.rotations import quat_from_matrix
from .core.retarget import RetargetMapping, TargetSpec
from .core.tracks.format import Clip, Track, read_tracks, write_tracks

DATA = Path(__file__).parent / "data"
CLIP_FILE = DATA / "dancer_groove.tracks.json"
MAP_FILE = DATA / "dancer_groove.map.json"
FORMATS = ("csv", "json", "dynamixel-csv", "dynamixel-json", "header")

#: The bundled mapping: the pelvis track drives the Dancer's pelvis frame; default
#: settings (the whole-clip solver, every servo limit held: ``limit_mode`` hold).
DEMO_MAPPING = RetargetMapping(
    targets=(TargetSpec("pelvis", "pelvis_frame", (1.0, 1.0, 1.0), (1.0, 1.0, 1.0)),),
    rate=600.0,
)


def bundled_clip() -> Clip:
    """The demo clip as keyed at 60 fps, from :func:`dancer_groove_clip`."""
    samples = dancer_groove_clip(fps=60.0, duration=4.0)
    tracks = {
        name: Track(samples.positions[name], quat_from_matrix(samples.rotations[name]))
        for name in samples.positions
    }
    return Clip(
        fps=60.0, frame_start=0, tracks=tracks, source={"application": "looprig", "clip": "dancer_groove"}
    )


def write_bundled_data() -> None:
    """Regenerate the bundled clip and mapping files (run on purpose only)."""
    DATA.mkdir(exist_ok=True)
    write_tracks(bundled_clip(), CLIP_FILE, length_unit="cm", up_axis="Y")
    DEMO_MAPPING.save(MAP_FILE)


def demo_inputs():
    """The demo's mechanism, track samples and mapping, and a one-line description of them."""
    mechanism = build("dancer")
    samples = read_tracks(CLIP_FILE).samples()
    mapping = RetargetMapping.load(MAP_FILE)
    about = (
        f"looprig demo: {CLIP_FILE.name} ({len(samples.times)} frames at 60 fps) -> "
        f"{mechanism.name} ({len(mechanism.bodies)} bodies, {len(mechanism.joints)} joints, "
        f"{mechanism.independent_loops()} loop, {len(mechanism.actuated_joints)} servos), "
        f"solved at {mapping.rate:g} Hz"
    )
    return mechanism, samples, mapping, about


def run_demo(output: Path, progress=None) -> RetargetOutcome:
    """Retarget, check, export every format and plot into ``output``."""
    mechanism, samples, mapping, _ = demo_inputs()
    return retarget_to_folder(mechanism, samples, mapping, output, FORMATS, plot=True, progress=progress)


if __name__ == "__main__":  # regenerate the bundled data files
    write_bundled_data()
    print(json.dumps({"wrote": [str(CLIP_FILE), str(MAP_FILE)]}))
