"""Emulated ``maya.utils`` (tests only; not Maya): deferred calls wait until a test runs them."""

from . import _scene


def executeDeferred(function, *args, **kwargs):
    """Queue ``function``; :func:`maya._scene.run_deferred` plays the queue (Maya: when idle)."""
    _scene.session().calls["utils.executeDeferred"] += 1
    _scene.session().deferred.append((function, args, kwargs))
