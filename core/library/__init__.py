"""Reference mechanisms built in code, used by tests, the benchmark and the demo.

``build(name)`` returns a fresh :class:`~looprig.core.model.mechanism.Mechanism`;
``NAMES`` lists what is available:

* ``fourbar``, ``slider_crank``, ``two_link_arm`` — planar, with closed forms
  (:mod:`.planar`);
* ``boxer`` — the paper's 4-DoF Boxer arm with a singular shoulder (:mod:`.arms`);
* ``dancer`` — two 6R legs closing a loop through the pelvis, over-actuated;
  ``walker`` — a serial-parallel floating-base biped (:mod:`.legs`);
* ``stewart`` — a 6-UPS Stewart platform with closed-form leg lengths;
  ``delta`` — a delta robot whose parallelogram forearms hold the platform
  level, with closed-form arm angles (:mod:`.parallel`);
* ``all_joints`` — a 1-DoF linkage with every joint kind; ``chain_6r6p`` — a
  serial chain of 6 revolute and 6 prismatic actuators (:mod:`.validation`,
  the paper's Fig. 6).
"""

from collections.abc import Callable

from ..errors import MechanismError, did_you_mean
from ..model.mechanism import Mechanism
from .arms import boxer
from .legs import dancer, walker
from .parallel import delta, stewart
from .planar import fourbar, slider_crank, two_link_arm
from .validation import all_joints, chain_6r6p

REFERENCE_MECHANISMS: dict[str, Callable[[], Mechanism]] = {
    "fourbar": fourbar,
    "slider_crank": slider_crank,
    "two_link_arm": two_link_arm,
    "boxer": boxer,
    "dancer": dancer,
    "walker": walker,
    "stewart": stewart,
    "delta": delta,
    "all_joints": all_joints,
    "chain_6r6p": chain_6r6p,
}

NAMES = tuple(REFERENCE_MECHANISMS)


def build(name: str) -> Mechanism:
    """Build the reference mechanism ``name``."""
    try:
        return REFERENCE_MECHANISMS[name]()
    except KeyError:
        message = did_you_mean("reference mechanism", name, REFERENCE_MECHANISMS)
        raise MechanismError(message) from None
