//! Reference gold formats: Defog CSV, Spider/BIRD lines, Spider/BIRD/TrustSQL JSON.

use super::*;
use crate::loaders::GoldFormat;
use crate::metrics::ex::Mode;

const DEFOG_CSV: &str = "\
db_name,db_type,query_category,query,question,instructions,glossary
shop,sqlite,group_by,\"SELECT a FROM t;SELECT a, b FROM t; ;\",\"Which \"\"a\"\"?\",,
shop,sqlite,instruct,\"SELECT {t.a,t.b} FROM t GROUP BY {}\",Group it,Use table t only.,g
";

#[test]
fn defog_questions_split_alternatives_and_keep_column_sets() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "questions.csv", DEFOG_CSV);
    make_db(dir.path(), "shop.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::Defog);
    assert_eq!(bench.format.default_mode(), Mode::Defog);
    assert_eq!(bench.name, "questions");
    assert_eq!(bench.db_dir, dir.path());
    let [first, second] = &bench.cases[..] else {
        panic!("expected 2 cases, got {}", bench.cases.len());
    };
    assert_eq!(first.id, "0");
    assert_eq!(first.db, "shop");
    assert_eq!(first.gold, ["SELECT a FROM t", "SELECT a, b FROM t"]);
    assert_eq!(first.question, "Which \"a\"?");
    assert_eq!(first.evidence, None);
    assert!(first.feasible);
    assert_eq!(first.tags["category"], "group_by");
    assert_eq!(first.source.line, Some(2));
    assert_eq!(second.id, "1");
    assert_eq!(second.gold, ["SELECT {t.a,t.b} FROM t GROUP BY {}"]);
    assert_eq!(second.evidence.as_deref(), Some("Use table t only."));
    assert_eq!(second.source.record, 1);
    assert_eq!(second.source.line, Some(3));
}

#[test]
fn defog_columns_are_found_by_header_name() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "question,query,query_category,db_name\n\"Multi\nline?\",SELECT 1,ratio,shop\nSecond,SELECT 2,ratio,shop\n";
    let path = write(dir.path(), "q.csv", csv);
    make_db(dir.path(), "shop.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.cases[0].question, "Multi\nline?");
    assert_eq!(bench.cases[1].gold, ["SELECT 2"]);
    // The first record spans lines 2-3, so the second starts on line 4.
    assert_eq!(bench.cases[1].source.line, Some(4));
    assert_eq!(bench.cases[1].evidence, None);
}

/// Windows line ends (`\r\n`, as Python's csv module writes them) give the same lines.
#[test]
fn defog_records_with_crlf_line_ends_name_their_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "shop.sqlite");
    let csv = "question,query,query_category,db_name\r\n\"Multi\r\nline?\",SELECT 1,ratio,shop\r\n\
               Second,SELECT 2,ratio,shop\r\n";
    let bench = load_default(&write(dir.path(), "q.csv", csv)).unwrap();
    let lines: Vec<_> = bench.cases.iter().map(|c| c.source.line).collect();
    assert_eq!(lines, [Some(2), Some(4)]);
    let short =
        "question,query,query_category,db_name\r\nFirst,SELECT 1,ratio,shop\r\nSecond,x\r\n";
    let path = write(dir.path(), "short.csv", short);
    expect_error(
        load_default(&path),
        &path,
        Some(1),
        Some(3),
        &["expected 4 fields"],
    );
}

#[test]
fn defog_idk_file_is_detected_and_infeasible() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "question,instructions,query,db_name,query_category\n\
        What is love?,\"Return 'SELECT 'Sorry'' AS answer;' if unsure\",\"SELECT 'I''m sorry, no data.' AS answer;\",shop,cat_a\n\
        Why?,,select 'No.' as answer,shop,cat_b\n";
    let path = write(dir.path(), "idk.csv", csv);
    make_db(dir.path(), "shop.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::DefogIdk);
    for case in &bench.cases {
        assert!(!case.feasible);
        assert!(case.gold.is_empty());
    }
    assert_eq!(bench.cases[0].tags["category"], "cat_a");
    assert_eq!(
        bench.cases[0].tags["apology_sql"],
        "SELECT 'I''m sorry, no data.' AS answer;"
    );
    assert_eq!(
        bench.cases[0].evidence.as_deref(),
        Some("Return 'SELECT 'Sorry'' AS answer;' if unsure")
    );
    assert_eq!(bench.cases[1].tags["category"], "cat_b");
}

#[test]
fn defog_file_with_one_real_query_is_not_idk() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "db_name,query_category,query,question\nshop,x,SELECT 'No.' AS answer,Q\nshop,x,SELECT a FROM t,Q\n";
    let path = write(dir.path(), "mixed.csv", csv);
    make_db(dir.path(), "shop.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::Defog);
    assert!(bench.cases.iter().all(|c| c.feasible));
    assert_eq!(bench.cases[0].gold, ["SELECT 'No.' AS answer"]);
}

#[test]
fn defog_unbalanced_quote_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "db_name,query_category,query,question\nshop,x,SELECT 1,Q\nshop,x,\"SELECT 2,Q\n";
    let path = write(dir.path(), "broken.csv", csv);
    expect_error(
        load_default(&path),
        &path,
        None,
        Some(3),
        &["unbalanced double quote"],
    );
}

#[test]
fn defog_quote_left_open_mid_file_names_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("db_name,query_category,query,question\n");
    for n in 0..8 {
        csv.push_str(&format!("shop,x,\"SELECT {n}, \"\"a\"\"\",\"Q, {n}\"\n"));
    }
    csv.push_str("shop,x,\"SELECT 8,Q\n"); // line 10: never closed
    for n in 9..150 {
        csv.push_str(&format!("shop,x,\"SELECT {n}\",\"Q {n}\"\n"));
    }
    let path = write(dir.path(), "broken.csv", &csv);
    expect_error(
        load_default(&path),
        &path,
        None,
        Some(10),
        &["unbalanced double quote", "never closed"],
    );
}

#[test]
fn defog_short_row_names_its_record_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "db_name,query_category,query,question\nshop,x,SELECT 1,Q\nshop,x,SELECT 2\n";
    let path = write(dir.path(), "short.csv", csv);
    expect_error(
        load_default(&path),
        &path,
        Some(1),
        Some(3),
        &["expected 4 fields", "found 3"],
    );
}

#[test]
fn defog_missing_column_and_empty_query_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "nocat.csv",
        "db_name,query,question\nshop,SELECT 1,Q\n",
    );
    expect_error(
        load_default(&path),
        &path,
        None,
        Some(1),
        &["query_category"],
    );
    let path = write(
        dir.path(),
        "empty.csv",
        "db_name,query_category,query,question\nshop,x,\" ; ;\",Q\n",
    );
    expect_error(load_default(&path), &path, Some(0), Some(2), &["no SQL"]);
}

#[test]
fn defog_column_named_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "twice.csv",
        "db_name,query_category,query,question,query\nshop,x,SELECT 1,Q,SELECT 2\n",
    );
    expect_error(
        load_default(&path),
        &path,
        None,
        Some(1),
        &["column `query` twice"],
    );
}

#[test]
fn spider_gold_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "gold.txt",
        "SELECT count(*) FROM singer\tconcert\n  SELECT name FROM singer  \tconcert\nSELECT 1\tpets\n",
    );
    make_db(dir.path(), "concert/concert.sqlite");
    make_db(dir.path(), "pets.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::Spider);
    assert_eq!(bench.format.default_mode(), Mode::Testsuite);
    let ids: Vec<&str> = bench.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["0", "1", "2"]);
    assert_eq!(bench.cases[1].gold, ["SELECT name FROM singer  "]);
    assert_eq!(bench.cases[1].db, "concert");
    assert_eq!(bench.cases[2].db, "pets");
    // Spider cases carry their gold's hardness, and nothing else; these golds name a table the
    // test databases lack, so the parser cannot classify them.
    let hardness: Vec<&str> = bench
        .cases
        .iter()
        .map(|c| c.tags["hardness"].as_str())
        .collect();
    assert_eq!(hardness, ["unparsed", "unparsed", "unparsed"]);
    assert!(bench.cases.iter().all(|c| c.tags.len() == 1));
}

#[test]
fn spider_gold_blank_lines_make_interactions() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "sparc.txt",
        "SELECT 1\td\nSELECT 2\td\n\nSELECT 3\td\n",
    );
    make_db(dir.path(), "d.sqlite");
    let bench = load_default(&path).unwrap();
    let positions: Vec<(&str, &str, usize)> = bench
        .cases
        .iter()
        .map(|c| {
            (
                c.tags["interaction"].as_str(),
                c.tags["turn"].as_str(),
                c.source.line.unwrap(),
            )
        })
        .collect();
    assert_eq!(positions, [("0", "0", 1), ("0", "1", 2), ("1", "0", 4)]);
    assert_eq!(bench.cases[2].id, "2");
}

#[test]
fn spider_gold_line_without_db_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "gold.txt", "SELECT 1\td\nSELECT 2\n");
    expect_error(
        load_default(&path),
        &path,
        Some(1),
        Some(2),
        &["1 TAB-separated"],
    );
}

#[test]
fn bird_gold_sql_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "dev_gold.sql", "SELECT 1\tfinancial\n");
    make_db(dir.path(), "financial/financial.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::BirdSql);
    assert_eq!(bench.format.default_mode(), Mode::Bird);
    assert_eq!(bench.cases[0].db, "financial");
}

#[test]
fn spider_dev_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"[{"db_id": "d", "query": "SELECT 1", "query_toks": ["SELECT", "1"], "question": "One?", "sql": {}},
                   {"db_id": "d", "query": "SELECT 2", "question": "Two?"}]"#;
    let path = write(dir.path(), "dev.json", json);
    make_db(dir.path(), "d/d.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::SpiderJson);
    assert_eq!(bench.cases[1].id, "1");
    assert_eq!(bench.cases[1].question, "Two?");
    assert_eq!(bench.cases[1].gold, ["SELECT 2"]);
}

#[test]
fn bird_dev_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"[{"question_id": 7, "db_id": "d", "question": "Q?", "evidence": "rich = income > 1", "SQL": "SELECT 1", "difficulty": "simple"},
                   {"question_id": 9, "db_id": "d", "question": "R?", "evidence": "", "SQL": "SELECT 2", "difficulty": "challenging"}]"#;
    let path = write(dir.path(), "dev.json", json);
    make_db(dir.path(), "d/d.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::BirdJson);
    assert_eq!(bench.cases[0].id, "7");
    assert_eq!(
        bench.cases[0].evidence.as_deref(),
        Some("rich = income > 1")
    );
    assert_eq!(bench.cases[0].tags["difficulty"], "simple");
    assert_eq!(bench.cases[1].id, "9");
    assert_eq!(bench.cases[1].evidence, None);
    assert_eq!(bench.cases[1].tags["difficulty"], "challenging");
}

#[test]
fn trustsql_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"[
      {"id": "a1", "db_id": "atis", "question": "Flights?", "query": "SELECT 1", "type": "seen-sql", "note": "easy", "template": "x"},
      {"id": "a2", "db_id": "atis", "question": "Meaning of life?", "query": "null", "type": "inf", "note": "ext-know", "template": ""}
    ]"#;
    let path = write(dir.path(), "test.json", json);
    make_db(dir.path(), "atis/atis.sqlite");
    let bench = load_default(&path).unwrap();
    assert_eq!(bench.format, GoldFormat::Trustsql);
    assert_eq!(bench.format.default_mode(), Mode::Trustsql);
    let [feasible, infeasible] = &bench.cases[..] else {
        panic!("expected 2 cases");
    };
    assert!(feasible.feasible);
    assert_eq!(feasible.gold, ["SELECT 1"]);
    assert_eq!(feasible.tags["category"], "seen-sql:easy");
    assert_eq!(feasible.tags["type"], "seen-sql");
    assert!(!infeasible.feasible);
    assert!(infeasible.gold.is_empty());
    assert_eq!(infeasible.id, "a2");
    assert_eq!(infeasible.tags["category"], "inf:ext-know");
    assert_eq!(infeasible.tags["note"], "ext-know");
}

#[test]
fn json_gold_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "broken.json",
        "[\n{\"db_id\": \"d\",\n \"query\": }]",
    );
    expect_error(load_default(&path), &path, None, Some(3), &["column"]);
    let path = write(dir.path(), "keys.json", r#"[{"sql": "SELECT 1"}]"#);
    expect_error(
        load_default(&path),
        &path,
        Some(0),
        None,
        &["cannot tell", "sql"],
    );
    let path = write(
        dir.path(),
        "missing.json",
        r#"[{"db_id": "d", "query": "SELECT 1", "question": "Q"}, {"db_id": "d", "query": "SELECT 2"}]"#,
    );
    expect_error(load_default(&path), &path, Some(1), None, &["question"]);
    let path = write(dir.path(), "object.json", r#"{"a": 1}"#);
    expect_error(load_default(&path), &path, None, None, &["JSON list"]);
}

#[test]
fn duplicate_ids_name_both_records() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"[{"question_id": 3, "db_id": "d", "question": "Q", "SQL": "SELECT 1"},
                   {"question_id": 4, "db_id": "d", "question": "Q", "SQL": "SELECT 1"},
                   {"question_id": 3, "db_id": "d", "question": "Q", "SQL": "SELECT 2"}]"#;
    let path = write(dir.path(), "dev.json", json);
    make_db(dir.path(), "d.sqlite");
    expect_error(
        load_default(&path),
        &path,
        Some(2),
        None,
        &["duplicate id `3`", "record 0"],
    );
}

#[test]
fn unknown_database_names_the_case_and_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "gold.txt", "SELECT 1\td\nSELECT 2\tnowhere\n");
    make_db(dir.path(), "d.sqlite");
    let flat = dir.path().join("nowhere.sqlite");
    let nested = dir.path().join("nowhere").join("nowhere.sqlite");
    expect_error(
        load_default(&path),
        &path,
        Some(1),
        Some(2),
        &[
            "unknown database `nowhere`",
            &flat.display().to_string(),
            &nested.display().to_string(),
        ],
    );
}

#[test]
fn database_names_cannot_leave_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "outside.sqlite");
    let path = write(dir.path(), "suite/gold.txt", "SELECT 1\t../outside\n");
    expect_error(
        load_default(&path),
        &path,
        Some(0),
        Some(1),
        &["not a plain name"],
    );
}

#[test]
fn db_dir_option_and_testsuite_folder() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "gold.txt", "SELECT 1\tsuite\nSELECT 2\tflat\n");
    let dbs = dir.path().join("dbs");
    let main = make_db(&dbs, "suite/suite.sqlite");
    let variant = make_db(&dbs, "suite/suite_2.sqlite");
    // Sorts before the original by name, yet comes after it.
    let before = make_db(&dbs, "suite/suite-a.sqlite");
    write(&dbs, "suite/notes.txt", "not a database");
    std::fs::create_dir_all(dbs.join("suite/old.sqlite.d")).unwrap();
    let flat = make_db(&dbs, "flat.sqlite");
    make_db(&dbs, "other.sqlite");
    // Without the option the databases are looked for beside the gold file.
    expect_error(
        load_default(&path),
        &path,
        Some(0),
        None,
        &["unknown database `suite`"],
    );
    let options = LoadOptions {
        db_dir: Some(dbs.clone()),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = load(&path, &options).unwrap();
    let [nested_case, flat_case] = &bench.cases[..] else {
        panic!("expected 2 cases");
    };
    assert_eq!(
        bench.db_files(nested_case, false).unwrap(),
        std::slice::from_ref(&main)
    );
    assert_eq!(
        bench.db_files(nested_case, true).unwrap(),
        [main.clone(), before, variant]
    );
    // In the flat layout the folder holds other databases: only the case's own counts.
    assert_eq!(bench.db_files(flat_case, true).unwrap(), [flat]);
    // A side file is not a database: listing the folder fails, naming it.
    let journal = write(&dbs, "suite/suite.sqlite-journal", "");
    expect_error(
        bench.db_files(nested_case, true),
        &journal,
        None,
        None,
        &["rollback journal of `suite.sqlite`"],
    );
    assert_eq!(bench.db_files(nested_case, false).unwrap(), [main]);
}

#[test]
fn format_override_and_unknown_extension() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "d.sqlite");
    let path = write(dir.path(), "gold.tsv", "SELECT 1\td\n");
    expect_error(load_default(&path), &path, None, None, &["`tsv`"]);
    let options = LoadOptions {
        format: Some(GoldFormat::Spider),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = load(&path, &options).unwrap();
    assert_eq!(bench.cases[0].gold, ["SELECT 1"]);
    // Forcing idk on a questions file makes its rows infeasible.
    let csv = write(
        dir.path(),
        "q.csv",
        "db_name,query_category,query,question\nd,x,SELECT 1,Q\n",
    );
    let options = LoadOptions {
        format: Some(GoldFormat::DefogIdk),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    let bench = load(&csv, &options).unwrap();
    assert!(!bench.cases[0].feasible);
    assert_eq!(bench.cases[0].tags["apology_sql"], "SELECT 1");
}

#[test]
fn empty_and_unreadable_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "gold.txt", "\n\n");
    expect_error(load_default(&path), &path, None, None, &["no cases"]);
    let missing = dir.path().join("absent.txt");
    expect_error(
        load_default(&missing),
        &missing,
        None,
        None,
        &["cannot read"],
    );
    let path = dir.path().join("latin1.txt");
    std::fs::write(&path, b"SELECT 1\td\nSELECT '\xe9'\td\n").unwrap();
    expect_error(load_default(&path), &path, None, Some(2), &["UTF-8"]);
}

#[test]
fn tables_json_is_given_or_found_beside_the_gold() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "d.sqlite");
    let path = write(dir.path(), "gold.txt", "SELECT 1\td\n");
    assert_eq!(load_default(&path).unwrap().tables, None);
    let tables = write(dir.path(), "tables.json", "[]");
    assert_eq!(load_default(&path).unwrap().tables, Some(tables));
    let missing = dir.path().join("nope.json");
    let options = LoadOptions {
        tables: Some(missing.clone()),
        ..LoadOptions::on(sqlgate_engine_sqlite::files())
    };
    expect_error(load(&path, &options), &missing, None, None, &["not found"]);
}

#[test]
fn odd_inputs_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    make_db(dir.path(), "d.sqlite");
    let texts = [
        "",
        "\u{feff}",
        "\"",
        "[",
        "[1, null]",
        "{}",
        "[{}]",
        "é\tà\n\n\n\t\n",
        "a,b\n\"x\"\"y,\n",
        "db_name,query_category,query,question\nd,x,;;;,\"é\"\n",
        "name = 'x'\ncases = '../../../../nonexistent'\n",
        "[databases.'../x']\nscripts = ['a']\n",
        "{\"id\": \"é\", \"db\": \"d\", \"question\": \"\", \"gold\": \"x\"}",
    ];
    for (i, text) in texts.iter().enumerate() {
        let path = write(dir.path(), &format!("odd{i}.txt"), text);
        for format in GoldFormat::ALL {
            let options = LoadOptions {
                format: Some(format),
                ..LoadOptions::on(sqlgate_engine_sqlite::files())
            };
            // Either outcome is fine; an error must still name the file.
            if let Err(error) = load(&path, &options) {
                assert!(!error.message.is_empty());
            }
        }
    }
}
