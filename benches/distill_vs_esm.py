#!/usr/bin/env python3
"""EX on a distilled Spider dev folder against the reference exact-set-match (ESM) verdicts.

Usage: distill_vs_esm.py SQLGATE SPIDER_DEV DISTILLED OUT_DIR [THOROUGH]

Scores each shared system's predictions (`predictions/<system>.txt`) with
`sqlgate score --mode testsuite --db-dir DISTILLED`, joins the per-pair verdicts with the
reference's `reference/<system>.jsonl`, prints the 2x2 table per system and writes every pair
where the two disagree to OUT_DIR/<system>.disagree.jsonl with a class:
- ESM accepts, the suite rejects: `values` when the two queries' literals differ (ESM ignores
  values), else `structure` (a join condition, a grouping column...: ESM compares neither);
- ESM rejects, the suite accepts: with THOROUGH (a folder distilled with the systems' answers as
  neighbours, `sqlgate distill --predictions`), `missed` when THOROUGH rejects the prediction
  (a wrong query the suite failed to reject) and `equivalent` when no database there tells it
  apart (equivalent SQL that ESM rejects); without THOROUGH, `unclassified`.
"""
import json, pathlib, re, subprocess, sys

sqlgate, spider, distilled, out = sys.argv[1:5]
thorough = sys.argv[5] if len(sys.argv) > 5 else None
spider, out = pathlib.Path(spider), pathlib.Path(out)
out.mkdir(parents=True, exist_ok=True)
gold = [l.rstrip("\n").split("\t")[0] for l in open(spider / "gold.txt") if l.strip()]
LITERAL = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|\b\d+(?:\.\d+)?\b")


def literals(sql):
    return sorted(m.strip("'\"") for m in LITERAL.findall(sql))


def score(pred_file, db_dir):
    run = subprocess.run([sqlgate, "score", "--gold", str(spider / "gold.txt"), "--pred", str(pred_file),
                          "--db-dir", str(db_dir), "--mode", "testsuite", "--format", "json"],
                         capture_output=True, text=True)
    if run.returncode not in (0, 100):
        sys.exit(f"{pred_file}: sqlgate score failed ({run.returncode}): {run.stderr[-2000:]}")
    return [int(c["ex"] == 1) for c in json.loads(run.stdout)["cases"]]


totals = {}
for pred_file in sorted((spider / "predictions").glob("*.txt")):
    system = pred_file.stem
    ex = score(pred_file, distilled)
    deep = score(pred_file, thorough) if thorough else None
    preds = [l.rstrip("\n") for l in open(pred_file)]
    refs = [json.loads(l) for l in open(spider / "reference" / f"{system}.jsonl")]
    assert len(ex) == len(refs) == len(gold), (len(ex), len(refs), len(gold))
    classes = {}
    with open(out / f"{system}.disagree.jsonl", "w") as f:
        for i, ref in enumerate(refs):
            if ex[i] == ref["esm"]:
                continue
            if ref["esm"]:
                kind = "values" if literals(gold[i]) != literals(preds[i]) else "structure"
            elif deep is None:
                kind = "unclassified"
            else:
                kind = "missed" if deep[i] == 0 else "equivalent"
            classes[kind] = classes.get(kind, 0) + 1
            f.write(json.dumps({"i": i, "db": ref["db"], "hardness": ref["hardness"], "esm": ref["esm"],
                                "ex": ex[i], "class": kind, "gold": gold[i], "pred": preds[i]}) + "\n")
    n = len(ex)
    both = sum(1 for i in range(n) if ex[i] and refs[i]["esm"])
    print(f"{system:14} ESM {sum(r['esm'] for r in refs) / n:.3f}  EX(distilled) {sum(ex) / n:.3f}"
          + (f"  EX(thorough) {sum(deep) / n:.3f}" if deep else "")
          + f"  both {both}  " + "  ".join(f"{k} {v}" for k, v in sorted(classes.items())))
