"""A small Dynamixel Protocol 2.0 bus emulator on a pseudo-terminal, for ``looprig play`` tests.

What it emulates
* A bus of X-series servos (the control-table addresses looprig uses: Model
  Number(0), ID(7), Operating Mode(11), Max/Min Position Limit(48/52), Torque
  Enable(64), Hardware Error Status(70), Goal Position(116), Present
  Position(132)) behind the slave end of ``os.openpty()``; the real
  ``dynamixel-sdk`` opens the slave's path as a serial port.
* Protocol 2.0 framing: header ``FF FF FD 00``, little-endian length, byte
  stuffing (``FF FF FD`` -> ``FF FF FD FD``) both ways, and the CRC-16 (polynomial
  0x8005), computed here independently of the SDK and checked on every packet
  received: a bad CRC is logged and answered with a CRC error (0x03), as a servo does.
* Instructions PING (0x01), READ (0x02), WRITE (0x03), SYNC READ (0x82) and SYNC
  WRITE (0x83); status packets (0x55) with the error byte (access error 0x07 for an
  EEPROM write with the torque on, data range error 0x04 for a goal outside the
  position limits; a sync write's out-of-range goal is ignored).
* Motion: with the torque on, Present Position follows Goal Position as a
  first-order lag, ``p(t) = g + (p(t0) - g) exp(-(t - t0) / tau)`` from the time
  ``t0`` the goal was written, ``tau`` = :attr:`EmulatedBus.tau` (default 20 ms);
  with the torque off it stays where it is.

What it does not emulate
* Electrical timing (baud rate, return delay, USB latency), collisions, noise or
  bytes lost; velocity, current and PWM limits, profiles, load or gravity; any
  other instruction (bulk, reboot, factory reset, fast sync read) or address;
  indirect addresses; Protocol 1.0.

The bus runs in a child process (so the SDK's busy polling in the test process
cannot starve it); :meth:`EmulatedBus.snapshot` returns its packet log (with
the goals each sync write set and the present positions each sync read
answered) and servo state; :meth:`EmulatedBus.unplug` pulls the cable mid-stream.
"""

import math
import multiprocessing
import os
import select
import struct
import time
import tty
from dataclasses import dataclass

HEADER = bytes([0xFF, 0xFF, 0xFD, 0x00])
PING, READ, WRITE, SYNC_READ, SYNC_WRITE, STATUS = 0x01, 0x02, 0x03, 0x82, 0x83, 0x55
BROADCAST = 0xFE
ERR_CRC, ERR_RANGE, ERR_ACCESS, ERR_INSTRUCTION = 0x03, 0x04, 0x07, 0x02
MODEL_NUMBER, ID, OPERATING_MODE, MAX_POSITION, MIN_POSITION = 0, 7, 11, 48, 52
TORQUE_ENABLE, HARDWARE_ERROR, GOAL_POSITION, PRESENT_POSITION = 64, 70, 116, 132


def crc16(data: bytes) -> int:
    """CRC-16 of Dynamixel Protocol 2.0 (polynomial 0x8005, initial 0, not reflected)."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def stuff(body: bytes) -> bytes:
    """Insert 0xFD after every FF FF FD in an instruction/status body."""
    out = bytearray()
    for byte in body:
        out.append(byte)
        if out[-3:] == b"\xff\xff\xfd":
            out.append(0xFD)
    return bytes(out)


def unstuff(body: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(body):
        out.append(body[i])
        if out[-3:] == b"\xff\xff\xfd" and i + 1 < len(body) and body[i + 1] == 0xFD:
            i += 1
        i += 1
    return bytes(out)


def packet(dxl_id: int, instruction: int, params: bytes) -> bytes:
    """A complete Protocol 2.0 packet with stuffing and CRC."""
    body = stuff(bytes([instruction]) + params)
    head = HEADER + bytes([dxl_id]) + struct.pack("<H", len(body) + 2)
    frame = head + body
    return frame + struct.pack("<H", crc16(frame))


@dataclass
class Servo:
    """One emulated X-series servo: its id, model number, operating mode, start position [ticks]."""

    dxl_id: int
    model: int = 1020  # XM430-W350
    mode: int = 3
    position: int = 2048
    min_position: int = 0
    max_position: int = 4095


class _ServoState:
    def __init__(self, spec: Servo, tau: float):
        self.table = bytearray(1024)
        struct.pack_into("<H", self.table, MODEL_NUMBER, spec.model)
        self.table[6], self.table[ID], self.table[OPERATING_MODE] = 48, spec.dxl_id, spec.mode
        struct.pack_into("<i", self.table, MAX_POSITION, spec.max_position)
        struct.pack_into("<i", self.table, MIN_POSITION, spec.min_position)
        struct.pack_into("<i", self.table, GOAL_POSITION, spec.position)
        self.tau, self.present, self.t0, self.p0 = (
            tau,
            float(spec.position),
            time.monotonic(),
            float(spec.position),
        )

    def goal(self) -> int:
        return struct.unpack_from("<i", self.table, GOAL_POSITION)[0]

    def update(self) -> None:
        now = time.monotonic()
        if self.table[TORQUE_ENABLE]:
            self.present = self.goal() + (self.p0 - self.goal()) * math.exp(-(now - self.t0) / self.tau)
        self.t0, self.p0 = now, self.present
        struct.pack_into("<i", self.table, PRESENT_POSITION, round(self.present))

    def read(self, address: int, length: int) -> bytes:
        self.update()
        return bytes(self.table[address : address + length])

    def write(self, address: int, data: bytes) -> int:
        """Apply a write; returns the error byte."""
        self.update()
        if address < TORQUE_ENABLE and self.table[TORQUE_ENABLE]:
            return ERR_ACCESS
        if address == GOAL_POSITION and len(data) == 4 and self.table[OPERATING_MODE] == 3:
            lo, hi = (struct.unpack_from("<i", self.table, a)[0] for a in (MIN_POSITION, MAX_POSITION))
            if not lo <= struct.unpack("<i", data)[0] <= hi:
                return ERR_RANGE
        self.table[address : address + len(data)] = data
        return 0


def _serve(master: int, servos, tau: float, control) -> None:
    """The child process: answer packets on ``master`` until ``control`` says stop."""
    state = {s.dxl_id: _ServoState(s, tau) for s in servos}
    log, buffer = [], bytearray()

    def reply(dxl_id, error=0, params=b""):
        os.write(master, packet(dxl_id, STATUS, bytes([error]) + params))

    while True:
        ready, _, _ = select.select([master, control], [], [])
        if control in ready and master not in ready:  # packets already sent are answered first
            request = control.recv()
            if request == "stop":
                return
            if request == "unplug":  # the cable pulled: the port end closes, nothing answers
                os.close(master)
                control.send(log)
                return
            for s in state.values():
                s.update()
            control.send(
                {
                    "packets": log,
                    "servos": {
                        i: {
                            "torque": s.table[TORQUE_ENABLE],
                            "goal": s.goal(),
                            "present": s.present,
                            "mode": s.table[OPERATING_MODE],
                        }
                        for i, s in state.items()
                    },
                }
            )
            continue
        try:
            buffer += os.read(master, 4096)
        except OSError:  # the slave side closed and reopened
            time.sleep(0.001)
            continue
        while True:
            start = buffer.find(HEADER)
            if start < 0 or len(buffer) < start + 7:
                break
            del buffer[:start]
            length = struct.unpack_from("<H", buffer, 5)[0]
            if len(buffer) < 7 + length:
                break
            frame, buffer[:] = bytes(buffer[: 7 + length]), buffer[7 + length :]
            crc_ok = crc16(frame[:-2]) == struct.unpack_from("<H", frame, len(frame) - 2)[0]
            dxl_id, body = frame[4], unstuff(frame[7:-2])
            instruction, params = body[0], body[1:]
            entry = {"t": time.monotonic(), "id": dxl_id, "instruction": instruction, "crc_ok": crc_ok}
            log.append(entry)
            if not crc_ok:
                if dxl_id in state:
                    reply(dxl_id, ERR_CRC)
                continue
            if instruction == SYNC_WRITE:
                address, size = struct.unpack_from("<HH", params)
                written = {}
                for k in range(4, len(params), size + 1):
                    target, data = params[k], params[k + 1 : k + 1 + size]
                    if target in state:
                        state[target].write(address, data)
                        written[target] = list(data)
                if address == GOAL_POSITION and size == 4:
                    entry["goals"] = {i: struct.unpack("<i", bytes(d))[0] for i, d in written.items()}
                else:
                    entry["sync_write"] = (address, written)
            elif instruction == SYNC_READ:
                address, size = struct.unpack_from("<HH", params)
                answered = {}
                for target in params[4:]:
                    if target in state:
                        data = state[target].read(address, size)
                        reply(target, 0, data)
                        answered[target] = data
                if address == PRESENT_POSITION and size == 4:
                    entry["present"] = {i: struct.unpack("<i", d)[0] for i, d in answered.items()}
            elif dxl_id in state:
                servo = state[dxl_id]
                if instruction == PING:
                    reply(dxl_id, 0, servo.read(MODEL_NUMBER, 2) + bytes([servo.table[6]]))
                elif instruction == READ:
                    address, size = struct.unpack_from("<HH", params)
                    reply(dxl_id, 0, servo.read(address, size))
                elif instruction == WRITE:
                    address = struct.unpack_from("<H", params)[0]
                    entry["write"] = (address, list(params[2:]))
                    reply(dxl_id, servo.write(address, params[2:]))
                else:
                    reply(dxl_id, ERR_INSTRUCTION)


class EmulatedBus:
    """Servos on a pseudo-terminal: ``port`` is the path to open; use as a context manager."""

    def __init__(self, servos, tau: float = 0.02):
        self.tau = tau
        self._unplugged = None
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)  # bytes pass untouched (no echo, no newline translation)
        self.port = os.ttyname(self._slave)
        context = multiprocessing.get_context("fork")
        self._control, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(self.master, list(servos), tau, child), daemon=True
        )
        self._process.start()

    def snapshot(self) -> dict:
        """{"packets": [{t, id, instruction, crc_ok, goals?, sync_write?, write?, present?}...],
        "servos": {id: state}}: ``goals`` the Goal Position ticks of a sync write, ``sync_write``
        (address, {id: bytes}) of any other sync write, ``present`` the Present Position ticks a
        sync read of it answered, by servo id; ``t`` [s] ``time.monotonic()`` when it arrived."""
        if self._unplugged is not None:
            return self._unplugged
        self._control.send("snapshot")
        return self._control.recv()

    def unplug(self) -> list:
        """Pull the cable: the bus stops and the pseudo-terminal's master end closes, so the
        port's reads and writes fail (EIO) as a vanished USB adapter's do. Returns the packet
        log up to then (later snapshots return it too)."""
        self._control.send("unplug")
        self._unplugged = {"packets": self._control.recv(), "servos": {}}
        self._process.join(5)
        os.close(self.master)
        return self._unplugged["packets"]

    def close(self) -> None:
        if self._unplugged is None:
            self._control.send("stop")
            self._process.join(5)
            os.close(self.master)
        os.close(self._slave)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
