"""Retargeting: a clip of tracked frames + a mapping -> robot motion and motor curves
(:func:`retarget`: build, solve, report)."""

from ..tracks.samples import TrackSamples
from .mapping import AimSpec, ComSpec, RetargetMapping, SupportPhase, TargetSpec
from .pipeline import retarget
from .problem import build_problem, with_motors
from .report import RetargetResult
from .solve import RetargetCancelled

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
