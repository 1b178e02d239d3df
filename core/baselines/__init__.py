"""Reference IK solvers from the literature, benchmarked against looprig on the same problems."""
