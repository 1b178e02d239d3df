"""Settings of a retarget, defined once: names, defaults, units, ranges, help.

:class:`RetargetSettings` is the schema: every field carries a :class:`Setting`
in its metadata. The mapping file reader, the command line and the Blender
properties reflect :data:`RETARGET_SETTINGS` instead of copying names and
ranges, and every value is checked by :meth:`Setting.check` with the setting's
name in the message.
"""

import dataclasses
import functools
import math
from dataclasses import dataclass

from ..errors import LooprigError, did_you_mean
from ..terms import Regularization, velocity_threshold


class SettingsError(LooprigError, ValueError):
    """A setting is missing its type, not finite, or out of range."""


@dataclass(frozen=True)
class Setting:
    """One tunable setting; ``name`` is the mapping-file key, the CLI flag
    (``--state-weight``) and the Blender property."""

    name: str
    default: object
    unit: str
    help: str
    kind: type = float
    minimum: float | None = None  # inclusive unless exclusive_minimum
    maximum: float | None = None  # inclusive
    exclusive_minimum: bool = False
    optional: bool = False  # None allowed
    choices: tuple[str, ...] = ()  # the valid values of a str setting

    @property
    def range_text(self) -> str:
        """The valid range in words, e.g. ``> 0 Hz`` or ``0..1``."""
        unit = f" {self.unit}" if self.unit else ""
        if self.kind is str:
            return "one of " + ", ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        if self.minimum is not None and self.maximum is not None:
            return f"{self.minimum:g}..{self.maximum:g}{unit}"
        if self.minimum is not None:
            return f"{'>' if self.exclusive_minimum else '>='} {self.minimum:g}{unit}"
        return f"a finite number{unit}"

    def check(self, value, source: str = "settings"):
        """``value`` as ``kind``, or :class:`SettingsError` naming ``source`` and the setting."""
        where = f"{source}: setting {self.name!r}"
        if value is None:
            if self.optional:
                return None
            raise SettingsError(f"{where} must be set ({self.range_text})")
        if self.kind is str:
            if value not in self.choices:
                raise SettingsError(f"{where} must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        if self.kind is bool:
            if not isinstance(value, bool):
                raise SettingsError(f"{where} must be true or false, got {value!r}")
            return value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingsError(f"{where} must be a number ({self.range_text}), got {value!r}")
        if self.kind is int and value != int(value):
            raise SettingsError(f"{where} must be a whole number, got {value!r}")
        value = self.kind(value) if math.isfinite(value) else float(value)
        too_low = self.minimum is not None and (
            value <= self.minimum if self.exclusive_minimum else value < self.minimum
        )
        too_high = self.maximum is not None and value > self.maximum
        if not math.isfinite(value) or too_low or too_high:
            raise SettingsError(f"{where} must be {self.range_text}, got {value!r}")
        return value


def _setting(default, unit: str, help: str, **limits):
    """A dataclass field whose metadata is its :class:`Setting` (named later)."""
    return dataclasses.field(
        default=default, metadata={"setting": Setting("", default, unit, help, **limits)}
    )


def _choice(choices: tuple[str, ...], help: str):
    """A :func:`_setting` that is one of the words ``choices``, the first by default."""
    return _setting(choices[0], "", help, kind=str, choices=choices)


def _flag(default: bool, help: str):
    """A :func:`_setting` that is true or false."""
    return _setting(default, "", help, kind=bool)


@dataclass(frozen=True, kw_only=True)
class RetargetSettings:
    """Solver and regularization settings of a retarget (see ``docs/retarget.md``).

    Validated on construction; :data:`RETARGET_SETTINGS` lists them in order.
    """

    rate: float = _setting(
        1200.0, "Hz", "solve rate; the clip is resampled to it", minimum=0.0, exclusive_minimum=True
    )
    state_weight: float = _setting(
        1e-4,
        "",
        "weight of the minimal-motion metric (exact mode: relative, resolves redundancy only) "
        "or of the pull towards the previous frame (paper mode: absolute)",
        minimum=0.0,
    )
    state_mode: str = _choice(
        ("exact", "paper"),
        "exact: reachable targets met exactly, motors no target moves hold still; "
        "paper: the paper's absolute state regularizer, which biases targets",
    )
    auto_hold: bool = _flag(
        True,
        "hold motors the clip does not need at their start values: those no target depends on, "
        "and redundant ones whose holding keeps every target met (docs/retarget.md)",
    )
    whole_clip: bool = _flag(
        True,
        "solve all frames together (faster; the acceleration cost and the paper's state "
        "regularizer still solve one by one) instead of one by one",
    )
    velocity_weight: float = _setting(
        0.0, "", "weight of the body angular-velocity barrier (paper eq. 4-5)", minimum=0.0
    )
    max_angular_velocity: float | None = _setting(
        None,
        "rad/s",
        "body angular velocity above which the velocity barrier acts (unset: no barrier)",
        minimum=0.0,
        exclusive_minimum=True,
        optional=True,
    )
    limit_mode: str = _choice(
        ("hold", "report"),
        "hold: a clip that breaks a declared motor limit (range, speed, acceleration) is "
        "solved again as a whole with every limit a hard constraint, changed only where a "
        "limit binds; report: the exact answer, with the limits it breaks listed",
    )
    cyclic: bool = _flag(
        False,
        "the clip is played in a loop, its first frame one period after its last: with "
        "limit_mode hold every motor limit holds across that seam too "
        "(check it with looprig check --cyclic)",
    )
    timing: str = _choice(
        ("keep", "stretch"),
        "keep: the clip's timing kept, the path deviating where a limit binds (limit_mode); "
        "stretch: time stretched where a speed or acceleration limit binds, pinned frames kept at "
        "their times (looprig.retime, the retime extra: toppra)",
    )
    actuator_weight: float = _setting(
        0.0, "", "weight of the soft barriers on each motor's range and speed", minimum=0.0
    )
    acceleration_weight: float = _setting(
        0.0, "", "weight of the smoothness cost on motor accelerations", minimum=0.0
    )
    limit_fraction: float = _setting(
        0.9,
        "",
        "fraction of each motor's speed limit where the soft speed barrier starts",
        minimum=0.0,
        maximum=1.0,
        exclusive_minimum=True,
    )
    position_margin: float = _setting(
        0.05,
        "rad | m",
        "distance from a motor's range ends where its barrier starts",
        minimum=0.0,
        exclusive_minimum=True,
    )
    reach_tolerance: float = _setting(
        1e-4,
        "m",
        "a frame whose position error exceeds it is flagged unreachable",
        minimum=0.0,
        maximum=1.0,
        exclusive_minimum=True,
    )

    def __post_init__(self):
        for s in _settings_of(type(self)):
            object.__setattr__(self, s.name, s.check(getattr(self, s.name), type(self).__name__))

    def settings(self) -> dict:
        """The settings as a plain dict, in schema order."""
        return {s.name: getattr(self, s.name) for s in RETARGET_SETTINGS}

    def regularization(self) -> Regularization:
        """The regularizer weights these settings define for the IK."""
        body_barrier = self.max_angular_velocity is not None and self.velocity_weight > 0.0
        return Regularization(
            state_weight=self.state_weight,
            state_mode=self.state_mode,
            velocity_weight=self.velocity_weight if body_barrier else 0.0,
            velocity_threshold=velocity_threshold(self.max_angular_velocity, self.rate)
            if body_barrier
            else 1.0,
            actuator_weight=self.actuator_weight,
            acceleration_weight=self.acceleration_weight,
            limit_fraction=self.limit_fraction,
            position_margin=self.position_margin,
            rate=self.rate,
        )


@functools.cache
def _settings_of(cls) -> tuple[Setting, ...]:
    return tuple(
        dataclasses.replace(f.metadata["setting"], name=f.name)
        for f in dataclasses.fields(cls)
        if "setting" in f.metadata
    )


#: Every setting of a retarget, in display order.
RETARGET_SETTINGS: tuple[Setting, ...] = _settings_of(RetargetSettings)
_BY_NAME = {s.name: s for s in RETARGET_SETTINGS}


def setting(name: str) -> Setting:
    """The :class:`Setting` called ``name``."""
    if name not in _BY_NAME:
        raise SettingsError(did_you_mean("setting", name, _BY_NAME))
    return _BY_NAME[name]
