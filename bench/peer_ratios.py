"""Ratios of looprig to PlaCo and Pinocchio-GN within each pass of the peer benchmark.

The shared ``side_by_side.sh`` divides each tool's best pass by the peers' best; on this
machine, whose speed switches between two levels (its calibration loop runs at about
34 or 60 ns), the best passes of two tools can come from different levels and the
ratio swings by 2x. Here each pass's tools, run back to back, are compared with each
other, and the median over the passes is reported. Reads the records ``make
bench-peers`` wrote (``python bench/peer_ratios.py out/bench-peers``).
"""

import json
import statistics
import sys
from pathlib import Path

PEERS = ("placo", "pin3-gn")


def pass_ratios(folder: Path) -> dict[tuple[str, str, str], list[float]]:
    """Per (mechanism, looprig variant, peer): the ratio of median ms a frame in every pass."""
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for run in sorted(folder.glob("run*")):
        medians = {}
        for record in run.glob("*__*__*.json"):
            tool, mech, _ = record.name.split("__")
            medians[tool, mech] = json.loads(record.read_text())["t_median_ms"]
        for (tool, mech), ms in sorted(medians.items()):
            if tool.startswith("looprig"):
                for peer in PEERS:
                    if (peer, mech) in medians:
                        ratios.setdefault((mech, tool, peer), []).append(ms / medians[peer, mech])
    return ratios


def main(argv=None) -> int:
    folder = Path((argv or sys.argv[1:] or ["out/bench-peers"])[0])
    ratios = pass_ratios(folder)
    if not ratios:
        print(f"error: {folder}: no pass with looprig and a peer in it", file=sys.stderr)
        return 1
    print("| mech | looprig variant | / PlaCo (median of passes) | / pin-gn (median) | / PlaCo, every pass |")
    print("|---|---|---|---|---|")
    for mech, tool in sorted({(m, t) for m, t, _ in ratios}):
        placo, pin = ratios.get((mech, tool, "placo"), []), ratios.get((mech, tool, "pin3-gn"), [])
        cells = [f"{statistics.median(r):.2f}x" if r else "n/a" for r in (placo, pin)]
        print(f"| {mech} | {tool} | {cells[0]} | {cells[1]} | {', '.join(f'{r:.2f}' for r in placo)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
