"""Live link on Reachy Mini: a 10-second head clip streamed at 100 Hz on the emulated bus.

Cold, in one process: open the MJCF file, build the per-frame solver (looprig.live.FrameSolver)
on bench/reachy_mini.py's head clip (10 s at 100 Hz), open the link on nine emulated X-series
servos (tests/dxl_emulator.py, through the real dynamixel-sdk) and play; 5 s in, the timeline
jumps 90 frames ahead (a scrub) and plays on; at 9.5 s the stop (what Esc calls). Every frame
is solved by the per-frame solver in the link's thread when it is wanted, starting from its
seed (the state the warm-up solved for it; FrameSolver.warm_up).

Prints one JSON line: whether the link's thread ran under real-time scheduling
(LiveSettings.realtime: asked for unless --normal-priority, refused without the permission);
the start-up, before the first packet [s]: opening the file and building the solver, then the
link's open (ping and model check, the solver's warm-up: the first frame from the start pose
and the clip's frames in order, torque on, positions read back), of which the warm-up; per
period the work from its start to its packet sent (solve + ruckig move + sync write) [ms]:
median, 99th percentile, max, the periods over 10 ms and when they ended [s from the play],
and the two periods after the jump (the first solve of the frame 90 ahead); the largest gap
between two packets [ms] (a period late to start shows here, not in its work); packets sent
and their limit violations (looprig.live.sent_violations: range, velocity, acceleration as a
tick file is checked; 0 is the claim); the jump: the peak lag after it [s] (the time the
servos still needed to reach the wanted pose) and how long they took to catch up with the clip
[s] (a snap would take one period) and the largest motor move of the catch-up [rad]; the stop:
from the call to the servos left as set [ms] and the last goal packet's arrival after the call
[ms]. The motor limits are the servo catalogue's (Reachy Mini's servos: XC330-M288 body yaw,
XL330-M288 Stewart motors, XL330-M077 antennas) with accelerations derived from their stall
torque (derive_acceleration).

With ``--plot PNG``, draws the jump for the motor it moves most: the frame's value each
packet moved towards and the value sent, and the speed sent against the motor's limit
(docs/images/live_link_jump.png is this picture).

    python bench/live_link.py [--seconds 10] [--rate 100] [--jump 90] [--plot PNG] [--normal-priority]
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

from dxl_emulator import EmulatedBus, Servo  # noqa: E402  (the project's Protocol 2.0 emulator)
from looprig.cad_import import load_mechanism  # noqa: E402
from looprig.core.retarget import RetargetMapping, TargetSpec  # noqa: E402
from reachy_mini import FILES, head_clip  # noqa: E402

from looprig import live  # noqa: E402

#: Reachy Mini's servos (catalogue names) and their Model Number(0)
SERVOS = {"yaw_body": "XC330-M288-T", **{f"stewart_{k}": "XL330-M288-T" for k in range(1, 7)}}
SERVOS |= {"right_antenna": "XL330-M077-T", "left_antenna": "XL330-M077-T"}
MODEL_NUMBERS = {"XC330-M288-T": 1240, "XL330-M288-T": 1200, "XL330-M077-T": 1190}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--jump", type=int, default=90)
    parser.add_argument("--plot", metavar="PNG", help="draw the jump for the motor it moves most")
    parser.add_argument(
        "--normal-priority", action="store_true", help="the link's thread without real-time scheduling"
    )
    args = parser.parse_args(argv)
    frames = round(args.seconds * args.rate) + 1
    warnings.simplefilter("ignore", UserWarning)  # the file names no servos: the mapping does
    start = time.perf_counter()
    mechanism = load_mechanism(FILES[0])  # the MJCF
    mapping = RetargetMapping(
        (TargetSpec("head", "xl_330", (1, 1, 1), (1, 1, 1)),),
        rate=args.rate,
        servo=SERVOS,
        derive_acceleration=True,
    )
    solver = live.FrameSolver(mechanism, mapping, head_clip(mechanism, frames, args.rate))
    ids = {name: k + 1 for k, name in enumerate(solver.curves.names)}
    settings = live.LiveSettings(rate=args.rate, realtime=not args.normal_priority)
    motors = live.LiveMotors.of(solver.curves, solver.dynamixel, settings, ids=ids)
    built = time.perf_counter() - start
    ticks = motors.ticks(solver.actuators)
    servos = [
        Servo(ids[n], model=MODEL_NUMBERS[SERVOS[n]], position=int(t))
        for n, t in zip(motors.names, ticks, strict=True)
    ]
    with EmulatedBus(servos) as bus:
        link = live.LiveLink(motors, solver, bus.port, 1_000_000, settings, args.rate, frames - 1)
        link.open(0)  # the start-up: check, warm-up, read-back
        t0 = time.monotonic()
        link.play(0)
        time.sleep(max(0.0, t0 + 0.5 * args.seconds - time.monotonic()))
        jumped_at = time.monotonic()
        before = link.status.frame
        link.play(before + args.jump)
        time.sleep(max(0.0, t0 + 0.95 * args.seconds - time.monotonic()))
        report = link.stop()  # Esc
        snapshot = bus.snapshot()
    goal_times = np.array([p["t"] for p in snapshot["packets"] if "goals" in p])
    work = 1e3 * report.work_s
    jump_period = int(np.searchsorted(report.sent_at, jumped_at))  # the first packet after the jump
    period_ms = 1e3 / args.rate
    violations = live.sent_violations(motors, np.vstack([ticks, report.sent]), args.rate)
    # the jump's move: from the first packet after it with a lag to the first without again
    lagging = np.flatnonzero((report.sent_at >= jumped_at) & (report.lag_s > 0.0))
    first_after = int(lagging[0]) if lagging.size else len(report.sent) - 1
    caught = np.flatnonzero((np.arange(len(report.sent)) > first_after) & (report.lag_s == 0.0))
    after = np.arange(len(report.sent)) >= first_after
    values = motors.values(report.sent)
    moved = values[first_after - 1 : caught[0] + 1] if caught.size else values[:1]
    line = {
        "file": FILES[0].name,
        "motors": len(motors.names),
        "rate_hz": args.rate,
        "realtime": report.status.realtime,
        "startup_open_and_build_s": round(built, 3),
        "startup_link_open_s": round(link.startup_s, 3),
        "startup_warm_up_s": round(link.first_source_s, 3),
        "packets": len(report.sent),
        "period_ms": period_ms,
        "work_median_ms": round(float(np.median(work)), 3),
        "work_p99_ms": round(float(np.percentile(work, 99)), 3),
        "work_max_ms": round(float(work.max()), 3),
        "periods_over_10ms": int((work > period_ms).sum()),
        "over_10ms_at_s": [round(float(t - t0), 2) for t in report.sent_at[work > period_ms]],
        "jump_period_work_ms": round(float(work[jump_period : jump_period + 2].max()), 3),
        "packet_gap_max_ms": round(1e3 * float(np.diff(report.sent_at).max()), 3),
        "violations": len(violations),
        "velocity_limits_rad_s": [round(float(v), 2) for v in sorted(set(motors.velocity))],
        "acceleration_limits_rad_s2": [round(float(v), 1) for v in sorted(set(motors.acceleration))],
        "jump_frames": args.jump,
        "jump_largest_move_rad": round(float(np.abs(moved[-1] - moved[0]).max()), 4) if caught.size else None,
        "jump_peak_lag_s": round(float(report.lag_s[after].max()), 3),
        "jump_catch_up_s": round(float(report.sent_at[caught[0]] - report.sent_at[first_after]), 3)
        if caught.size
        else None,
        "stop_ms": round(1e3 * (report.stopped - report.stop_requested), 3),
        "last_goal_after_stop_ms": round(1e3 * (goal_times.max() - report.stop_requested), 3),
    }
    print(json.dumps(line), flush=True)
    if args.plot and caught.size:
        plot_jump(args.plot, report, motors, values, first_after, int(caught[0]), args.jump)
    return 0


def plot_jump(path, report, motors, values, first: int, caught: int, jump: int) -> None:
    """The jump's packets, 0.1 s either side: wanted and sent value, sent speed and its limit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = int(np.argmax(np.abs(values[caught] - values[first - 1])))
    window = slice(max(first - 10, 0), min(caught + 10, len(values)))
    t = 1e3 * report.period * (np.arange(len(values))[window] - first)  # packet times as the servos see them
    speed = np.gradient(values[window, a], report.period)
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 4.5), sharex=True)
    top.step(t, report.wanted[window, a], where="post", label="frame's value (wanted)", color="0.5")
    top.plot(t, values[window, a], ".-", label="Goal Position sent", color="C0")
    top.set_ylabel(f"{motors.names[a]} [{motors.units[a]}]")
    top.set_title(
        f"Reachy Mini: a {jump}-frame scrub as a limited move, one packet every {1e3 * report.period:g} ms"
    )
    top.legend(loc="best")
    limit = motors.velocity[a]
    bottom.axhspan(-limit, limit, color="C2", alpha=0.12, label=f"velocity limit ±{limit:.2f} rad/s")
    bottom.plot([], [], " ", label=f"acceleration limit {motors.acceleration[a]:.0f} rad/s²")
    bottom.plot(t, speed, ".-", color="C0", label="speed sent")
    bottom.set_ylabel(f"[{motors.units[a]}/s]")
    bottom.set_xlabel("time from the jump [ms], one packet per period")
    bottom.legend(loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
