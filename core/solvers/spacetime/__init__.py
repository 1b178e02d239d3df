"""Space-time retargeting: every frame of a clip at once, with hard motor limits.

Over the F frames of a clip::

    min  sum_k f(s_k)                                  (tracking; the IK problem's objective)
    s.t. C(s_k) = 0                                    (joints and loops: never apart)
         lower <= p_k <= upper                         (each motor's range)
         |p_(k+1) - p_k| <= v / rate                   (its speed between frames)
         |p_(k+1) - 2 p_k + p_(k-1)| <= a / rate^2     (its acceleration)

with ``p_k`` the motors read off ``s_k``. Frames couple only through the motor
rows' neighbour differences.

The unknowns are the spanning tree's joint coordinates
(:meth:`~looprig.core.solvers.kkt.SpanningTree.joint_basis`): a step turns or slides each
tree joint exactly (:meth:`~looprig.core.solvers.kkt.SpanningTree.retract`), so the tree's
joints stay assembled, a motor that is a tree joint moves by exactly its coordinate
and every limit row is linear in the unknowns. Each frame then moves in the null
space of its loop rows, ``theta_k = q0_k + W_k u_k`` (``q0_k`` restores them), and
the whole clip's unknowns ``u`` (F, dof) meet only banded limit rows. A primal-dual
interior point (:func:`~.interior.interior_point`) solves it: one banded Newton system per
iteration (:class:`~looprig.core.solvers.banded.NewtonSystem`) with Newton's Hessian in
joint coordinates (Gauss-Newton's plus the tracked points' and axes' curvature,
:mod:`..joint_space`, and the loops' curvature times their multipliers), made convex
frame by frame where it is not, and a line search on an l1 merit.

The modules, each importing only those listed before it:

* :mod:`.records`: the clip a solve is asked to hold, its settings and its outcome;
* :mod:`.rows`: the limit rows and their stencils;
* :mod:`.tree_clip`: the iterate frame axis last, on robots without loops;
* :mod:`.linearization`: every frame linearised in joint coordinates, the Newton model;
* :mod:`.interior`: the interior point;
* :mod:`.starts`: the rewound start and the coarse answer refined to the whole clip;
* :mod:`.solve`: :func:`~.solve.solve_spacetime`, every start, coarse to fine;
* :mod:`.windows`: :func:`~.windows.hold_limits`, which frames are solved again,
  a looped clip's two passes.

The banded linear algebra (:mod:`..banded`) and the joint-space curvature
(:mod:`..joint_space`) live beside the package.
"""
