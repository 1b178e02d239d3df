"""Error messages read as English: the plurals of :func:`did_you_mean` (issue 25, item 5)."""

import pytest
from looprig.core.errors import TargetError, did_you_mean, plural_of
from looprig.core.retarget.mapping import RetargetMapping


@pytest.mark.parametrize(
    ("noun", "plural"),
    [
        ("mapping key", "mapping keys"),
        ("body", "bodies"),
        ("quantity", "quantities"),
        ("reference mechanism", "reference mechanisms"),
        ("Dynamixel mode", "Dynamixel modes"),
        ("axis", "axes"),
        ("mesh", "meshes"),
        ("class", "classes"),
        ("relay", "relays"),
    ],
)
def test_plural_of_the_last_word(noun, plural):
    assert plural_of(noun) == plural


def test_unknown_mapping_key_lists_the_mapping_keys():
    """The message a user got on d29a55b: "mapping keies are: ..."."""
    with pytest.raises(TargetError) as caught:
        RetargetMapping.from_dict({"targets": [], "look_at": []}, "shot.map.json")
    message = str(caught.value)
    assert message.startswith("shot.map.json: no mapping key 'look_at'; mapping keys are: ")
    assert "keies" not in message and "acceleration_weight" in message


def test_did_you_mean_takes_an_explicit_plural():
    assert did_you_mean("frame or body", "x", ["b", "a"], "frames and bodies") == (
        "no frame or body 'x'; frames and bodies are: a, b"
    )
    assert did_you_mean("actuator", "x", []) == "no actuator 'x'; actuators are: (none)"
