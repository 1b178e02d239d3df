"""Reference mechanisms built in code, used by tests, the benchmark and the demo.

``build(name)`` returns a fresh :class:`~looprig.core.mechanism.Mechanism`;
``NAMES`` lists what is available.
"""

from collections.abc import Callable

from ..errors import MechanismError, did_you_mean
from ..mechanism import Mechanism
from .planar import fourbar, slider_crank, two_link_arm

REFERENCE_MECHANISMS: dict[str, Callable[[], Mechanism]] = {
    "fourbar": fourbar,
    "slider_crank": slider_crank,
    "two_link_arm": two_link_arm,
}

NAMES = tuple(REFERENCE_MECHANISMS)


def build(name: str) -> Mechanism:
    """Build the reference mechanism ``name``."""
    try:
        return REFERENCE_MECHANISMS[name]()
    except KeyError:
        raise MechanismError(did_you_mean("reference mechanism", name, REFERENCE_MECHANISMS)) from None
