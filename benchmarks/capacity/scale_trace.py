"""Write a larger Helios-format trace: the sum of COPIES copies of one trace, each shifted in time.

    python benchmarks/capacity/scale_trace.py TRACE COPIES OUT.csv [--split 2020-05-15] [--nodes-per-copy 64]

Copy k (0 to COPIES-1) is shifted later by k x ``--shift-hours`` (default: 24 days / COPIES,
one hour more when that is whole days: 145 h for 4 copies, 73 h for 8). A shift wraps
around inside its own part of the trace: the part before ``--split`` is filled only from rows
before it, the part from ``--split`` on only from rows after it, so settings chosen on the first
part never see demand of the second. The wrap is a jump in demand, as real traces have.
The demand columns are summed; ``total_gpu_num`` is COPIES x nodes-per-copy x 8 GPUs, so
``gpufleet simulate`` without ``--nodes`` simulates COPIES x nodes-per-copy nodes.
Derived data: keep it out of the repository and cite the source trace as its SOURCES.md asks.
"""
import argparse
import csv
from datetime import datetime, timedelta

COLUMNS = ("running_gpu_num_noless_8", "pending_gpu_num_noless_8", "running_gpu_num_less_8",
           "pending_gpu_num_less_8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("copies", type=int)
    parser.add_argument("out")
    parser.add_argument("--split", default="2020-05-15")
    parser.add_argument("--nodes-per-copy", type=int, default=64)
    parser.add_argument("--shift-hours", type=int, help="hours between copies (default: 24 days / COPIES)")
    args = parser.parse_args(argv)
    shift = args.shift_hours or (24 * 24) // args.copies
    if shift % 24 == 0:
        shift += 1
    with open(args.trace, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    split = datetime.fromisoformat(args.split)
    before = [datetime.fromisoformat(r["time"]) < split for r in rows]   # each row's time read once
    parts = [[r for r, early in zip(rows, before) if early], [r for r, early in zip(rows, before) if not early]]
    out = []
    for part in parts:
        if not part:
            continue
        n = len(part)
        step = datetime.fromisoformat(part[1]["time"]) - datetime.fromisoformat(part[0]["time"])
        minutes = int(timedelta(hours=shift) / step)
        for i, row in enumerate(part):
            total = {c: 0 for c in COLUMNS}
            for k in range(args.copies):
                source = part[(i - k * minutes) % n]
                for c in COLUMNS:
                    total[c] += int(float(source[c]))
            out.append({"time": row["time"], **total,
                        "running_gpu_num": total[COLUMNS[0]] + total[COLUMNS[2]],
                        "pending_gpu_num": total[COLUMNS[1]] + total[COLUMNS[3]],
                        "total_gpu_num": args.copies * args.nodes_per_copy * 8})
    with open(args.out, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["time", "total_gpu_num", "running_gpu_num", "pending_gpu_num",
                                                    *COLUMNS])
        writer.writeheader()
        writer.writerows(out)
    print(f"{args.out}: {len(out)} rows, {args.copies} copies {shift} h apart, "
          f"{args.copies * args.nodes_per_copy} nodes")


if __name__ == "__main__":
    main()
