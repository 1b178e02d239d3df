"""The tree of an imported model in order: its joints parent first (checked: one root, no
link with two parents, no cycle) and every link's world pose at the file's zero configuration."""

from __future__ import annotations

import numpy as np

from .specs import (
    TreeJointSpec,
    TreeModel,
    rigid_transform,
)


# --------------------------------------------------------------------- tree checks
def ordered_tree(model: TreeModel) -> tuple[list[TreeJointSpec], dict[str, int]]:
    """Joints in parent-before-child order and the link index.

    Raises FileFormatError for duplicate names, unknown links, a link with two
    parent joints, cycles, and links not reachable from a root.
    """
    link_index: dict[str, int] = {}
    for i, link in enumerate(model.links):
        if link.name in link_index:
            raise model.error(f"duplicate link name {link.name!r}", link.element, link.line)
        link_index[link.name] = i
    names = set()
    parent_joint: dict[str, TreeJointSpec] = {}
    children: dict[str, list[TreeJointSpec]] = {}
    for joint in model.joints:
        if joint.name in names:
            raise model.error(f"duplicate joint name {joint.name!r}", joint.element, joint.line)
        names.add(joint.name)
        for role in ("parent", "child"):
            name = getattr(joint, role)
            if name not in link_index:
                valid = ", ".join(sorted(link_index)) or "(none)"
                raise model.error(
                    f"{role} link {name!r} does not exist; links are: {valid}", joint.element, joint.line
                )
        if joint.parent == joint.child:
            raise model.error(f"joins link {joint.parent!r} to itself", joint.element, joint.line)
        if joint.child in parent_joint:
            other = parent_joint[joint.child].name
            raise model.error(
                f"link {joint.child!r} has two parent joints ({other!r} and {joint.name!r}); "
                "a tree allows one (write loops as closures)",
                joint.element,
                joint.line,
            )
        if joint.child in model.roots:
            raise model.error(
                f"link {joint.child!r} is a root and cannot be a joint's child", joint.element, joint.line
            )
        parent_joint[joint.child] = joint
        children.setdefault(joint.parent, []).append(joint)
    if not model.roots:
        raise model.error("no root link (every link is some joint's child: the tree has a cycle)")
    order: list[TreeJointSpec] = []
    seen = set(model.roots)
    stack = list(model.roots)
    while stack:
        link = stack.pop()
        for joint in children.get(link, ()):
            if joint.child in seen:  # pragma: no cover - excluded by the one-parent rule
                raise model.error(f"cycle through link {joint.child!r}", joint.element, joint.line)
            seen.add(joint.child)
            order.append(joint)
            stack.append(joint.child)
    unreached = [link.name for link in model.links if link.name not in seen]
    if unreached:
        # walk up from one unreached link to find a cycle for the message
        link, path = unreached[0], []
        while link in parent_joint and link not in path:
            path.append(link)
            link = parent_joint[link].parent
        if link in path:
            cycle = " -> ".join([*path[path.index(link) :], link])
            joint = parent_joint[path[0]]
            raise model.error(f"the joints form a cycle: {cycle}", joint.element, joint.line)
        raise model.error(
            "links not connected to the root: "
            + ", ".join(sorted(unreached)[:20])
            + (" ..." if len(unreached) > 20 else "")
        )
    return order, link_index


# --------------------------------------------------------------------- assembly
def zero_poses(model: TreeModel, order: list[TreeJointSpec]) -> dict[str, np.ndarray]:
    """World transforms (4, 4) of every link at the file's zero configuration."""
    poses = {name: np.asarray(T, float) for name, T in model.roots.items()}
    for joint in order:  # parents before children
        poses[joint.child] = poses[joint.parent] @ joint.T_parent_joint @ joint.T_joint_child
    return {name: rigid_transform(T) for name, T in poses.items()}
