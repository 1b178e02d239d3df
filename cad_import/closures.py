"""Loop-closure conventions for tree-structured files (URDF).

A URDF describes a tree; the loops of a closed-chain robot are stated beside
it. Three conventions are read, and all become :class:`ClosureSpec` entries
(a closure joint between two frames that must coincide):

1. **onshape-to-robot frames**: links named ``closing_<id>_1`` and
   ``closing_<id>_2`` (usually massless, attached by fixed joints) must
   coincide. The URDF does not say how; looprig closes them with a
   ``spherical`` joint (the exporter's default ball closure) unless told
   otherwise (``closure_kind=``). The closure joint is named ``closing_<id>``.
2. **looprig elements** inside ``<robot>`` (ignored by other URDF readers)::

       <looprig_closure name="pin_B" kind="revolute" frame1="coupler_end" frame2="rocker_end">
         <axis xyz="0 0 1"/>   <!-- revolute only: in frame1 coordinates, default z -->
       </looprig_closure>

   ``frame1``/``frame2`` name links; the closure frame is the link's origin
   (add a massless link on a fixed joint to place it anywhere). ``kind`` is
   ``spherical``, ``revolute`` or ``fixed``.
3. **YAML side file** (Gepetto example-parallel-robots): ``<stem>.yaml`` or
   ``robot.yaml`` beside the URDF with ``closed_loop: [[A, B], ...]``,
   ``type: [6d | 3d, ...]`` (6d: fixed, 3d: spherical) and ``name_mot: [...]``
   (actuated joints). ``A``/``B`` name links, or joints whose child link
   carries the closure frame.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..core.model.parts import JointKind
from .errors import MAX_MODEL_BYTES, FileFormatError, check_file_size
from .specs import CLOSURE_KINDS, ClosureSpec

CLOSING_NAME = re.compile(r"^closing_(.+)_([12])$")

#: YAML ``type`` entries and the closure joint they mean.
YAML_CLOSURE_TYPES = {"6d": JointKind.FIXED, "3d": JointKind.SPHERICAL}


def closure_kind(value, path=None, element=None, line=None) -> JointKind:
    """A closure joint kind from its name (spherical, revolute, fixed)."""
    try:
        kind = JointKind(str(value).strip().lower())
    except ValueError:
        kind = None
    if kind not in CLOSURE_KINDS:
        raise FileFormatError(
            path,
            f"closure kind {value!r} is not one of " + ", ".join(k.value for k in CLOSURE_KINDS),
            element,
            line,
        )
    return kind


def onshape_closures(
    link_names, kind: JointKind = JointKind.SPHERICAL
) -> tuple[list[ClosureSpec], list[str]]:
    """Closures from ``closing_<id>_1`` / ``closing_<id>_2`` link pairs.

    Returns the closures and notes about unpaired closing frames.
    """
    halves: dict[str, dict[str, str]] = {}
    for name in link_names:
        match = CLOSING_NAME.match(name)
        if match:
            halves.setdefault(match.group(1), {})[match.group(2)] = name
    closures, notes = [], []
    for ident, pair in sorted(halves.items()):
        if set(pair) != {"1", "2"}:
            notes.append(f"closing frame {next(iter(pair.values()))!r} has no partner; ignored")
            continue
        closures.append(
            ClosureSpec(
                name=f"closing_{ident}",
                kind=kind,
                link1=pair["1"],
                T_link1_frame=np.eye(4),
                link2=pair["2"],
                T_link2_frame=np.eye(4),
                element=f"closing frames {pair['1']!r}/{pair['2']!r}",
            )
        )
    return closures, notes


def find_sidecar(urdf_path: Path) -> Path | None:
    """The YAML closure list beside a URDF: ``<stem>.yaml``, else ``robot.yaml``."""
    for name in (urdf_path.with_suffix(".yaml").name, urdf_path.with_suffix(".yml").name, "robot.yaml"):
        candidate = urdf_path.parent / name
        if candidate.is_file():
            return candidate
    return None


def read_closure_yaml(path, joint_child: dict[str, str], link_names) -> tuple[list[ClosureSpec], list[str]]:
    """Closures and actuated joint names from a Gepetto-style YAML side file.

    joint_child: URDF joint name -> child link name (to resolve joint names).
    """
    try:
        import yaml
    except ImportError as error:
        raise FileFormatError(path, "reading closures needs PyYAML: pip install 'looprig[cad]'") from error
    try:
        check_file_size(path, MAX_MODEL_BYTES, "closure file")
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise FileFormatError(path, f"cannot read file: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise FileFormatError(path, f"not UTF-8 text: {error.reason} at byte {error.start}") from None
    except (ValueError, RecursionError) as error:  # PyYAML's reader and deep nesting
        raise FileFormatError(path, f"not valid YAML: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise FileFormatError(
            path,
            f"not valid YAML: {getattr(error, 'problem', error)}",
            line=None if mark is None else mark.line + 1,
        ) from None
    if data is None:
        return [], []
    if not isinstance(data, dict):
        raise FileFormatError(path, "expected a mapping with 'closed_loop', 'type', 'name_mot'")
    pairs = data.get("closed_loop") or []
    types = data.get("type") or ["6d"] * len(pairs)
    motors = data.get("name_mot") or []
    if not isinstance(pairs, list) or not isinstance(types, list) or not isinstance(motors, list):
        raise FileFormatError(path, "'closed_loop', 'type' and 'name_mot' must be lists")
    if len(types) != len(pairs):
        raise FileFormatError(
            path, f"'type' has {len(types)} entries but 'closed_loop' has {len(pairs)}", "type"
        )
    links = set(link_names)

    def frame_link(name, k):
        if not isinstance(name, str):
            raise FileFormatError(
                path, f"closure frame names must be strings, got {name!r}", f"closed_loop[{k}]"
            )
        if name in links:
            return name
        if name in joint_child:
            return joint_child[name]
        raise FileFormatError(
            path, f"{name!r} is neither a link nor a joint of the URDF", f"closed_loop[{k}]"
        )

    closures = []
    for k, (pair, kind_name) in enumerate(zip(pairs, types, strict=True)):
        if not isinstance(pair, list) or len(pair) != 2:
            raise FileFormatError(path, f"expected a pair of names, got {pair!r}", f"closed_loop[{k}]")
        kind = YAML_CLOSURE_TYPES.get(str(kind_name).lower())
        if kind is None:
            raise FileFormatError(
                path,
                f"closure type {kind_name!r} is not one of " + ", ".join(YAML_CLOSURE_TYPES),
                f"type[{k}]",
            )
        a, b = frame_link(pair[0], k), frame_link(pair[1], k)
        closures.append(
            ClosureSpec(
                name=f"{pair[0]}__{pair[1]}",
                kind=kind,
                link1=a,
                T_link1_frame=np.eye(4),
                link2=b,
                T_link2_frame=np.eye(4),
                element=f"{Path(path).name} closed_loop[{k}]",
            )
        )
    for name in motors:
        if not isinstance(name, str) or name not in joint_child:
            raise FileFormatError(path, f"actuated joint {name!r} is not a joint of the URDF", "name_mot")
    return closures, list(motors)
