"""Serial chains of ball-jointed links, for comparing looprig's IK with serial-chain baselines.

The chain of Müller-Cajar & Mukundan (2007, seed 001, Sec. 4.1) is
``serial_chain((9, 9, 9, 9, 4))``: five links joined by unconstrained ball
(spherical) joints, the first one at the base, straight along +y at rest.
:func:`solve_tip_ik` solves position IK of its tip with looprig's state-based
IK (:func:`looprig.core.solve_ik`) and returns the same result type as the
baselines of :mod:`looprig.core.baselines.chain`, so both can be compared directly.

Lengths are in the caller's unit (the paper's "units"); looprig reads them as
metres. Bodies are world-aligned in the rest pose, as the library assumes.
"""

import numpy as np

from ..baselines.chain import SerialChain, SerialIKResult
from ..errors import MechanismError
from ..maths.rotations import quat_from_matrix, quat_to_matrix
from ..model.mechanism import Mechanism
from ..model.parts import Body, Frame, Joint, JointKind
from ..solvers.ik import IKProblem, IKSettings, IKTargets, solve_ik
from ..terms import FrameObjective, Regularization
from ._build import Y_AXIS, link

#: Link lengths of the unconstrained chain of seed 001, Sec. 4.1 [units].
TRIANGULATION_PAPER_LENGTHS = (9.0, 9.0, 9.0, 9.0, 4.0)


def serial_chain(
    lengths,
    base=(0.0, 0.0, 0.0),
    direction=Y_AXIS,
    density: float = 1.0,
) -> Mechanism:
    """A straight chain of links joined by spherical joints, grounded at ``base``.

    lengths: (n,) link lengths [m], from the base outwards. base: (3,) world
    position of the first joint [m]. direction: (3,) world direction the chain
    points along in its initial (rest) pose. density: link mass per length [kg/m].

    Bodies: grounded ``base`` and ``link1`` .. ``linkN`` (CoM at mid-link);
    joints ``joint1`` .. ``jointN``, spherical, ``joint1`` between ``base`` and
    ``link1`` at ``base``, ``jointK`` between ``link{K-1}`` and ``linkK`` at the
    end of ``link{K-1}``; frame ``tip`` at the free end of the last link, with
    world axes. 3n degrees of freedom, no loops, no actuators (ball joints carry
    none). Raises :class:`MechanismError` for non-positive lengths or a zero direction.
    """
    chain = SerialChain(np.asarray(lengths, dtype=float), np.asarray(base, dtype=float), direction)
    if not np.isfinite(density) or density <= 0:
        raise MechanismError(f"serial chain: density must be positive, got {density}")
    points = chain.positions(chain.rest_rotations())  # (n + 1, 3)
    bodies = [Body("base", position=chain.base, mass=1.0, grounded=True)]
    joints = []
    parent = "base"
    for k, length in enumerate(chain.lengths):
        name = f"link{k + 1}"
        bodies.append(link(name, points[k], points[k + 1], mass=density * float(length)))
        joints.append(Joint(f"joint{k + 1}", JointKind.SPHERICAL, parent, name, anchor=points[k]))
        parent = name
    return Mechanism(bodies, joints, [Frame("tip", parent, position=points[-1])], name="serial_chain")


def chain_of(mechanism: Mechanism) -> SerialChain:
    """The :class:`SerialChain` a :func:`serial_chain` mechanism was built from."""
    names = [b.name for b in mechanism.bodies]
    if mechanism.name != "serial_chain" or names[0] != "base":
        raise MechanismError(f"mechanism {mechanism.name!r} was not built by serial_chain()")
    anchors = np.array([j.anchor for j in mechanism.joints] + [mechanism.frame("tip").position])
    steps = np.diff(anchors, axis=0)
    lengths = np.linalg.norm(steps, axis=1)
    return SerialChain(lengths, anchors[0], steps[0])


def chain_positions(mechanism: Mechanism, state: np.ndarray) -> np.ndarray:
    """Joint positions and tip (n + 1, 3) [m], world, of a :func:`serial_chain` state (n + 1, 7).

    Each joint sits half a link behind its link's CoM along the link's rotated
    rest direction; the tip half a link ahead of the last CoM.
    """
    chain = chain_of(mechanism)
    R = quat_to_matrix(state[1:, 3:])  # (n, 3, 3), links only
    half = 0.5 * chain.lengths[:, None] * (R @ chain.direction)  # (n, 3)
    return np.vstack([state[1:, :3] - half, state[-1, :3] + half[-1]])


def chain_state(mechanism: Mechanism, rotations: np.ndarray) -> np.ndarray:
    """State (n + 1, 7) of a :func:`serial_chain` mechanism in the pose ``rotations``.

    rotations: (n, 3, 3) world rotation of each link from its rest orientation,
    as in :mod:`looprig.core.baselines.chain`; the joints are assembled exactly, so a
    baseline's answer can start looprig's IK.
    """
    chain = chain_of(mechanism)
    R = np.asarray(rotations, dtype=float)
    points = chain.positions(R)
    state = mechanism.initial_state()
    state[1:, :3] = 0.5 * (points[:-1] + points[1:])
    state[1:, 3:] = quat_from_matrix(R)
    return state


def tip_problem(
    mechanism: Mechanism,
    state_weight: float = Regularization.state_weight,
    settings: IKSettings | None = None,
) -> IKProblem:
    """Position-only IK problem on frame ``tip`` of a :func:`serial_chain` mechanism.

    state_weight: the minimal-motion metric's weight (default: looprig's default;
    it picks one of the many poses that reach the target without pulling the tip
    off it). settings: the SQP settings (default :class:`IKSettings`).
    """
    return IKProblem(
        mechanism,
        [FrameObjective("tip", (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))],
        regularization=Regularization(state_weight),
        settings=settings or IKSettings(),
    )


def solve_tip_ik(
    problem: IKProblem,
    target,
    initial_state: np.ndarray | None = None,
    tolerance: float = 1e-6,
) -> SerialIKResult:
    """Solve position IK of the tip with looprig's SQP, from ``initial_state``
    (default: the straight rest pose), which is also the regularizer's reference.

    target: (3,) [m], world. tolerance: the tip distance that counts as reached
    [m]. Returns a :class:`SerialIKResult` (iterations: SQP iterations, which
    run to convergence or the iteration limit, not to ``tolerance``;
    joint_updates: 0, the state-based IK moves every body at once;
    rotation_cost: nan, only the net joint angles are known; details: the
    :class:`~looprig.core.IKResult`).
    """
    mechanism = problem.mechanism
    start = mechanism.initial_state() if initial_state is None else np.asarray(initial_state, float)
    target = np.asarray(target, dtype=float).reshape(3)
    targets = IKTargets(target[None], np.eye(3)[None])
    result = solve_ik(problem, targets, start, previous_actuators=np.zeros(0))
    positions = chain_positions(mechanism, result.state)
    start_error = float(np.linalg.norm(chain_positions(mechanism, start)[-1] - target))
    error = float(result.position_error[0])
    return SerialIKResult(
        rotations=quat_to_matrix(result.state[1:, 3:]),
        positions=positions,
        error=error,
        reached=error <= tolerance,
        iterations=result.iterations,
        joint_updates=0,
        rotation_cost=float("nan"),
        errors=np.array([start_error, error]),
        method="looprig",
        details=result,
    )
