"""The mathematics under everything: rotations (quaternions wxyz, exp/log,
retraction) and dense linear algebra."""
