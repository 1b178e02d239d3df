"""Emulated ``maya.standalone`` (tests only; not Maya): records initialisation, switches to batch mode."""

from . import _scene


def initialize(name="python"):
    state = _scene.session()
    state.calls["standalone.initialize"] += 1
    state.standalone = True
    state.batch = True


def uninitialize():
    state = _scene.session()
    state.calls["standalone.uninitialize"] += 1
    state.standalone = False
