"""Sound in sync (looprig/audio.py): a clip's sound on the clip's timeline, started with the
motion from the output device's clock, recorded in the curves JSON, and the drift a retiming
would cause.

The sync test plays on a real PortAudio device that keeps real time without sound hardware:
a JACK server with its dummy driver (``jackd -d dummy``, 48 kHz, 480-sample periods: a
10 ms buffer), which ``make test`` installs (Debian's jackd2 and libportaudio2); PortAudio
reaches it through its JACK host API. ALSA's null device is no clock (it takes any number
of samples at once), so it is not used.
"""

import math
import os
import shutil
import subprocess
import time

import numpy as np
import pytest
from dxl_emulator import EmulatedBus, Servo
from looprig.core.curves.actuator_curves import ActuatorCurves
from looprig.core.export import write_csv, write_dynamixel_json, write_json
from looprig.core.tracks.retime import Stretch

from looprig import audio, play
from looprig.cli import main

soundfile = pytest.importorskip("soundfile")

SAMPLERATE, BLOCK = 48000, 480  # the JACK dummy device: 10 ms periods
RATE = 50.0  # motion frames per second


@pytest.fixture(scope="module")
def jack_device():
    """A JACK server on the dummy driver, private to this process; yields PortAudio's device
    index for it. Skips where jackd or PortAudio is not installed."""
    if shutil.which("jackd") is None:
        pytest.skip("jackd is not installed (make test installs jackd2)")
    try:
        import sounddevice
    except OSError as error:
        pytest.skip(f"PortAudio is not installed ({error})")
    name = f"looprig-test-{os.getpid()}"
    server = subprocess.Popen(
        ["jackd", "--no-realtime", "-n", name, "-d", "dummy", "-r", str(SAMPLERATE), "-p", str(BLOCK)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = {k: os.environ.get(k) for k in ("JACK_DEFAULT_SERVER", "JACK_NO_START_SERVER")}
    os.environ["JACK_DEFAULT_SERVER"], os.environ["JACK_NO_START_SERVER"] = name, "1"
    device = None
    try:
        deadline = time.monotonic() + 10.0
        while device is None and time.monotonic() < deadline:
            time.sleep(0.2)
            sounddevice._terminate()  # PortAudio finds host APIs when it starts: look again
            sounddevice._initialize()
            apis = [a for a in sounddevice.query_hostapis() if "JACK" in a["name"]]
            if apis and apis[0]["default_output_device"] >= 0:
                device = apis[0]["default_output_device"]
        if device is None:
            pytest.skip("the JACK dummy server did not come up")
        yield device
    finally:
        sounddevice._terminate()  # leave the JACK server before it stops (PortAudio asserts otherwise)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.terminate()
        server.wait(10)
        sounddevice._initialize()


def tone(path, seconds=1.0, frequency=440.0) -> np.ndarray:
    """A 440 Hz sine at SAMPLERATE written to ``path`` (float WAV); returns its samples."""
    t = np.arange(round(seconds * SAMPLERATE)) / SAMPLERATE
    samples = (0.5 * np.sin(2 * np.pi * frequency * t)).astype(np.float32)
    soundfile.write(str(path), samples, SAMPLERATE, subtype="FLOAT")
    return samples


def clip_file(tmp_path, seconds=1.0):
    t = np.arange(round(seconds * RATE) + 1) / RATE
    values = np.column_stack([0.3 * np.sin(np.pi * t), 0.2 * np.cos(np.pi * t)])
    curves = ActuatorCurves(t, values, ("hip", "knee"), velocity_limit=3.0, hardware_ids=(1, 2))
    path = tmp_path / "clip.dynamixel.json"
    write_dynamixel_json(curves, path)
    return path


def test_the_first_tone_sample_and_the_first_motion_packet_leave_within_one_buffer(tmp_path, jack_device):
    """On the device's clock (JACK's frame time), the first motion packet leaves at most one
    audio buffer (480 samples at 48 kHz: 10 ms) after the DAC time of the tone's first
    sample, and not before it; the first buffer played is the tone's first 480 samples."""
    samples = tone(tmp_path / "tone.wav")
    sound = audio.read_sound(tmp_path / "tone.wav")
    plan = play.load_plan(clip_file(tmp_path))
    clock = audio.SoundClock(audio.aligned(sound, 0.0), sound.samplerate, jack_device, BLOCK)
    start = [Servo(k + 1, position=int(plan.ticks[0, k])) for k in range(2)]
    with EmulatedBus(start) as bus:
        report = play.play(plan, bus.port, settle=0.05, sound=clock)
    assert clock.buffer_s == pytest.approx(0.010)
    np.testing.assert_array_equal(clock.first_buffer[:, 0], samples[:BLOCK])
    assert 0.0 <= report.first_packet_s <= clock.buffer_s
    assert report.frames_sent == len(plan.ticks) and report.late_frames == 0


@pytest.mark.parametrize("live", [[], ["--live"]])
def test_play_audio_takes_the_offset_the_curves_file_records(tmp_path, jack_device, capsys, live):
    """A curves JSON whose sound starts 0.2 s into the clip: `play --audio` (no offset given)
    lays 0.2 s of silence before the tone; with --live the sound's clock plays the frames."""
    tone(tmp_path / "tone.wav")
    t = np.arange(round(0.6 * RATE) + 1) / RATE
    values = 0.1 * np.sin(np.pi * t)[:, None]
    curves = ActuatorCurves(t, values, ("hip",), velocity_limit=3.0, hardware_ids=(1,))
    path = tmp_path / "clip.json"
    write_json(curves, path, audio={"path": "tone.wav", "offset_s": 0.2})
    with EmulatedBus([Servo(1)]) as bus:
        code = main(
            ["play", str(path), "--port", bus.port, "--settle", "0.05", "--audio", str(tmp_path / "tone.wav")]
            + ["--audio-device", str(jack_device), *live]
        )
        goals = [p["goals"][1] for p in bus.snapshot()["packets"] if "goals" in p]
    out = capsys.readouterr().out
    assert code == 0
    if live:
        assert "every one within the limits" in out
        assert abs(goals[-1] - (2048 + round(0.1 * np.sin(0.6 * np.pi) * 4096 / (2 * np.pi)))) <= 1
    else:
        assert "sound tone.wav from clip time 0.200 s" in out and "first packet" in out


def test_a_sound_is_laid_on_the_clip_timeline():
    """A sound starting 0.25 s into the clip gets 0.25 s of silence before it; one starting
    0.25 s before the clip loses its first 0.25 s."""
    samples = np.arange(1.0, 48001.0, dtype=np.float32)[:, None]
    sound = audio.Sound(samples, SAMPLERATE, "ramp.wav")
    late = audio.aligned(sound, 0.25)
    assert len(late) == 12000 + 48000 and not late[:12000].any() and late[12000, 0] == 1.0
    early = audio.aligned(sound, -0.25)
    assert len(early) == 36000 and early[0, 0] == 12001.0
    np.testing.assert_array_equal(audio.aligned(sound, 1.0, start_s=1.0), samples)


def test_the_curves_json_carries_the_sound_and_refuses_a_bad_entry(tmp_path):
    t = np.arange(3) / RATE
    curves = ActuatorCurves(t, np.zeros((3, 1)), ("hip",))
    path = tmp_path / "clip.json"
    write_json(curves, path, audio={"path": "music/beat.wav", "offset_s": -0.5})
    reference = audio.SoundReference.of_curves_file(path)
    assert reference == audio.SoundReference(str(tmp_path / "music" / "beat.wav"), -0.5)
    write_json(curves, path)
    assert audio.SoundReference.of_curves_file(path) is None
    bad_entry = '"audio": {"path": "a.wav", "offset_s": "soon"},\n "violations"'
    path.write_text(path.read_text().replace('"violations"', bad_entry))
    with pytest.raises(audio.AudioError) as bad:
        audio.SoundReference.of_curves_file(path)
    assert str(path) in str(bad.value) and "offset_s" in str(bad.value) and "\n" not in str(bad.value)


def test_a_missing_or_unreadable_sound_is_one_line(tmp_path):
    with pytest.raises(audio.AudioError, match="no such sound file"):
        audio.read_sound(tmp_path / "none.wav")
    (tmp_path / "noise.wav").write_bytes(b"not a sound")
    with pytest.raises(audio.AudioError, match="not a sound file"):
        audio.read_sound(tmp_path / "noise.wav")


def retimed(*stretches) -> list[Stretch]:
    """Stretches (start, end, new_start, new_end, pinned) [s]."""
    return [Stretch(*s) for s in stretches]


def test_a_sound_drifts_where_an_unpinned_stretch_grows_and_not_over_pinned_ones():
    """Clip 0-4 s pinned at 2 s: the first stretch keeps its 2 s (pinned, sped up where it
    was slowed), the last one, unpinned, grows by half to 3 s. A sound over the whole clip
    drifts by N(4) - 4 = 5 - 4 = +1 s at its end; one over the first two seconds keeps in
    sync; one starting at 3 s drifts by (N(4) - N(3)) - 1 = (5 - 3.5) - 1 = +0.5 s."""
    stretches = retimed((0.0, 2.0, 0.0, 2.0, True), (2.0, 4.0, 2.0, 5.0, False))
    assert audio.sound_drift(stretches, audio.SoundReference("all.wav", 0.0), 4.0) == (1.0, 4.0)
    assert audio.sound_drift(stretches, audio.SoundReference("intro.wav", 0.0), 2.0)[0] == 0.0
    assert audio.sound_drift(stretches, audio.SoundReference("tail.wav", 3.0), 1.0) == (0.5, 4.0)
    sounds = [(audio.SoundReference(n, o), d) for n, o, d in (("all.wav", 0, 4), ("intro.wav", 0, 2))]
    lines = audio.drift_warnings(stretches, sounds, tolerance_s=1 / 24)
    assert len(lines) == 1 and lines[0].startswith("sound all.wav: the retimed motion drifts +1.000 s")
    assert math.isclose(audio.sound_drift(retimed((0.0, 4.0, 0.0, 4.0, True)), sounds[0][0], 4.0)[0], 0.0)


def test_export_records_a_sound_given_on_the_command_line(tmp_path, capsys):
    tone(tmp_path / "tone.wav", seconds=0.1)
    t = np.arange(3) / RATE
    source = tmp_path / "clip.csv"
    write_csv(ActuatorCurves(t, np.zeros((3, 1)), ("hip",)), source)
    out = tmp_path / "clip.json"
    command = [
        "export",
        str(source),
        "--format",
        "json",
        "-o",
        str(out),
        "--audio",
        str(tmp_path / "tone.wav"),
    ]
    assert main([*command, "--audio-offset", "-0.25"]) == 0
    assert audio.SoundReference.of_curves_file(out) == audio.SoundReference(str(tmp_path / "tone.wav"), -0.25)
    assert main([*command[:3], "csv", "-o", str(tmp_path / "c2.csv"), *command[6:]]) == 2
    assert "the sound is recorded by the json format, not csv" in capsys.readouterr().err
    (tmp_path / "bad.wav").write_bytes(b"no")
    assert main([*command[:-1], str(tmp_path / "bad.wav")]) == 2
    assert "not a sound file" in capsys.readouterr().err
