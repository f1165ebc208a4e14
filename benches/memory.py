#!/usr/bin/env python3
"""Peak memory of `sqlgate score` under runaway predictions (issue 23 item 6): K concurrent
cartesian `ORDER BY random()` predictions, each sorting in memory until the process's memory
budget stops it, beside one ordinary prediction that must still be scored.

  python3 benches/memory.py [--concurrency 1,2,4] [--shape wide,narrow] [--max-memory MIB]

K predictions run on K worker threads (RAYON_NUM_THREADS=K). `wide` sorts rows of six columns
(about 70 bytes of record each), `narrow` rows of one integer (about 30 bytes), `tiny` rows of a
NULL ordered by `random() % 2` (about 20 bytes): SQLite's accounting leaves out the allocator's
per-chunk overhead, so small records cost the most beyond what SQLite counts. `result` reads a
result of two-byte texts (with `--max-memory` under 700, it meets the budget before
`--max-bytes`). The peak RSS is the child's high-water mark (getrusage of the child).

Build first: `cargo build --release`. Everything is written under target/bench-memory/.
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BINARY = REPO / "target" / "release" / "sqlgate"
WORK = REPO / "target" / "bench-memory"

SHAPES = {
    "wide": "SELECT * FROM t x, t y ORDER BY random() + {k}",
    "narrow": "SELECT x.id FROM t x, t y ORDER BY random() + {k}",
    "tiny": "SELECT NULL FROM t x, t y ORDER BY random() % 2 + {k}",
    "result": "SELECT 'a' || {k} FROM t x, t y",
}
GOLD = "SELECT count(*), max(label) FROM t"
# Correct (testsuite mode allows permuted columns), and executed apart from the gold.
ORDINARY = "SELECT max(label), count(*) FROM t"


def build_db(path, rows):
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT, value REAL)")
    db.executemany(
        "INSERT INTO t VALUES (?, ?, ?)", ((i, f"label {i}", i / 7) for i in range(rows))
    )
    db.commit()
    db.close()


def write_suite(folder, shape, concurrency):
    cases = [(f"hungry{k}", SHAPES[shape].format(k=k)) for k in range(concurrency)]
    cases.append(("ordinary", ORDINARY))
    with open(folder / "cases.jsonl", "w") as out, open(folder / "predictions.jsonl", "w") as pred:
        for case_id, sql in cases:
            out.write(json.dumps({"id": case_id, "db": "big", "question": case_id,
                                  "gold": GOLD}) + "\n")
            pred.write(json.dumps({"id": case_id, "sql": sql}) + "\n")
    (folder / "suite.toml").write_text('name = "memory"\ncases = "cases.jsonl"\ndb_dir = "db"\n')


def run(folder, concurrency, max_memory):
    env = dict(os.environ, RAYON_NUM_THREADS=str(concurrency))
    # No row bound: a large result meets the memory budget (or --max-bytes) instead.
    args = [str(BINARY), "score", "--gold", "suite.toml", "--pred", "predictions.jsonl",
            "--format", "json", "--timeout", "600", "--max-rows", "1000000000"]
    if max_memory:
        args += ["--max-memory", str(max_memory)]
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=folder, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    stdout, stderr = child.communicate()
    took = time.perf_counter() - start
    # communicate() has reaped the child: its peak is in the children's usage, the largest
    # child so far. Each run is its own process, so measure in a fresh interpreter per run.
    if child.returncode != 0:
        sys.exit(f"sqlgate score failed ({child.returncode}):\n{stderr.decode()}")
    return took, json.loads(stdout)


def measure_one(shape, concurrency, max_memory):
    """Runs one configuration and prints its line (called in a fresh interpreter)."""
    import resource

    folder = WORK / f"{shape}-{concurrency}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "db").mkdir(exist_ok=True)
    big = folder / "db" / "big.sqlite"
    if not big.exists():
        os.symlink(WORK / "big.sqlite", big)
    write_suite(folder, shape, concurrency)
    took, report = run(folder, concurrency, max_memory)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    outcomes = {}
    for case in report["cases"]:
        outcome = case["verdict"]
        if case["error"]:
            outcome = case["error"][:50]
        outcomes.setdefault(outcome, []).append(case["id"])
    ordinary = next(c for c in report["cases"] if c["id"] == "ordinary")
    print(f"{shape:6} x{concurrency}: peak RSS {peak_mib:7.0f} MiB, {took:6.1f} s, "
          f"ordinary case {ordinary['verdict']}; "
          + "; ".join(f"{k} ({len(v)})" for k, v in sorted(outcomes.items())), flush=True)


def main():
    global BINARY
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", default="1,2,4", help="comma-separated counts")
    parser.add_argument("--shape", default="wide,narrow",
                        help="comma-separated: " + ", ".join(SHAPES))
    parser.add_argument("--max-memory", type=int, help="--max-memory MiB (default: sqlgate's)")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the table joined to itself")
    parser.add_argument("--binary", type=Path, default=BINARY, help="the sqlgate to measure")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    BINARY = args.binary.resolve()
    if args.one:
        measure_one(args.one[0], int(args.one[1]), args.max_memory)
        return
    if not BINARY.is_file():
        sys.exit(f"{BINARY} is missing: run `cargo build --release` first")
    build_db(WORK / "big.sqlite", args.rows)
    budget = f"--max-memory {args.max_memory}" if args.max_memory else "default budget"
    print(f"{args.rows} rows joined to themselves, {budget}:")
    for shape in args.shape.split(","):
        for concurrency in args.concurrency.split(","):
            # One interpreter per run: the children's peak RSS is per process tree.
            extra = ["--max-memory", str(args.max_memory)] if args.max_memory else []
            subprocess.run([sys.executable, __file__, "--binary", str(BINARY), *extra,
                            "--one", shape, concurrency], check=True)


if __name__ == "__main__":
    main()
