"""sqlgate's runner of LiveSQLBench's Python test cases on SQLite (docs/state.md).

Reads one task as JSON on stdin: the database file, a private folder, the setup, the
statements to judge, the solution's statements and the test cases. Copies the database (opened
read-only) into the folder, runs the setup, then the statements (as LiveSQLBench's
evaluation does: their last result is `pred_query_result`), then each test case's
`test_case(pred_sqls, sol_sqls, db_name, conn)` with LiveSQLBench's helpers in scope; a test
passes when it raises nothing. Writes one JSON object on stdout.

The helpers keep LiveSQLBench's names and meanings (its evaluation's `test_utils.py` and
`db_utils.py`), written here for SQLite.
"""

import json
import re
import sqlite3
import sys
import time
import traceback
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

TASK = json.load(sys.stdin)
DEADLINE = None if TASK["timeout"] is None else time.monotonic() + TASK["timeout"]
MAX_ROWS = TASK["max_rows"]
# The copy's change count when the setup had run: the rows changed after it are capped.
CHANGED_BEFORE = [0]


class TooManyRows(Exception):
    pass


def perform_query_on_sqlite_databases(query, db_path, conn=None):
    """Runs one statement on `conn`: its rows (at most `max_rows`), or None, and `conn`."""
    cursor = conn.cursor()
    cursor.execute(query)
    rows = None
    if cursor.description is not None:
        rows = cursor.fetchmany(MAX_ROWS + 1)
        if len(rows) > MAX_ROWS:
            raise TooManyRows(f"more than {MAX_ROWS} rows")
    if conn.total_changes - CHANGED_BEFORE[0] > MAX_ROWS:
        raise TooManyRows(f"the statements change more than {MAX_ROWS} rows")
    return rows, conn


def execute_queries(queries, db_path, conn, logger=None, section_title="", is_solution=True):
    """Runs the statements in order: the last one's rows, whether one failed, whether the
    time ran out."""
    if isinstance(queries, str):
        queries = [queries]
    result = None
    for query in queries:
        try:
            result, conn = perform_query_on_sqlite_databases(query, db_path, conn)
        except sqlite3.OperationalError as error:
            return None, True, "interrupted" in str(error)
        except Exception:
            return None, True, False
    return result, False, False


def rounded(item, places):
    quantum = Decimal(1).scaleb(-places)
    if isinstance(item, Decimal):
        return float(item.quantize(quantum, rounding=ROUND_HALF_UP))
    if isinstance(item, float):
        return float(Decimal(str(item)).quantize(quantum, rounding=ROUND_HALF_UP))
    if isinstance(item, (list, tuple)):
        return type(item)(rounded(x, places) for x in item)
    if isinstance(item, dict):
        return {key: rounded(value, places) for key, value in item.items()}
    return item


def preprocess_results(results, decimal_places=2):
    """Rows with dates as YYYY-MM-DD, numbers rounded, nested values as sorted JSON text."""
    processed = []
    for row in results:
        cells = []
        for item in row:
            if isinstance(item, (date, datetime)):
                cells.append(item.strftime("%Y-%m-%d"))
                continue
            item = rounded(item, decimal_places)
            cells.append(json.dumps(item, sort_keys=True) if isinstance(item, (dict, list)) else item)
        processed.append(tuple(cells))
    return processed


def remove_distinct(sql_list):
    """Each query without its DISTINCT keywords (DISTINCT ON kept)."""
    return [
        re.sub(r"\s+", " ", re.sub(r"\bDISTINCT\b(?![^()]*\bON\b)", "", sql, flags=re.I)).strip()
        for sql in sql_list
    ]


def remove_comments(sql_list):
    """Each query without its block and line comments."""
    cleaned = []
    for sql in sql_list:
        sql = re.sub(r"/\*.*?\*/", "", sql, flags=re.S)
        sql = re.sub(r"--[^\r\n]*", "", sql)
        cleaned.append(re.sub(r"\n\s*\n+", "\n", sql).strip())
    return cleaned


def first_argument_end(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            if depth == 0:
                return i
            depth -= 1
        elif text[i] == "," and depth == 0:
            return i
    return len(text)


def closing(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def remove_round(sql_list):
    """Each query with ROUND(x, ...) replaced by x."""
    cleaned = []
    for sql in sql_list:
        while True:
            found = re.search(r"ROUND\s*\(", sql, flags=re.I)
            if not found:
                break
            opening = found.end() - 1
            end = closing(sql, opening)
            if end == -1:
                break
            argument = sql[opening + 1 : first_argument_end(sql, opening + 1)].strip()
            sql = sql[: found.start()] + argument + sql[end + 1 :]
        cleaned.append(sql)
    return cleaned


def check_sql_function_usage(sqls, required_keywords):
    """1 when every keyword appears in the statements (any case), else 0."""
    if not sqls:
        return 0
    combined = " ".join(sql.lower() for sql in sqls)
    return int(all(keyword.lower() in combined for keyword in required_keywords))


def ex_base(pred_sqls, sol_sqls, db_name, conn, conditions=None):
    """1 when both lists' last results are equal (as sets, or in order with
    `conditions={"order": True}`), else 0."""
    if not pred_sqls or not sol_sqls:
        return 0
    predicted, pred_error, pred_timeout = execute_queries(pred_sqls, db_name, conn)
    expected, gold_error, gold_timeout = execute_queries(sol_sqls, db_name, conn)
    if pred_error or pred_timeout or gold_error or gold_timeout:
        return 0
    predicted = preprocess_results(predicted or [])
    expected = preprocess_results(expected or [])
    if not predicted or not expected:
        return 0
    if conditions is not None and conditions.get("order", False):
        return int(predicted == expected)
    return int(set(predicted) == set(expected))


HELPERS = {
    "perform_query_on_sqlite_databases": perform_query_on_sqlite_databases,
    "execute_queries": execute_queries,
    "ex_base": ex_base,
    "check_sql_function_usage": check_sql_function_usage,
    "remove_distinct": remove_distinct,
    "remove_comments": remove_comments,
    "remove_round": remove_round,
    "preprocess_results": preprocess_results,
}


def authorize(action, first, second, database, trigger):
    """The copy is the only database: no ATTACH or DETACH."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def out_of_time():
    return 1 if DEADLINE is not None and time.monotonic() > DEADLINE else 0


class Discard:
    """What a test case prints: not ours to show."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass


def say(**answer):
    json.dump(answer, sys.__stdout__)
    sys.__stdout__.flush()
    sys.exit(0)


def main():
    copy = Path(TASK["folder"]) / "copy.sqlite"
    original = sqlite3.connect(Path(TASK["database"]).resolve().as_uri() + "?mode=ro", uri=True)
    conn = sqlite3.connect(copy)
    original.backup(conn)
    original.close()
    conn.set_authorizer(authorize)
    conn.set_progress_handler(out_of_time, 1000)
    for number, statement in enumerate(TASK["setup"], start=1):
        try:
            perform_query_on_sqlite_databases(statement, TASK["db_name"], conn)
        except Exception as error:
            say(status="setup_error", message=f"setup {number}: {error}", timeout=out_of_time() == 1)
    conn.commit()
    CHANGED_BEFORE[0] = conn.total_changes
    result = None
    for number, statement in enumerate(TASK["statements"], start=1):
        try:
            result, conn = perform_query_on_sqlite_databases(statement, TASK["db_name"], conn)
        except Exception as error:
            say(status="error", message=f"statement {number}: {error}", timeout=out_of_time() == 1)
    conn.commit()
    sys.stdout = Discard()
    for number, code in enumerate(TASK["tests"], start=1):
        scope = dict(HELPERS, pred_query_result=result)
        local = {
            "conn": conn,
            "pred_sqls": list(TASK["statements"]),
            "sol_sqls": list(TASK["solution"]),
            "db_name": TASK["db_name"],
        }
        try:
            exec(
                compile(
                    "from datetime import date\n"
                    + code
                    + "\n__test_case_result__ = test_case(pred_sqls, sol_sqls, db_name, conn)",
                    f"<test case {number}>",
                    "exec",
                ),
                scope,
                local,
            )
        # SystemExit too: a test that exits has not passed (LiveSQLBench counts it failed).
        except BaseException as error:
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            say(status="failed", test=number, message=last, timeout=out_of_time() == 1)
    say(status="passed")


main()
