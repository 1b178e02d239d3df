"""``looprig info --map``: the motors and limits a retarget with a mapping uses, each
limit with its source; and the coupling kinds on the summary line."""

import json
from pathlib import Path

import pytest

from looprig.cli import main

pytest.importorskip("mujoco")

TODDLERBOT = Path(__file__).parent / "data" / "toddlerbot_2xc" / "toddlerbot_2xc.xml"
REACHY = (
    Path(__file__).resolve().parents[2] / "shared" / "models" / "reachy_mini" / "mjcf" / "reachy_mini.xml"
)


def test_toddlerbot_summary_line_names_its_gears_and_the_waist_differential(capsys):
    assert main(["info", str(TODDLERBOT)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("4 loops, 11 couplings (9 gear, 2 differential)"), first


@pytest.mark.skipif(not REACHY.exists(), reason="needs ../shared/models beside the clone")
def test_reachy_mini_with_a_mapping_naming_servos_shows_catalogue_and_mapping_sources(tmp_path, capsys):
    servo = {f"stewart_{k}": "xc330m288t" for k in range(1, 7)}
    servo |= {"yaw_body": "sts3215_345", "right_antenna": "sts3215_147", "left_antenna": "sts3215_147"}
    mapping = tmp_path / "map.json"
    mapping.write_text(
        json.dumps({"targets": [], "servo": servo, "motor_limits": {"yaw_body": {"velocity": 2.0}}})
    )
    assert main(["info", str(REACHY)]) == 0
    bare = capsys.readouterr().out
    assert main(["info", str(REACHY), "--map", str(mapping), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    sources = {a["name"]: a["limit_sources"]["velocity"] for a in summary["actuator_list"]}
    assert sources == {name: "mapping" if name == "yaw_body" else "catalogue" for name in servo}
    assert {a["name"]: a["velocity_limit"] for a in summary["actuator_list"]}["yaw_body"] == 2.0
    assert main(["info", str(REACHY), "--map", str(mapping)]) == 0
    text = capsys.readouterr().out
    assert "velocity limit none [none]" in bare and "velocity limit none" not in text
    assert "[catalogue (XC330-M288-T)]" in text and "2 [mapping]" in text


def test_an_unknown_motor_in_the_mapping_is_one_line(tmp_path, capsys):
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"targets": [], "servo": {"no_such_motor": "XC330-M288-T"}}))
    assert main(["info", str(TODDLERBOT), "--map", str(mapping)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "warning" not in line]
    assert len(errors) == 1 and "no_such_motor" in errors[0], errors
