"""Validation rules of Mechanism: each rule raises a clear MechanismError."""

import numpy as np
import pytest
from looprig.core import ActuatedMotion, Actuator, Body, Frame, Joint, JointKind, Mechanism, MechanismError
from looprig.core.library import build


def pendulum(**overrides):
    parts = {
        "bodies": [Body("ground", grounded=True), Body("link", position=np.array([0.5, 0, 0]))],
        "joints": [Joint("hinge", JointKind.REVOLUTE, "ground", "link")],
    }
    parts.update(overrides)
    return Mechanism(**parts)


def test_valid_pendulum_builds():
    m = pendulum()
    assert m.body_names == ["ground", "link"] and m.independent_loops() == 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"joints": [Joint("hinge", JointKind.REVOLUTE, "ground", "lnk")]},
            "no body 'lnk'; bodies are: ground, link",
        ),
        ({"joints": [Joint("hinge", JointKind.REVOLUTE, "link", "link")]}, "to itself"),
        ({"joints": [Joint("hinge", JointKind.REVOLUTE, "ground", "link", axis=np.zeros(3))]}, "zero-length"),
        ({"joints": [Joint("hinge", "hinge", "ground", "link")]}, "no joint kind 'hinge'"),
        ({"joints": []}, "not connected to any grounded body: link"),
        ({"bodies": [Body("ground", grounded=True), Body("link", mass=0.0)]}, "mass must be positive"),
        ({"bodies": [Body("ground", grounded=True), Body("link", mass=-1.0)]}, "mass must be positive"),
        ({"bodies": [Body("ground"), Body("link")]}, "no grounded body"),
        ({"bodies": [Body("ground", grounded=True), Body("ground")]}, "duplicate body name 'ground'"),
        (
            {"bodies": [Body("ground", grounded=True), Body("link", position=np.array([np.nan, 0, 0]))]},
            "finite",
        ),
        (
            {"joints": [Joint("hinge", JointKind.SPHERICAL, "ground", "link", actuator=Actuator())]},
            "cannot be actuated",
        ),
        (
            {
                "joints": [
                    Joint(
                        "hinge",
                        JointKind.REVOLUTE,
                        "ground",
                        "link",
                        actuator=Actuator(ActuatedMotion.DISPLACEMENT),
                    )
                ]
            },
            "cannot be actuated in displacement",
        ),
        (
            {
                "joints": [
                    Joint("hinge", JointKind.REVOLUTE, "ground", "link", actuator=Actuator(lower=1, upper=0))
                ]
            },
            "lower limit exceeds upper",
        ),
        ({"joints": [Joint("u", JointKind.UNIVERSAL, "ground", "link")]}, "needs secondary_axis"),
        (
            {
                "joints": [
                    Joint(
                        "u",
                        JointKind.UNIVERSAL,
                        "ground",
                        "link",
                        axis=np.array([1.0, 0, 0]),
                        secondary_axis=np.array([1.0, 1.0, 0]),
                    )
                ]
            },
            "orthogonal",
        ),
        ({"frames": [Frame("tip", "nobody")]}, "no body 'nobody'"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_message(overrides, message):
    with pytest.raises(MechanismError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pendulum(**overrides)


def test_free_joint_connects_a_floating_base():
    m = pendulum(joints=[Joint("float", JointKind.FREE, "ground", "link")])
    assert m.grubler_dof() == 6 and m.independent_loops() == 0


def test_fourbar_graph_counts():
    m = build("fourbar")
    assert m.independent_loops() == 1
    assert m.grubler_dof() == 6 * 3 - 4 * 5  # spatial count ignores the planar geometry
    assert m.frame("coupler").body == "coupler"  # a body name is a frame at its CoM
    with pytest.raises(MechanismError, match="no frame or body 'x'"):
        m.frame("x")


def test_connected_groups_and_cycle_rank_on_a_small_graph():
    """Two components {a, b, c} (a triangle plus a repeated edge) and {d}; cycle rank
    edges - nodes + components = 4 - 4 + 2."""
    from looprig.core.model.graph import connected_groups, cycle_rank

    nodes = ["a", "b", "c", "d"]
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "b")]
    assert connected_groups(nodes, edges) == [["a", "b", "c"], ["d"]]
    assert cycle_rank(nodes, edges) == 2
    assert connected_groups(nodes, []) == [["a"], ["b"], ["c"], ["d"]]
    assert cycle_rank(nodes, []) == 0


def test_edges_on_cycles_are_those_whose_removal_keeps_their_ends_joined():
    """A triangle with a tail and a self-loop: the triangle's edges and the loop lie on
    cycles, the tail does not; a repeated edge is a cycle of its own; the same answer as
    removing each edge and counting cycles."""
    from looprig.core.model.graph import cycle_rank, on_cycles

    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d"), ("d", "e"), ("d", "e")]
    nodes = sorted({n for edge in edges for n in edge})
    rank = cycle_rank(nodes, edges)
    by_rank = [cycle_rank(nodes, edges[:k] + edges[k + 1 :]) < rank for k in range(len(edges))]
    assert on_cycles(edges) == by_rank == [True, True, True, False, True, True, True]


def test_the_nodes_joined_without_an_edge_are_its_side_of_the_graph():
    """A triangle with a tail: cutting the tail leaves its end alone and the triangle
    together; cutting a triangle's edge leaves everything joined; the same groups as
    connected_groups without that edge."""
    from looprig.core.model.graph import connected_groups, joined

    edges = {"ab": ("a", "b"), "bc": ("b", "c"), "ca": ("c", "a"), "cd": ("c", "d"), "de": ("d", "e")}
    nodes = sorted({n for edge in edges.values() for n in edge})
    assert joined(edges, "d", "cd") == {"d", "e"} and joined(edges, "c", "cd") == {"a", "b", "c"}
    assert joined(edges, "a", "ab") == set(nodes)
    for cut, (a, _) in edges.items():
        groups = connected_groups(nodes, [e for k, e in edges.items() if k != cut])
        assert joined(edges, a, cut) == set(next(g for g in groups if a in g))
