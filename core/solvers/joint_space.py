"""Derivatives along a spanning tree's joint coordinates: the screws of every joint
coordinate at a batch of states, and the second derivatives of body-fixed points and
directions they move, contracted with the forces that act on them.

A coordinate c of :meth:`~looprig.core.solvers.kkt.SpanningTree.joint_basis` moves the bodies
past its joint by a screw ``(omega_c, v_c)`` (world, at the states): a point p of such
a body moves at ``J_c(p) = omega_c x p + v_c``, a direction u at ``omega_c x u``.
:meth:`~looprig.core.solvers.kkt.SpanningTree.retract` composes the joints' motions from the
root outwards (a product of exponentials), so for two coordinates c1, c2 that both move
p, c1 nearer the root (or listed first within one joint),
``d2 p / dc1 dc2 = omega_c1 x J_c2(p)``; a floating root's rotation vector is one
exponential, whose second derivative is the symmetric part. Contracted with a force
``a`` on the point: ``H[c1, c2] = (a x omega_c1) . J_c2(p)``.

This is the part of an objective's Hessian in joint coordinates that Gauss-Newton
leaves out: ``sum_k a_k . d2 x_k`` over the points and directions x_k the objective
reads, with ``a_k`` its gradient with respect to them. Where a target is missed
because a motor limit holds the robot back, it is what makes Newton's method converge
quadratically (a point on the Boxer's forearm, far from the shoulder, misses by
centimetres).
"""

import numpy as np

from ..maths.rotations import cross
from .kkt import SpanningTree


class JointScrews:
    """The joint coordinates of a :class:`SpanningTree`, once per tree: which bodies each
    coordinate moves, the order in which the retraction composes them, and their
    screws at given states (:meth:`at`)."""

    def __init__(self, tree: SpanningTree, n_bodies: int):
        tj, D = tree.joints, tree.dof
        self.tree = tree
        self.moves = np.zeros((n_bodies, D), bool)  # (n, D): coordinate c moves body b
        rank = np.zeros(D)  # outer coordinates (applied last) first
        self.root_rotation = np.full(D, -1)  # the floating root a rotation column belongs to
        self.root_body = np.zeros(len(tree.root_slots), int)
        for r, (slot, col) in enumerate(zip(tree.root_slots, tree.root_columns, strict=True)):
            body = int(np.flatnonzero(tree.column_of_body // 6 == slot)[0])
            self.root_body[r] = body
            self.moves[body, col : col + 6] = True
            rank[col : col + 3] = -2.0  # the translation is applied after the rotation
            rank[col + 3 : col + 6] = -1.0
            self.root_rotation[col + 3 : col + 6] = r
        depth = np.zeros(len(tj.new))
        for d, level in enumerate(tree.levels):  # a coordinate moves the bodies past its joint
            depth[level] = d
            self.moves[tj.new[level]] = self.moves[tj.old[level]]
            for p in np.flatnonzero(np.isin(tj.real_joint, level)):
                self.moves[tj.new[tj.real_joint[p]], tj.real_q[p]] = True
        rank[tj.real_q] = depth[tj.real_joint] + 0.1 * tj.motion_slot
        self.outer_first = rank[:, None] <= rank[None, :]  # (D, D): c1 is outer to c2 (or c1 = c2)
        same_root = self.root_rotation[:, None] == self.root_rotation[None, :]
        self.symmetric = same_root & (self.root_rotation[:, None] >= 0)  # one root's rotation block

    def at(self, states: np.ndarray, R: np.ndarray):
        """The screws (omega, v) (B, D, 3) of every coordinate at states (B, n, 7) with
        rotations R (B, n, 3, 3)."""
        tree, tj = self.tree, self.tree.joints
        B, D = len(states), tree.dof
        omega, v = np.zeros((B, D, 3)), np.zeros((B, D, 3))
        arm, axis = tree.arms_and_axes(R)
        anchor = states[:, tj.new[tj.real_joint], :3] + arm[:, tj.real_joint]  # (B, P, 3)
        rotation = tj.rotation  # (P, 1)
        omega[:, tj.real_q] = np.where(rotation, axis, 0.0)
        v[:, tj.real_q] = np.where(rotation, -cross(axis, anchor), axis)
        eye = np.eye(3)
        for body, col in zip(self.root_body, tree.root_columns, strict=True):
            v[:, col : col + 3] = eye
            omega[:, col + 3 : col + 6] = eye
            v[:, col + 3 : col + 6] = -cross(eye, states[:, body, None, :3])
        return omega, v

    def curvature(self, screws, bodies: np.ndarray, vectors: np.ndarray, forces: np.ndarray, points: bool):
        """``sum_k forces_k . d2 x_k`` (B, D, D) over K body-fixed vectors x_k (B, K, 3)
        [m] (``points``: positions in world; else directions) on ``bodies`` (K,), under
        forces (B, K, 3) (the objective's gradient with respect to them)."""
        omega, v = screws  # (B, D, 3)
        moves = self.moves[bodies][None, :, :, None]  # (1, K, D, 1)
        J = cross(omega[:, None], vectors[:, :, None])  # (B, K, D, 3)
        if points:
            J = J + v[:, None]
        J = np.where(moves, J, 0.0)
        M = np.where(moves, cross(forces[:, :, None], omega[:, None]), 0.0)  # a x omega_c
        X = (M @ np.swapaxes(J, -1, -2)).sum(1)  # (B, D, D): X[c1, c2] = a . (omega_c1 x J_c2)
        H = np.where(self.outer_first, X, np.swapaxes(X, -1, -2))
        return np.where(self.symmetric, 0.5 * (X + np.swapaxes(X, -1, -2)), H)
