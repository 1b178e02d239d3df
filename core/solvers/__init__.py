"""The solvers: the linearised step and its KKT systems, FK, per-frame IK, the
whole-clip and space-time solvers, the first frame and motor holding."""
