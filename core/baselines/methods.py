"""The serial-chain IK baselines by name, for the benchmark (bench/serial_chain.py)."""

from .geometric import ccd, triangulation
from .jacobian import damped_least_squares, jacobian_transpose, pseudo_inverse

#: The baselines by name, all with the signature ``(chain, target, settings, rotations)``.
METHODS = {
    "ccd": ccd,
    "triangulation": triangulation,
    "jacobian_transpose": jacobian_transpose,
    "pseudo_inverse": pseudo_inverse,
    "damped_least_squares": damped_least_squares,
}
