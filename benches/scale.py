#!/usr/bin/env python3
"""Scale benchmarks of `sqlgate test` (issue "Scale out across CI runners, never redo finished
work"): generated, seeded workloads timed end to end with the release binary.

  python3 benches/scale.py [--scale 1.0] [--cases 50000] [--skip heavy|many|distill]... [--binary PATH]

heavy: the execution-heavy workload: 10^6 orders, 10^5 customers (times --scale), 120 cases
       over 60 gold queries (each gold shared by two cases), half the predictions equal to
       their gold and the other half 20 distinct wrong queries: 80 distinct queries. Timed:
       raw execution of the 80 distinct queries (Python's sqlite3) on one thread and on a
       process per core (what the machine's shared memory bandwidth allows), sqlgate
       without its cache on every core and on one thread, then 4 shards run one after another
       plus `sqlgate merge` against one run (same JUnit and snapshot).
distill: `sqlgate distill` of the heavy workload's database and its 120 golds (default options),
       on every core and on one thread: wall time, peak RSS, and whether both wrote the same
       bytes.
many:  a suite of --cases cases over a 10^6-row table (times --scale): first run with an empty
       cache (accepting the snapshot), second run with every input unchanged, third after changing one prediction;
       then the HTML report: an unchanged run writing it, and `sqlgate report` from the run's record.

Build first: `cargo build --release` (the binary is looked for in $CARGO_TARGET_DIR/release, by
default target/release; `--binary PATH` names another). Everything is written under
target/bench-scale/.
"""

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BINARY = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target") / "release" / "sqlgate"
WORK = REPO / "target" / "bench-scale"


def build_heavy_db(path, orders, customers, rng):
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, region TEXT, segment TEXT)"
    )
    db.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, year INTEGER, "
        "month INTEGER, status TEXT, amount REAL)"
    )
    regions = ["north", "south", "east", "west", "centre"]
    segments = ["retail", "smb", "enterprise", "public"]
    statuses = ["open", "paid", "shipped", "returned", "cancelled"]
    db.executemany(
        "INSERT INTO customers VALUES (?, ?, ?, ?)",
        (
            (i, f"customer {i}", rng.choice(regions), rng.choice(segments))
            for i in range(customers)
        ),
    )
    db.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)",
        (
            (
                i,
                rng.randrange(customers),
                rng.randrange(2015, 2025),
                rng.randrange(1, 13),
                rng.choice(statuses),
                round(rng.uniform(1, 500), 2),
            )
            for i in range(orders)
        ),
    )
    db.commit()
    db.close()


def heavy_queries(rng):
    """60 gold queries (joins and aggregates over every order) and 20 wrong variants."""
    golds = []
    for year in range(2015, 2025):
        golds.append(
            "SELECT c.region, count(*), round(sum(o.amount), 2) FROM orders o JOIN customers c "
            f"ON c.id = o.customer_id WHERE o.year = {year} GROUP BY c.region"
        )
        golds.append(
            "SELECT c.segment, count(DISTINCT o.customer_id) FROM orders o JOIN customers c "
            f"ON c.id = o.customer_id WHERE o.year >= {year} GROUP BY c.segment"
        )
    for month in range(1, 13):
        golds.append(
            f"SELECT status, round(avg(amount), 2), count(*) FROM orders WHERE month = {month} "
            "GROUP BY status"
        )
        golds.append(
            "SELECT c.region, o.status, count(*) FROM orders o JOIN customers c ON "
            f"c.id = o.customer_id WHERE o.month = {month} AND o.amount > 100 "
            "GROUP BY c.region, o.status"
        )
    for threshold in range(50, 450, 25):
        golds.append(
            "SELECT customer_id, count(*) AS n FROM orders WHERE amount > "
            f"{threshold} GROUP BY customer_id ORDER BY n DESC, customer_id LIMIT 10"
        )
    golds = golds[:60]
    assert len(set(golds)) == 60
    counting = [gold for gold in golds if "count(*)" in gold]
    wrong = [gold.replace("count(*)", "count(*) + 1", 1) for gold in rng.sample(counting, 20)]
    assert len(set(wrong)) == 20 and not set(wrong) & set(golds)
    return golds, wrong


def write_suite(folder, db_name, cases, predictions, snapshots=True):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "cases.jsonl", "w") as out:
        for case_id, gold in cases:
            record = {"id": case_id, "db": db_name, "question": f"question {case_id}", "gold": gold}
            out.write(json.dumps(record) + "\n")
    write_predictions(folder, predictions)
    (folder / "suite.toml").write_text(
        f'name = "bench"\ncases = "cases.jsonl"\ndb_dir = "db"\n'
    )
    (folder / "sqlgate.toml").write_text(
        '[[suite]]\nbenchmark = "suite.toml"\ngate = { ex = ">= 0.1" }\n\n'
        '[[system]]\nname = "bench"\ntype = "replay"\npredictions = "predictions.jsonl"\n'
    )


def write_predictions(folder, predictions):
    with open(folder / "predictions.jsonl", "w") as out:
        for case_id, sql in predictions:
            out.write(json.dumps({"id": case_id, "sql": sql}) + "\n")


def bench_env(threads):
    """The environment of a timed run: CI's, outside GitHub, on `threads` threads if given."""
    env = dict(os.environ)
    env["CI"] = "true"
    env.pop("GITHUB_ACTIONS", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    return env


def sqlgate(folder, *args, threads=None):
    env = bench_env(threads)
    # The previous run's writes (cache entries) are flushed first, not during this run's timing.
    os.sync()
    start = time.perf_counter()
    done = subprocess.run(
        [str(BINARY), *args], cwd=folder, env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - start
    if done.returncode not in (0, 100):
        sys.exit(f"sqlgate {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return took, done.stdout + done.stderr


def reuse_line(output):
    match = re.search(r"reused .*? cache", output.replace("\n", " "))
    return match.group(0) if match else "(no cache note)"


def junit_without_times(path):
    return re.sub(r'(time|timestamp)="[^"]*"', r'\1=""', path.read_text())


RAW_CONNECTION = None


def open_raw(db):
    global RAW_CONNECTION
    RAW_CONNECTION = sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def run_raw(sql):
    RAW_CONNECTION.execute(sql).fetchall()


def heavy(scale, rng, timed=True):
    """Builds the heavy workload, and times it when `timed`."""
    folder = WORK / "heavy"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "db").mkdir(parents=True)
    orders, customers = int(1_000_000 * scale), int(100_000 * scale)
    print(f"heavy: generating {orders} orders, {customers} customers ...", flush=True)
    db = folder / "db" / "shop.sqlite"
    build_heavy_db(db, orders, customers, rng)
    golds, wrong = heavy_queries(rng)
    cases = [(f"q{i:03d}", golds[i % 60]) for i in range(120)]
    predictions = [
        (case_id, gold if i < 60 else wrong[(i - 60) % 20])
        for i, (case_id, gold) in enumerate(cases)
    ]
    write_suite(folder, "shop", cases, predictions)
    distinct = sorted({sql for _, sql in cases} | {sql for _, sql in predictions})
    print(f"heavy: {len(cases)} cases, {len(distinct)} distinct queries")
    if not timed:
        return

    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    connection.execute("SELECT count(*) FROM orders").fetchall()  # warm the page cache
    took = {}
    for sql in distinct:
        start = time.perf_counter()
        connection.execute(sql).fetchall()
        took[sql] = time.perf_counter() - start
    raw = sum(took.values())
    cores = os.cpu_count() or 1
    print(f"  raw execution of the distinct queries, one thread: {raw:7.2f} s "
          f"(/{cores} cores: {raw / cores:.2f} s)")
    # What the machine gives when every core scans at once (they share memory bandwidth):
    # a process per core, the longest queries first.
    longest_first = sorted(distinct, key=took.get, reverse=True)
    start = time.perf_counter()
    with multiprocessing.Pool(cores, initializer=open_raw, initargs=(str(db),)) as pool:
        pool.map(run_raw, longest_first, chunksize=1)
    raw_parallel = time.perf_counter() - start
    print(f"  raw execution of the distinct queries, {cores} processes: {raw_parallel:7.2f} s")

    one, out = sqlgate(folder, "test", "--no-cache", "--junit", "one.xml")
    print(f"  sqlgate test --no-cache, every core:      {one:7.2f} s  ({one / (raw / cores):.2f}x raw/cores, "
          f"{one / raw_parallel:.2f}x raw on {cores} processes)")
    print(f"    {reuse_line(out)}")
    single, _ = sqlgate(folder, "test", "--no-cache", threads=1)
    print(f"  sqlgate test --no-cache, one thread:      {single:7.2f} s  ({single / raw:.2f}x raw)")

    shutil.rmtree(folder / ".sqlgate", ignore_errors=True)
    first, _ = sqlgate(folder, "test")
    second, out = sqlgate(folder, "test")
    print(f"  first run, empty cache:                   {first:7.2f} s")
    print(f"  second run, inputs unchanged:             {second:7.2f} s  ({first / second:.0f}x faster)")
    print(f"    {reuse_line(out)}")

    for cached in (False, True):
        shutil.rmtree(folder / ".sqlgate", ignore_errors=True)
        total = 0.0
        flags = [] if cached else ["--no-cache"]
        for shard in range(1, 5):
            took, _ = sqlgate(folder, "test", "--partition", f"hash:{shard}/4",
                              "--record-out", f"shard-{shard}.json", *flags)
            total += took
        took, _ = sqlgate(folder, "merge", *[f"shard-{k}.json" for k in range(1, 5)],
                          "--junit", "merged.xml")
        total += took
        same = junit_without_times(folder / "one.xml") == junit_without_times(folder / "merged.xml")
        what = "shared cache" if cached else "--no-cache"
        print(f"  4 shards one after another + merge ({what}): {total:7.2f} s "
              f"({total / one:.2f}x one run; merged JUnit identical: {same})")


def run_measured(folder, args, threads=None):
    """Runs sqlgate to its end: (wall seconds, peak RSS in MiB of that process alone)."""
    env = bench_env(threads)
    start = time.perf_counter()
    child = subprocess.Popen([str(BINARY), *args], cwd=folder, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"sqlgate {' '.join(args)} failed:\n{stderr.decode(errors='replace')}")
    return took, usage.ru_maxrss / 1024


def suite_files(out):
    """The distilled suite's files by name and bytes (the manifest, which names the command
    line, left out)."""
    return sorted((p.relative_to(out).as_posix(), p.read_bytes())
                  for p in out.rglob("*") if p.is_file() and p.name != "sqlgate-distill.json")


def distill(folder):
    cores = os.cpu_count() or 1
    written = {}
    for threads in (None, 1):
        out = folder / f"distilled-{threads or 'all'}"
        shutil.rmtree(out, ignore_errors=True)
        took, rss = run_measured(folder, ["distill", "--gold", "suite.toml", "--out", out.name],
                                 threads)
        written[threads] = suite_files(out)
        what = "one thread" if threads else f"every core ({cores})"
        print(f"  sqlgate distill, {what}: {took:7.2f} s, peak RSS {rss:.0f} MiB")
    print(f"    same bytes on one thread and on every core: {written[None] == written[1]}")


def build_many_db(path, rows, rng):
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, user INTEGER, kind INTEGER, value REAL)")
    db.executemany(
        "INSERT INTO events VALUES (?, ?, ?, ?)",
        ((i, rng.randrange(rows // 20), rng.randrange(8), round(rng.uniform(0, 100), 2))
         for i in range(rows)),
    )
    db.execute("CREATE INDEX events_user ON events(user)")
    db.commit()
    db.close()


def many(scale, count, rng):
    folder = WORK / "many"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "db").mkdir(parents=True)
    rows = int(1_000_000 * scale)
    print(f"many: generating {rows} events, {count} cases ...", flush=True)
    build_many_db(folder / "db" / "events.sqlite", rows, rng)
    cases, predictions = [], []
    for i in range(count):
        user = rng.randrange(rows // 20)
        gold = (f"SELECT kind, count(*), round(sum(value), 2) FROM events WHERE user = {user} "
                "GROUP BY kind ORDER BY kind")
        pred = gold if rng.random() < 0.7 else gold.replace("GROUP BY", "AND kind > 0 GROUP BY")
        cases.append((f"c{i:05d}", gold))
        predictions.append((f"c{i:05d}", pred))
    write_suite(folder, "events", cases, predictions)
    # The first run accepts its snapshot, as a team's suite has one: the later runs compare.
    first, _ = sqlgate(folder, "test", "--accept")
    second, out = sqlgate(folder, "test")
    print(f"  first run, empty cache:        {first:7.2f} s")
    print(f"  second run, inputs unchanged:  {second:7.2f} s  ({first / second:.0f}x faster)")
    print(f"    {reuse_line(out)}")
    predictions[0] = (predictions[0][0], predictions[0][1] + " LIMIT 3")
    write_predictions(folder, predictions)
    third, out = sqlgate(folder, "test")
    print(f"  one prediction changed:        {third:7.2f} s")
    print(f"    {reuse_line(out)}")
    # The HTML report (docs/report.md): an unchanged run writing it against one that does not,
    # and `sqlgate report` writing it from the run's record.
    plain, _ = sqlgate(folder, "test")
    with_html, _ = sqlgate(folder, "test", "--html", "report.html")
    sqlgate(folder, "test", "--record-out", "run.json")
    from_record, _ = sqlgate(folder, "report", "run.json", "--html", "from-record.html")
    size = (folder / "report.html").stat().st_size / 1e6
    print(f"  unchanged run writing the HTML report: {with_html:7.2f} s "
          f"(without: {plain:.2f} s; the page {size:.1f} MB)")
    print(f"  sqlgate report from the run's record:  {from_record:7.2f} s")


def main():
    global BINARY
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="table sizes, times 10^6 rows")
    parser.add_argument("--cases", type=int, default=50_000, help="cases of the `many` suite")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--skip", choices=["heavy", "many", "distill"], action="append",
                        default=[])
    parser.add_argument("--binary", type=Path, default=BINARY, help="the sqlgate to time")
    args = parser.parse_args()
    BINARY = args.binary.resolve()
    if not BINARY.is_file():
        sys.exit(f"{BINARY} is missing: run `cargo build --release` first, or name a binary with --binary")
    if "heavy" not in args.skip or "distill" not in args.skip:
        heavy(args.scale, random.Random(args.seed), "heavy" not in args.skip)
    if "distill" not in args.skip:
        distill(WORK / "heavy")
    if "many" not in args.skip:
        many(args.scale, args.cases, random.Random(args.seed))


if __name__ == "__main__":
    main()
