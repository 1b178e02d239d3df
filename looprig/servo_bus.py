"""Dynamixel servos on one port (Protocol 2.0, ``dynamixel_sdk``): the bus, its retries and the
servo check before streaming; its errors are :class:`PlayError`."""

import struct
from collections.abc import Sequence

import numpy as np

from .core import LooprigError

#: Model Number(0) of X-series servos, which share the control table used here
#: (ROBOTIS e-manual, X-series model pages).
X_SERIES_MODELS = {
    1000: "XH430-W210",
    1010: "XH430-W350",
    1020: "XM430-W350",
    1030: "XM430-W210",
    1040: "XH430-V210",
    1050: "XH430-V350",
    1060: "XL430-W250",
    1070: "XC430-W150",
    1080: "XC430-W240",
    1090: "2XL430-W250",
    1100: "XH540-W270",
    1110: "XH540-W150",
    1120: "XM540-W270",
    1130: "XM540-W150",
    1190: "XL330-M077",
    1200: "XL330-M288",
    1210: "XC330-T181",
    1220: "XC330-T288",
    1230: "XC330-M181",
    1240: "XC330-M288",
}

#: Control-table addresses (X series): Operating Mode(11), Torque Enable(64), Goal and
#: Present Position(116, 132).
ADDR_OPERATING_MODE, ADDR_TORQUE_ENABLE = 11, 64
ADDR_GOAL_POSITION, ADDR_PRESENT_POSITION = 116, 132


class PlayError(LooprigError):
    """The servos could not be driven as asked (one line: which servo, what went wrong)."""


class DynamixelBus:
    """The servos of one port through ``dynamixel_sdk`` (Protocol 2.0); errors become :class:`PlayError`."""

    def __init__(self, port: str, baud: int, ids: Sequence[int]):
        try:
            import dynamixel_sdk as sdk
        except ImportError:
            raise PlayError(
                "play needs the dynamixel-sdk package (pip install 'looprig[hardware]')"
            ) from None
        self.sdk, self.ids = sdk, tuple(ids)
        self.port = sdk.PortHandler(port)
        self.packets = sdk.PacketHandler(2.0)
        try:
            opened = self.port.setBaudRate(baud)
        except Exception as error:  # pyserial's SerialException and OSError
            raise PlayError(f"cannot open {port}: {error}") from None
        if not opened:
            raise PlayError(f"cannot open {port} at {baud} baud (not a baud rate the SDK supports)")
        self.writer = sdk.GroupSyncWrite(self.port, self.packets, ADDR_GOAL_POSITION, 4)
        self.reader = sdk.GroupSyncRead(self.port, self.packets, ADDR_PRESENT_POSITION, 4)
        for dxl_id in self.ids:
            self.reader.addParam(dxl_id)

    def _check(self, dxl_id: int, what: str, result: int, error: int) -> None:
        if result != self.sdk.COMM_SUCCESS:
            raise PlayError(f"servo {dxl_id}: {what}: {self.packets.getTxRxResult(result)}")
        if error:
            raise PlayError(f"servo {dxl_id}: {what}: {self.packets.getRxPacketError(error)}")

    def ping(self, dxl_id: int) -> int:
        model, result, error = self.packets.ping(self.port, dxl_id)
        self._check(dxl_id, "ping", result, error)
        return model

    def read_mode(self, dxl_id: int) -> int:
        value, result, error = self.packets.read1ByteTxRx(self.port, dxl_id, ADDR_OPERATING_MODE)
        self._check(dxl_id, "read Operating Mode(11)", result, error)
        return value

    def torque(self, on: bool) -> None:
        """Torque Enable(64) on every servo, each write tried again after a lost status packet."""
        for dxl_id in self.ids:
            retried(self._torque, dxl_id, on)

    def _torque(self, dxl_id: int, on: bool) -> None:
        result, error = self.packets.write1ByteTxRx(self.port, dxl_id, ADDR_TORQUE_ENABLE, int(on))
        self._check(dxl_id, f"torque {'on' if on else 'off'}", result, error)

    def torque_off_at_once(self) -> None:
        """Torque Enable(64) = 0 on every servo in one sync write (no status packets come
        back: the fastest stop the bus allows)."""
        writer = self.sdk.GroupSyncWrite(self.port, self.packets, ADDR_TORQUE_ENABLE, 1)
        for dxl_id in self.ids:
            writer.addParam(dxl_id, [0])
        result = writer.txPacket()
        if result != self.sdk.COMM_SUCCESS:
            raise PlayError(f"sync write of Torque Enable(64) = 0: {self.packets.getTxRxResult(result)}")

    def present(self) -> np.ndarray:
        """(A,) Present Position(132) ticks (signed), by one sync read."""
        result = self.reader.txRxPacket()
        if result != self.sdk.COMM_SUCCESS:
            raise PlayError(f"sync read of Present Position(132): {self.packets.getTxRxResult(result)}")
        raw = [self.reader.getData(i, ADDR_PRESENT_POSITION, 4) for i in self.ids]
        return np.array([struct.unpack("<i", struct.pack("<I", v & 0xFFFFFFFF))[0] for v in raw])

    def send_goals(self, ticks: np.ndarray) -> None:
        """One Goal Position(116) sync write (no status packets come back)."""
        self.writer.clearParam()
        for dxl_id, value in zip(self.ids, ticks, strict=True):
            self.writer.addParam(dxl_id, list(struct.pack("<i", int(value))))
        result = self.writer.txPacket()
        if result != self.sdk.COMM_SUCCESS:
            raise PlayError(f"sync write of Goal Position(116): {self.packets.getTxRxResult(result)}")

    def close(self) -> None:
        self.port.closePort()


def check_servos(bus: "DynamixelBus", names: Sequence[str], mode: int) -> None:
    """Before the first packet: ping every servo of ``bus`` (``names`` (A,) in its id order),
    require an X-series model number and Operating Mode(11) = ``mode``; one-line PlayError."""
    for dxl_id, name in zip(bus.ids, names, strict=True):
        model = retried(bus.ping, dxl_id)
        if model not in X_SERIES_MODELS:
            raise PlayError(f"servo {dxl_id} ({name}): model number {model} is not an X-series servo")
        found = bus.read_mode(dxl_id)
        if found != mode:
            raise PlayError(f"servo {dxl_id} ({name}): Operating Mode(11) is {found}, the curves need {mode}")


def retried(call, *args, attempts: int = 3):
    """``call(*args)``, tried again after a lost status packet (a busy bus can drop one)."""
    for attempt in range(attempts):
        try:
            return call(*args)
        except PlayError:
            if attempt == attempts - 1:
                raise
