"""The settings schema: one definition, checked in one place, reflected everywhere."""

import json
import math

import numpy as np
import pytest
from looprig.core.errors import TargetError
from looprig.core.library import build
from looprig.core.retarget import RetargetMapping, TargetSpec, TrackSamples, retarget
from looprig.core.retarget.settings import RETARGET_SETTINGS, RetargetSettings, SettingsError, setting

MAPPING = {"targets": [{"track": "hand", "frame": "tip"}]}


def test_every_setting_has_a_unit_help_and_a_valid_default():
    for s in RETARGET_SETTINGS:
        assert s.help and s.name.isidentifier()
        assert s.check(s.default, "default") == s.default
    assert RetargetSettings().settings() == {s.name: s.default for s in RETARGET_SETTINGS}
    assert {s.name for s in RETARGET_SETTINGS} <= set(RetargetMapping.__dataclass_fields__)


@pytest.mark.parametrize("s", RETARGET_SETTINGS, ids=lambda s: s.name)
def test_every_setting_rejects_non_finite_and_out_of_range_values(s, tmp_path):
    bad = {str: ["fast", 1.0, None], bool: ["yes", 1, None]}.get(
        s.kind, [math.nan, math.inf, -math.inf, "1", True]
    )
    if s.minimum is not None:
        bad.append(s.minimum - 1.0)
        if s.exclusive_minimum:
            bad.append(s.minimum)
    if s.maximum is not None:
        bad.append(s.maximum * 2 + 1)
    for value in bad:
        path = tmp_path / "m.json"
        path.write_text(json.dumps({**MAPPING, s.name: value}))
        with pytest.raises(SettingsError, match=rf"m\.json: setting '{s.name}' must be"):
            RetargetMapping.load(path)
        with pytest.raises(SettingsError, match=s.name):
            RetargetSettings(**{s.name: value})


def test_mapping_errors_name_the_file_and_the_problem(tmp_path):
    cases = {
        '{"targets": ["pelvis"]}': r"target 0 must be a JSON object",
        '{"targets": "pelvis"}': r"targets must be a list",
        '{"targets": [], "rat": 60}': r"no mapping key 'rat'",
        '{"targets": [{"track": "a", "frame": "b", "offset_position": [0, 0, Infinity]}]}': "offset_pos",
        '{"targets": [{"track": "a", "frame": "b", "position_weight": [1, -1, 1]}]}': r"position_weight",
        "[1, 2]": r"a mapping is a JSON object",
    }
    for text, message in cases.items():
        path = tmp_path / "bad.json"
        path.write_text(text)
        with pytest.raises(TargetError, match=message):
            RetargetMapping.load(path)
    path.write_bytes(b'{"targets": [\xff]}')
    with pytest.raises(TargetError, match=r"bad\.json: cannot read mapping"):
        RetargetMapping.load(path)


def test_a_rate_that_leaves_one_frame_is_refused():
    m = build("two_link_arm")
    times = np.linspace(0.0, 4.0, 9)
    tip = m.frame("tip").position
    samples = TrackSamples(times, {"hand": np.tile(tip, (9, 1))}, {"hand": np.tile(np.eye(3), (9, 1, 1))})
    with pytest.raises(TargetError, match="leaves one frame"):
        retarget(m, samples, RetargetMapping((TargetSpec("hand", "tip"),), rate=0.1))


def test_unknown_setting_names_the_valid_ones():
    assert setting("rate").unit == "Hz"
    with pytest.raises(SettingsError, match=r"settings are: .*rate"):
        setting("rat")
