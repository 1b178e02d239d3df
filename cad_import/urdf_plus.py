"""URDF+ (Gepetto's extension of URDF): loop closures and couplings written in the URDF
itself, as ``<loop_joint>`` and mimic-like elements."""

from __future__ import annotations

from ..core.model.parts import JointKind
from .specs import (
    ClosureSpec,
    CouplingSpec,
)
from .urdf_elements import origin_transform, unit_axis
from .xmlfile import XmlDocument, describe

#: URDF+ ``<loop type>`` -> the closure looprig makes (``continuous`` is a revolute without limits)
URDF_PLUS_LOOPS = {"revolute": JointKind.REVOLUTE, "continuous": JointKind.REVOLUTE, "fixed": JointKind.FIXED}


def _urdf_plus_link(doc: XmlDocument, element, role: str, link_names) -> tuple:
    """The ``<predecessor link>`` or ``<successor link>`` of a URDF+ element: (link, child element)."""
    child = element.find(role)
    if child is None:
        raise doc.error(element, f"no <{role} link='...'> element")
    link = doc.text_attr(child, "link", required=True)
    if link not in link_names:
        raise doc.error(child, f"link {link!r} does not exist; links are: {', '.join(sorted(link_names))}")
    return link, child


def urdf_plus_loop(doc: XmlDocument, element, link_names) -> ClosureSpec:
    """A URDF+ loop joint (Chignoli et al., arXiv 2411.19753; MIT urdfdom's parser):
    ``<loop name type><predecessor link><origin/></predecessor><successor link>
    <origin/></successor><axis xyz/></loop>``: the two ``origin`` frames (link ->
    constraint frame) meet in a joint of ``type``; the axis (constraint frame, default
    x) for a revolute one. Prismatic and planar loops are refused, naming the element."""
    name = doc.text_attr(element, "name", required=True)
    kind_name = doc.text_attr(element, "type", required=True)
    if kind_name not in URDF_PLUS_LOOPS:
        raise doc.error(
            element,
            f"loop type {kind_name!r} is not supported; looprig closes loops of type "
            + ", ".join(URDF_PLUS_LOOPS),
        )
    (link1, first), (link2, second) = (
        _urdf_plus_link(doc, element, r, link_names) for r in ("predecessor", "successor")
    )
    return ClosureSpec(
        name=name,
        kind=URDF_PLUS_LOOPS[kind_name],
        link1=link1,
        T_link1_frame=origin_transform(doc, first),
        link2=link2,
        T_link2_frame=origin_transform(doc, second),
        axis=unit_axis(doc, element.find("axis"), default=(1.0, 0.0, 0.0)),
        element=describe(element),
        line=doc.line(element),
    )


def urdf_plus_coupling(doc: XmlDocument, element, joints) -> CouplingSpec:
    """A URDF+ coupling ``<coupling name><predecessor link/><successor link/><ratio value/>
    </coupling>``, read as: the joint moving the successor link turns ``ratio`` times the
    joint moving the predecessor link (a gear or belt)."""
    name = doc.text_attr(element, "name", required=True)
    parent_joint = {j.child: j.name for j in joints}
    moved = []
    for role in ("predecessor", "successor"):
        link, child = _urdf_plus_link(
            doc, element, role, {j.child for j in joints} | {j.parent for j in joints}
        )
        if link not in parent_joint:
            raise doc.error(child, f"link {link!r} is the root: no joint moves it")
        moved.append(parent_joint[link])
    ratio = element.find("ratio")
    return CouplingSpec(
        name=name,
        joint=moved[1],
        sources=moved[0],
        ratios=1.0 if ratio is None else doc.number(ratio, "value"),
        element=describe(element),
        line=doc.line(element),
    )
