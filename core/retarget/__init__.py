"""Retargeting: a clip of tracked frames + a mapping -> robot motion and motor curves (:func:`retarget`)."""

from ..tracks.samples import TrackSamples
from .mapping import AimSpec, ComSpec, RetargetMapping, SupportPhase, TargetSpec
from .pipeline import RetargetCancelled, RetargetResult, build_problem, retarget, with_motors

__all__ = [
    "AimSpec",
    "ComSpec",
    "RetargetCancelled",
    "RetargetMapping",
    "RetargetResult",
    "SupportPhase",
    "TargetSpec",
    "TrackSamples",
    "build_problem",
    "retarget",
    "with_motors",
]
