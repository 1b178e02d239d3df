"""Sound that travels with a clip, started together with the motion from one clock.

A clip's sound is a :class:`SoundReference`: a sound file and its offset, the clip time [s]
at which the sound's first sample plays (a Blender sound strip's start, or ``--audio-offset``);
the curves JSON records it (``"audio"``, :mod:`looprig.core.export.curves_json`).

:class:`SoundClock` plays a sound on an output device with ``sounddevice`` and *is* the
playback clock: :meth:`SoundClock.now` is the device's own time (PortAudio's stream time)
since the DAC time of the sound's first sample, so a player that sends frame ``f`` when
``now() >= f / rate`` starts motion and sound together and keeps them together however the
device's clock runs against the computer's. The sound is laid on the clip's timeline first
(:func:`aligned`): silence before a late sound, the head of an early one cut.

:func:`drift_warnings` says when a retimed clip (:mod:`looprig.core.tracks.retime`: its stretches'
old and new times) would pull a sound that is not pinned out of sync with the motion.

Why ``sounddevice`` and ``soundfile`` (the ``audio`` extra): both are the thin, maintained
Python bindings of the reference C libraries (PortAudio, libsndfile) that every platform
has; sounddevice's callback gives each buffer's DAC time on the device's clock, which is
exactly what starting motion with the sound needs. They need the PortAudio and libsndfile
shared libraries (soundfile's wheels bundle libsndfile; on Debian ``apt-get install
libportaudio2``, which ``make test`` does).
"""

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core import LooprigError

#: The default output buffer [samples] at 48 kHz: 10 ms, the sync the tests hold.
BLOCKSIZE = 480


class AudioError(LooprigError):
    """A sound that cannot be read or played (one line: the file or device, the problem)."""


@dataclass(frozen=True)
class SoundReference:
    """A clip's sound: ``path`` of the sound file and ``offset_s`` [s], the clip time at which
    its first sample plays (negative: the sound starts before the clip)."""

    path: str
    offset_s: float = 0.0

    def to_dict(self) -> dict:
        return {"path": self.path, "offset_s": float(self.offset_s)}

    @classmethod
    def from_dict(cls, doc, what: str = "audio") -> "SoundReference":
        """From a curves JSON's ``audio`` entry, checked (one-line AudioError naming ``what``)."""
        from .core.errors import CurvesError
        from .core.export.curves_json import audio_from_dict

        try:
            return cls(**audio_from_dict(doc, what))
        except CurvesError as error:
            raise AudioError(str(error)) from None

    @classmethod
    def of_curves_file(cls, path) -> "SoundReference | None":
        """The sound a curves JSON records (None without one, or for another file type); a
        relative path is taken from the curves file's folder."""
        from .core.errors import CurvesError
        from .core.export.curves_json import read_audio

        if Path(path).suffix.lower() != ".json":
            return None
        try:
            audio = read_audio(path)
        except CurvesError as error:
            raise AudioError(str(error)) from None
        if audio is None:
            return None
        sound = Path(audio["path"])
        return cls(str(sound if sound.is_absolute() else Path(path).parent / sound), audio["offset_s"])


@dataclass(frozen=True)
class Sound:
    """Decoded samples (N, C) float32 in [-1, 1] at ``samplerate`` [Hz], from ``path``."""

    samples: np.ndarray
    samplerate: int
    path: str

    @property
    def duration(self) -> float:
        """[s]"""
        return len(self.samples) / self.samplerate


def read_sound(path) -> Sound:
    """The sound file at ``path`` (WAV, FLAC, OGG... what libsndfile reads); one-line AudioError."""
    try:
        import soundfile
    except ImportError:
        raise AudioError("sound needs the soundfile package (pip install 'looprig[audio]')") from None
    if not Path(path).is_file():
        raise AudioError(f"{path}: no such sound file")
    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as error:  # soundfile.LibsndfileError, RuntimeError: unreadable
        raise AudioError(f"{path}: not a sound file libsndfile reads ({error})") from None
    if len(samples) == 0:
        raise AudioError(f"{path}: the sound has no samples")
    return Sound(samples, int(rate), str(path))


def aligned(sound: Sound, offset_s: float, start_s: float = 0.0) -> np.ndarray:
    """(N', C) samples of ``sound`` laid on the clip's timeline from clip time ``start_s`` [s]:
    sample 0 plays at ``start_s``; the sound's first sample at clip time ``offset_s`` [s]
    (silence before it, or its head cut when it starts earlier)."""
    shift = round((offset_s - start_s) * sound.samplerate)
    if shift >= 0:
        return np.concatenate([np.zeros((shift, sound.samples.shape[1]), np.float32), sound.samples])
    return sound.samples[-shift:]


class SoundClock:
    """Plays ``samples`` (N, C) at ``samplerate`` [Hz] on ``device`` (a sounddevice device: index,
    name, or None for the default output) in buffers of ``blocksize`` samples; see the module
    docstring. :meth:`start` returns once the device has asked for the first buffer, whose
    first sample's DAC time is the clock's zero; :attr:`first_buffer` keeps what it played."""

    def __init__(self, samples: np.ndarray, samplerate: int, device=None, blocksize: int = BLOCKSIZE):
        try:
            import sounddevice
        except (ImportError, OSError) as error:  # OSError: the PortAudio library is missing
            raise AudioError(
                f"sound needs sounddevice and the PortAudio library ({error}); pip install 'looprig[audio]' "
                "and, on Debian, apt-get install libportaudio2"
            ) from None
        self.samples, self.samplerate, self.blocksize = (
            np.asarray(samples, np.float32),
            int(samplerate),
            blocksize,
        )
        self.first_dac: float | None = None
        self.first_buffer: np.ndarray | None = None
        self.underflows = 0
        self._position = 0
        self._started = threading.Event()
        try:
            self.stream = sounddevice.OutputStream(
                samplerate=self.samplerate,
                blocksize=blocksize,
                device=device,
                channels=self.samples.shape[1],
                dtype="float32",
                callback=self._callback,
            )
        except Exception as error:  # sounddevice.PortAudioError, ValueError: no such device
            raise AudioError(f"cannot open the sound output {device or '(default)'}: {error}") from None

    @property
    def buffer_s(self) -> float:
        """One buffer's duration [s]: the resolution of the sync."""
        return self.blocksize / self.samplerate

    def _callback(self, out, frames, time_info, status) -> None:
        if status.output_underflow:
            self.underflows += 1
        chunk = self.samples[self._position : self._position + frames]
        out[: len(chunk)] = chunk
        out[len(chunk) :] = 0.0
        if self.first_dac is None:
            self.first_dac, self.first_buffer = time_info.outputBufferDacTime, out.copy()
            self._started.set()
        self._position += frames

    def start(self, timeout: float = 2.0) -> None:
        """Start the device; return once its first buffer is on the way (AudioError if the
        device never asks for one within ``timeout`` [s])."""
        self.stream.start()
        if not self._started.wait(timeout):
            self.close()
            raise AudioError(f"the sound output did not start within {timeout:g} s")

    def now(self) -> float:
        """[s] the device's time since the first sample left (negative before it)."""
        return self.stream.time - self.first_dac

    def wait_until(self, t: float) -> None:
        """Sleep until :meth:`now` reaches ``t`` [s]."""
        while (left := t - self.now()) > 0:
            time.sleep(min(left, 0.05))

    @property
    def done(self) -> bool:
        """Whether every sample has been handed to the device."""
        return self._position >= len(self.samples)

    def close(self) -> None:
        self.stream.abort()
        self.stream.close()


def sound_drift(stretches: Sequence, sound: SoundReference, duration_s: float) -> tuple[float, float]:
    """(largest drift [s], clip time [s] where) of a sound started at the retimed time of its
    offset and played at its own speed, against a clip retimed by ``stretches`` (each with
    ``start``, ``end``, ``new_start``, ``new_end`` [s], :class:`looprig.core.tracks.retime.Stretch`):
    the motion's clip time t plays at N(t), the sound's at N(offset) + t - offset. Checked at
    the stretch ends within the sound's span [offset, offset + duration_s]."""
    old = np.array([stretches[0].start] + [s.end for s in stretches])
    new = np.array([stretches[0].new_start] + [s.new_end for s in stretches])
    span = (sound.offset_s, sound.offset_s + duration_s)
    points = np.unique(np.clip(np.r_[span, old], old[0], old[-1]))
    points = points[(points >= span[0] - 1e-12) & (points <= span[1] + 1e-12)]
    if points.size == 0:
        return 0.0, float(span[0])
    start = float(np.interp(sound.offset_s, old, new))
    drift = np.interp(points, old, new) - start - (points - sound.offset_s)
    k = int(np.argmax(np.abs(drift)))
    return float(drift[k]), float(points[k])


def drift_warnings(
    stretches: Sequence, sounds: Sequence[tuple[SoundReference, float]], tolerance_s: float
) -> list[str]:
    """One line per sound (``sounds``: (reference, duration [s])) that the retiming would pull
    more than ``tolerance_s`` [s] (e.g. one frame) out of sync at a stretch end. A sound whose
    beats are pinned does not drift there (a pin keeps its time and the stretches between pins
    keep their durations); an unpinned stretch that grows or a sound starting inside a
    stretched part does."""
    lines = []
    for sound, duration in sounds:
        drift, at = sound_drift(stretches, sound, duration)
        if abs(drift) > tolerance_s:
            lines.append(
                f"sound {sound.path}: the retimed motion drifts {drift:+.3f} s from it by clip time "
                f"{at:.3f} s; pin its beats (markers) or keep the clip's timing"
            )
    return lines


def clip_sound(path, offset_s, curves_path, start_s: float, device=None) -> tuple[SoundClock, SoundReference]:
    """``looprig play --audio``: the sound file ``path`` laid on the clip's timeline from its
    first frame's time ``start_s`` [s], ready to start. ``offset_s`` [s] None: the offset the
    curves file records for a sound of the same name, else 0. ``device``: a sounddevice device
    (an index given as digits, or a name)."""
    if offset_s is None:
        recorded = SoundReference.of_curves_file(curves_path)
        same = recorded is not None and Path(recorded.path).name == Path(path).name
        offset_s = recorded.offset_s if same else 0.0
    reference = SoundReference(str(path), float(offset_s))
    sound = read_sound(path)
    if isinstance(device, str) and device.isdecimal():
        device = int(device)
    return SoundClock(aligned(sound, reference.offset_s, start_s), sound.samplerate, device), reference
