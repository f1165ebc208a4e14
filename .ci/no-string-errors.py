#!/usr/bin/env python3
"""Fails when a public function in crates/*/src returns `Result<_, String>` (also nested, as in
`Option<Result<_, String>>`), or a `FromStr` or `TryFrom` impl has `type Err = String` or
`type Error = String`: errors that cross a seam are typed (a thiserror enum per module), so a
caller can match on them and a message is written in one place.

A signature is read whole, from `pub fn` to its `{` or `;`, so one written over several lines
is seen. Comments, strings, `pub(crate)`/`pub(super)` functions and `#[cfg(test)]` items (also
`#[cfg(all(test, ...))]`) are skipped. Trait methods are not `pub fn` and are not checked.

Usage: `no-string-errors.py [ROOT] [--exclude PATH]...`; a PATH ending in `/` excludes a folder.
Exit status 1 lists each offender as `file:line: what`.
"""

import re
import sys
from pathlib import Path


def blank(text):
    """`text` with comments, string and char literals replaced by spaces, newlines kept (so
    offsets and line numbers stay), so that neither holds a signature the scan would match."""
    out = []
    i, n = 0, len(text)

    def spaces(j):
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        return j

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = spaces(n if j < 0 else j)
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = spaces(j)
        elif (m := RAW_STRING.match(text, i)) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            end = text.find('"' + m.group(1), m.end())
            i = spaces(n if end < 0 else end + 1 + len(m.group(1)))
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = spaces(min(n, j + 1))
        elif c == "'" and (m := CHAR.match(text, i)):
            i = spaces(m.end())
        else:
            # Plain code up to the next character that may start a comment or a literal.
            j = PLAIN.match(text, i + 1).end()
            out.append(text[i:j])
            i = j
    return "".join(out)


RAW_STRING = re.compile(r'b?r(#*)"')
CHAR = re.compile(r"'(\\.[^']*|[^'\\\n])'")
PLAIN = re.compile(r"[^/\"'br]*")


def drop_cfg_test(code):
    """`code` with each `#[cfg(test)]` item (a `mod tests { .. }`, a helper) blanked."""
    while m := CFG_TEST.search(code):
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j < len(code) and code[j] == "{":
            depth = 0
            while j < len(code):
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
                if depth == 0:
                    break
        else:
            j += 1
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start() : j]) + code[j:]
    return code


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*(?:all\s*\(\s*)?test\b[^\]]*\]")
PUB_FN = re.compile(
    r"\bpub\s+(?:(?:const|async|unsafe|extern(?:\s*\"\s*\")?)\s+)*fn\s+(\w+)"
)
PARSE_ERR = re.compile(
    r"\btype\s+(Err|Error)\s*=\s*(?:std\s*::\s*string\s*::\s*)?String\s*;"
)


def skip_balanced(code, j, opening, closing):
    """The index after the `closing` that balances the `opening` at `j` (an arrow's `>` does
    not close: `Fn() -> T` inside generics)."""
    depth = 0
    while j < len(code):
        c = code[j]
        if c == opening:
            depth += 1
        elif c == closing and not (c == ">" and code[j - 1] == "-"):
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def return_type(code, after_name):
    """The return type of the function whose name ends at `after_name`: what follows the
    generics, the parameters and `->`, up to `where`, `{` or `;`; '' when it returns `()`."""
    j = after_name
    while j < len(code) and code[j].isspace():
        j += 1
    if code.startswith("<", j):
        j = skip_balanced(code, j, "<", ">")
    while j < len(code) and code[j].isspace():
        j += 1
    if not code.startswith("(", j):
        return ""
    j = skip_balanced(code, j, "(", ")")
    arrow = re.compile(r"\s*->").match(code, j)
    if not arrow:
        return ""
    end = re.compile(r"[{;]|\bwhere\b").search(code, arrow.end())
    return code[arrow.end() : end.start() if end else len(code)]


def generic_args(text, open_at):
    """The top-level arguments of the `<...>` opening at `open_at`."""
    args, depth, begin = [], 0, open_at + 1
    for j in range(open_at, len(text)):
        c = text[j]
        if c in "<([":
            depth += 1
        elif c in ">)]" and not (c == ">" and text[j - 1] == "-"):
            depth -= 1
            if depth == 0:
                args.append(text[begin:j])
                return args
        elif c == "," and depth == 1:
            args.append(text[begin:j])
            begin = j + 1
    return args


def string_error(return_type):
    """True when `return_type` holds a `Result` whose error is `String`."""
    for m in re.finditer(r"\bResult\s*<", return_type):
        # A trailing comma leaves an empty last argument.
        args = [arg for arg in generic_args(return_type, m.end() - 1) if arg.strip()]
        if len(args) == 2 and re.fullmatch(
            r"\s*(?:std\s*::\s*string\s*::\s*)?String\s*", args[1]
        ):
            return True
    return False


def offenders(path):
    code = drop_cfg_test(blank(path.read_text(encoding="utf-8")))
    line = lambda at: code.count("\n", 0, at) + 1  # noqa: E731
    for m in PUB_FN.finditer(code):
        if string_error(return_type(code, m.end())):
            yield line(m.start()), f"pub fn {m.group(1)} returns Result<_, String>"
    for m in PARSE_ERR.finditer(code):
        yield line(m.start()), f"type {m.group(1)} = String (FromStr, TryFrom)"


def main(argv):
    args, excluded = [], []
    it = iter(argv)
    for arg in it:
        if arg == "--exclude":
            excluded.append(next(it))
        else:
            args.append(arg)
    root = Path(args[0] if args else ".")
    found = 0
    for path in sorted(root.glob("crates/*/src/**/*.rs")):
        rel = path.relative_to(root).as_posix()
        if any(rel == e or (e.endswith("/") and rel.startswith(e)) for e in excluded):
            continue
        for number, what in offenders(path):
            print(f"{rel}:{number}: {what}")
            found += 1
    if found:
        print(
            f"{found} public error type(s) are String: give the module a typed error "
            "(a thiserror enum whose Display keeps the message)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
