"""The serial chain of the IK baselines (CCD, triangulation, Jacobian transpose,
pseudo-inverse, DLS: :mod:`.geometric`, :mod:`.jacobian`) and their result record.

Reference solvers for position IK of the tip of an open chain of rigid links
joined by unconstrained ball joints in 3-D, the setting of Müller-Cajar &
Mukundan (2007), against which looprig's state-based IK can be compared on the
same chain (see :mod:`looprig.core.library.serial`). numpy only.

Conventions
-----------
* Lengths, positions and tolerances are in the caller's length unit (the
  triangulation paper's "units"; looprig reads them as metres). Angles in rad.
  Everything is in world coordinates.
* A pose of the chain is the world rotation of every link from its rest
  orientation, ``rotations (n, 3, 3)``; at rest (all identity) the chain lies
  straight from ``base`` along ``direction``. Link ``k`` spans
  ``positions[k] -> positions[k + 1] = positions[k] + lengths[k] rotations[k] direction``.
* Joint ``k`` is the ball joint at ``positions[k]`` between link ``k - 1`` (the
  base for ``k = 0``) and link ``k``; its relative rotation is
  ``rotations[k - 1]^T rotations[k]``. Turning joint ``k`` turns links ``k..n-1``
  rigidly about ``positions[k]``.
* An *iteration* is what each paper counts as one: a sweep over all joints for
  CCD, one Jacobian step for the Jacobian methods, the single pass of
  triangulation. ``joint_updates`` counts joint rotations (triangulation: n).

Sources
-------
* CCD: Müller-Cajar & Mukundan 2007 (seed 001), Sec. 2.2, eqs. (1)-(2); also
  the Baxter slides in seed 002 ("Cyclic Coordinate Descent").
* Triangulation: seed 001, Sec. 3.1 (eqs. 5-7, special cases 3.1.1-3.1.3) and
  Algorithm 1 (unconstrained joints).
* Jacobian transpose and pseudo-inverse: seed 002 (Baxter, "Jacobian inverse
  method", "Jacobian transpose", ``dq = h J^T dx``).
* Damped least squares: seed 004 (Toussaint), slides 27 and 33:
  ``J# = J^T (J J^T + lambda I)^-1``, the singularity-robust pseudo-inverse.
* Rotation cost: seed 001, eq. (3), ``C = sum_i theta_i``.
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import MechanismError, TargetError
from ..maths.rotations import rotation_angle

_EYE3 = np.eye(3)
#: Sine of the angle below which two directions count as parallel.
_PARALLEL = 1e-12


# ----------------------------------------------------------------------------- chain
@dataclass(frozen=True)
class SerialChain:
    """A serial chain of links joined by ball joints, the first one at ``base``.

    lengths: (n,) link lengths, positive [length unit], from the base outwards.
    base: (3,) world position of the first joint [length unit].
    direction: (3,) world direction of the straight rest pose (normalised here).
    """

    lengths: np.ndarray
    base: np.ndarray = field(default_factory=lambda: np.zeros(3))
    direction: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))

    def __post_init__(self):
        lengths = np.asarray(self.lengths, dtype=float).reshape(-1)
        if lengths.size == 0 or not np.all(np.isfinite(lengths)) or np.any(lengths <= 0):
            raise MechanismError(f"serial chain: link lengths must be positive and finite, got {lengths}")
        base = np.asarray(self.base, dtype=float).reshape(-1)
        direction = np.asarray(self.direction, dtype=float).reshape(-1)
        if base.shape != (3,) or not np.all(np.isfinite(base)):
            raise MechanismError(f"serial chain: base must be a finite 3-vector, got {self.base}")
        norm = np.linalg.norm(direction) if direction.shape == (3,) else 0.0
        if not np.isfinite(norm) or norm < 1e-12:
            raise MechanismError(f"serial chain: direction must be a non-zero 3-vector, got {self.direction}")
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "direction", direction / norm)

    @property
    def n(self) -> int:
        """Number of links (= number of ball joints)."""
        return len(self.lengths)

    @property
    def total_length(self) -> float:
        """Length of the straight chain [length unit]."""
        return float(self.lengths.sum())

    @property
    def reach(self) -> tuple[float, float]:
        """Inner and outer radius [length unit] of the tip's workspace about ``base``.

        With free ball joints the tip reaches exactly the spherical shell
        ``max(0, 2 max(l) - sum(l)) <= |tip - base| <= sum(l)``: a closed polygon
        with sides l and |tip - base| exists iff no side exceeds the sum of the others.
        """
        total = self.total_length
        return max(0.0, 2.0 * float(self.lengths.max()) - total), total

    def is_reachable(self, target) -> bool:
        """Whether the tip can be placed exactly at ``target`` (3,) [length unit]."""
        inner, outer = self.reach
        distance = float(np.linalg.norm(np.asarray(target, dtype=float) - self.base))
        return inner <= distance <= outer

    def closest_distance(self, target) -> float:
        """Smallest possible tip-to-target distance [length unit] (0 when reachable)."""
        inner, outer = self.reach
        distance = float(np.linalg.norm(np.asarray(target, dtype=float) - self.base))
        return max(0.0, distance - outer, inner - distance)

    def rest_rotations(self) -> np.ndarray:
        """(n, 3, 3) identity rotations: the straight rest pose."""
        return np.repeat(_EYE3[None], self.n, axis=0)

    def positions(self, rotations: np.ndarray) -> np.ndarray:
        """Forward kinematics: joint positions and tip (n + 1, 3) [length unit], world.

        rotations: (n, 3, 3) world rotation of each link from its rest orientation.
        """
        links = self.lengths[:, None] * (np.asarray(rotations) @ self.direction)  # (n, 3)
        return np.vstack([self.base, self.base + np.cumsum(links, axis=0)])


# ----------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class IterativeSettings:
    """When an iterative baseline (CCD, the Jacobian methods) stops.

    max_iterations: iterations before giving up (an iteration as each paper counts
    one: a CCD sweep, a Jacobian step); 99 after seed 001, Sec. 4.2 ("If it takes CCD
    more than 99 iterations to reach the target the algorithm aborts").
    tolerance: the target counts as reached once the tip is this close [length unit].
    stall_tolerance: stop ("a stable position", seed 001 Sec. 4.2) when an iteration
    changes the tip error by less than this [length unit].
    """

    max_iterations: int = 99
    tolerance: float = 1e-6
    stall_tolerance: float = 1e-10


# ----------------------------------------------------------------------------- results
@dataclass
class SerialIKResult:
    """Outcome of one serial-chain IK solve.

    rotations: (n, 3, 3) world rotation of each link from its rest orientation.
    positions: (n + 1, 3) joint positions, tip last [length unit], world.
    error: |tip - target| [length unit]. reached: error <= the method's tolerance.
    iterations: sweeps (CCD), steps (Jacobian methods) or 1 (triangulation).
    joint_updates: number of single-joint rotations applied (CCD, triangulation)
    or joint steps (n per Jacobian step).
    rotation_cost: the sum of the absolute angles of all joint rotations applied
    on the way [rad] (seed 001, eq. 3); nan where the method does not track it.
    errors: (iterations + 1,) tip error before the first and after each iteration.
    details: the underlying solver's own result where there is one (looprig's
    ``IKResult``), else None.
    """

    rotations: np.ndarray
    positions: np.ndarray
    error: float
    reached: bool
    iterations: int
    joint_updates: int
    rotation_cost: float
    errors: np.ndarray
    method: str = ""
    details: object = None

    @property
    def tip(self) -> np.ndarray:
        """(3,) tip position [length unit], world."""
        return self.positions[-1]

    @property
    def joint_rotations(self) -> np.ndarray:
        """(n, 3, 3) relative rotation of each ball joint, ``R_{k-1}^T R_k`` (R_{-1} = I)."""
        parents = np.concatenate([_EYE3[None], self.rotations[:-1]])
        return np.swapaxes(parents, -1, -2) @ self.rotations

    @property
    def joint_angles(self) -> np.ndarray:
        """(n,) rotation angle of each ball joint away from the rest pose [rad]."""
        return rotation_angle(self.joint_rotations)


def check_target(chain: SerialChain, target, rotations) -> tuple[np.ndarray, np.ndarray]:
    target = np.asarray(target, dtype=float).reshape(-1)
    if target.shape != (3,) or not np.all(np.isfinite(target)):
        raise TargetError(f"serial-chain target must be a finite 3-vector, got {target}")
    if rotations is None:
        return target, chain.rest_rotations()
    rotations = np.array(rotations, dtype=float)
    if rotations.shape != (chain.n, 3, 3) or not np.all(np.isfinite(rotations)):
        raise TargetError(
            f"initial rotations must be finite with shape ({chain.n}, 3, 3), got {rotations.shape}"
        )
    return target, rotations
