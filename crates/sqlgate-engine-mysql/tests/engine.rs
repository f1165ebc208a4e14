//! The MySQL engine against a real MariaDB server: hostile SQL refused or bounded with the
//! database unchanged, values, bounds, errors, catalog, plans, costs and the writer.

mod common;

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::{backend, open};
use sqlgate_engine::{
    Backend, Driver, ExecErrorKind, Feature, Limits, Open, Settings, Source, Value,
};
use sqlgate_engine_mysql::DRIVER;
use sqlgate_test_support::mariadb::{self, MariaDb};

const DB: &str = "shop";

/// The shared server with the database `shop`, readable by the reader.
fn server() -> Option<&'static MariaDb> {
    static READY: OnceLock<Option<&'static MariaDb>> = OnceLock::new();
    *READY.get_or_init(|| {
        let server = mariadb::shared()?;
        let writer = backend(server, mariadb::WRITER);
        let mut shop = writer.create(Path::new(DB)).unwrap();
        shop.execute_batch(
            "CREATE TABLE customer (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE, \
                                    joined DATE, last_seen DATETIME(6), opens TIME, \
                                    balance DECIMAL(10,2), score FLOAT, ratio DOUBLE, \
                                    vip BOOLEAN, flags BIT(4), tier ENUM('gold','silver'), \
                                    tags SET('a','b'), doc JSON, photo BLOB, big BIGINT UNSIGNED, \
                                    note TEXT CHARACTER SET latin1); \
             CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT NOT NULL, amount INT, \
                                  FOREIGN KEY (customer_id) REFERENCES customer (id)); \
             INSERT INTO customer VALUES \
               (1, 'Ada', '2020-01-05', '2020-01-05 10:00:00.5', '08:30:00', 12.50, 1.1, 0.25, \
                TRUE, b'101', 'gold', 'a,b', '{\"k\": 1}', x'00ff', 18446744073709551615, 'x'), \
               (2, 'Bob', NULL, NULL, '-30:00:00', -1, NULL, NULL, FALSE, b'0', NULL, '', NULL, \
                NULL, 3, NULL); \
             INSERT INTO orders VALUES (10, 1, 5), (11, 1, 7), (12, 2, 1);",
        )
        .unwrap();
        shop.finish().unwrap();
        server.add_reader(DB);
        Some(server)
    })
}

fn limits(timeout_secs: u64) -> Limits {
    Limits {
        timeout: Some(Duration::from_secs(timeout_secs)),
        ..Limits::default()
    }
}

#[test]
fn values_follow_the_sqlite_model() {
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    let set = conn
        .execute(
            "SELECT id, name, joined, last_seen, opens, balance, score, ratio, vip, flags, tier, \
                    tags, doc, photo, big, note, id > 1 FROM customer ORDER BY id;",
            &limits(30),
        )
        .result
        .unwrap();
    let text = |s: &str| Value::Text(s.to_string());
    let expected = [
        vec![
            Value::Int(1),
            text("Ada"),
            text("2020-01-05"),
            text("2020-01-05 10:00:00.500000"),
            text("08:30:00"),
            Value::Real(12.5),
            Value::Real(1.1),
            Value::Real(0.25),
            Value::Int(1),
            text("101"),
            text("gold"),
            text("a,b"),
            text("{\"k\": 1}"),
            Value::Blob(vec![0, 255]),
            Value::Real(18446744073709551615.0),
            text("x"),
            Value::Int(0),
        ],
        vec![
            Value::Int(2),
            text("Bob"),
            Value::Null,
            Value::Null,
            text("-30:00:00"),
            Value::Real(-1.0),
            Value::Null,
            Value::Null,
            Value::Int(0),
            text("0"),
            Value::Null,
            text(""),
            Value::Null,
            Value::Null,
            Value::Int(3),
            Value::Null,
            Value::Int(1),
        ],
    ];
    assert_eq!(set.columns[0], "id");
    assert_eq!(set.columns.len(), 17);
    for (row, expected) in set.rows.iter().zip(&expected) {
        for (i, (got, want)) in row.iter().zip(expected).enumerate() {
            assert!(
                got == want && std::mem::discriminant(got) == std::mem::discriminant(want),
                "column {}: {got:?} is not {want:?}",
                set.columns[i]
            );
        }
    }
    assert_eq!(set.rows.len(), 2);
    assert!(!set.lossy_text);
}

/// Every hostile statement, as a user that may read only and as one that may do anything:
/// refused (or bounded), and the database the same afterwards.
#[test]
fn hostile_sql_is_refused_or_bounded_and_changes_nothing() {
    let Some(server) = server() else { return };
    let refused = [
        "INSERT INTO customer (id, name) VALUES (9, 'Eve')",
        "UPDATE customer SET name = 'Eve'",
        "DELETE FROM orders",
        "CREATE TABLE evil (a INT)",
        "DROP TABLE orders",
        "ALTER TABLE customer ADD evil INT",
        "TRUNCATE TABLE orders",
        "SET GLOBAL max_connections = 1",
        "SET SESSION sql_mode = ''",
        "SET SESSION TRANSACTION READ WRITE",
        "LOAD DATA INFILE '/etc/passwd' INTO TABLE customer",
        "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE customer",
        "SELECT * FROM customer INTO OUTFILE '/tmp/sqlgate-evil'",
        "SELECT name FROM customer LIMIT 1 INTO DUMPFILE '/tmp/sqlgate-evil'",
        "SELECT LOAD_FILE('/etc/passwd')",
        "CALL mysql.evil()",
        "LOCK TABLES customer WRITE",
        "GRANT ALL PRIVILEGES ON *.* TO sqlgate_reader@'%'",
        "SELECT 1; DROP TABLE orders",
        "SELECT 1; DELETE FROM orders;",
        "SELECT 1 /*!, (SELECT 1) */",
        "SELECT * FROM customer FOR UPDATE",
        "REPLACE INTO orders VALUES (10, 1, 5)",
        "CREATE DATABASE evil",
        "DROP DATABASE shop",
        "KILL 1",
        "SELECT @x := 1",
        "HANDLER customer OPEN",
    ];
    let before = server.fingerprint(DB);
    for user in [mariadb::READER, mariadb::WRITER] {
        let engine = backend(server, user);
        let mut conn = open(&engine, DB);
        for sql in refused {
            let error = conn.execute(sql, &limits(10)).result.unwrap_err();
            assert_eq!(
                error.kind,
                ExecErrorKind::Denied,
                "{user}: {sql}: {}",
                error.message
            );
        }
        // Bounded: a second, then a timeout within a few.
        let bound = Limits {
            timeout: Some(Duration::from_secs(1)),
            ..Limits::default()
        };
        for sql in [
            "SELECT SLEEP(100)",
            "SELECT COUNT(*) FROM information_schema.COLUMNS a, information_schema.COLUMNS b, \
             information_schema.COLUMNS c",
        ] {
            let start = Instant::now();
            let error = conn.execute(sql, &bound).result.unwrap_err();
            assert_eq!(
                error.kind,
                ExecErrorKind::Timeout,
                "{user}: {sql}: {}",
                error.message
            );
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{sql}: {:?}",
                start.elapsed()
            );
        }
        // The connection stays usable after a timeout.
        let set = conn
            .execute("SELECT COUNT(*) FROM orders", &bound)
            .result
            .unwrap();
        assert_eq!(set.rows, [vec![Value::Int(3)]]);
        // The session is read-only, whatever the user may do.
        let set = conn
            .execute("SELECT @@session.tx_read_only", &bound)
            .result
            .unwrap();
        assert_eq!(set.rows, [vec![Value::Int(1)]], "{user}");
    }
    assert_eq!(server.fingerprint(DB), before);
    // The bounds docs/mysql-reader.sql gives the reader, whatever the client.
    let bounds = server.sql(
        "SELECT max_statement_time, max_user_connections FROM mysql.user \
         WHERE user = 'sqlgate_reader'",
    );
    assert_eq!(bounds, "60.000000\t64\n");
    assert!(before.contains("shop.orders\t"), "{before}");
    assert!(!server.sql("SHOW DATABASES").lines().any(|db| db == "evil"));
    assert!(!Path::new("/tmp/sqlgate-evil").exists());
}

#[test]
fn a_huge_result_stops_at_its_bounds_without_being_read_whole() {
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    // About 10^13 rows: only stopping the statement on the server ends it in time.
    let huge = "SELECT a.COLUMN_NAME, b.COLUMN_NAME FROM information_schema.COLUMNS a, \
                information_schema.COLUMNS b, information_schema.COLUMNS c, \
                information_schema.COLUMNS d";
    for (bounds, message) in [
        (
            Limits {
                max_rows: 1000,
                ..limits(120)
            },
            "more than 1000 rows",
        ),
        (
            Limits {
                max_bytes: 100_000,
                ..limits(120)
            },
            "more than 100000 bytes",
        ),
    ] {
        let start = Instant::now();
        let error = conn.execute(huge, &bounds).result.unwrap_err();
        assert_eq!(error.kind, ExecErrorKind::TooLarge, "{}", error.message);
        assert!(error.message.contains(message), "{}", error.message);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            start.elapsed()
        );
        // The next statement runs on a fresh session.
        let set = conn.execute("SELECT 1", &bounds).result.unwrap();
        assert_eq!(set.rows, [vec![Value::Int(1)]]);
    }
}

#[test]
fn every_reading_statement_runs() {
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    for (sql, rows) in [
        ("SHOW TABLES", 2),
        ("DESCRIBE orders", 3),
        ("DESC orders", 3),
        ("EXPLAIN SELECT * FROM orders", 1),
        ("WITH c AS (SELECT id FROM orders) SELECT * FROM c", 3),
        (
            "(SELECT id FROM orders) UNION ALL (SELECT id FROM customer)",
            5,
        ),
        ("VALUES (1), (2)", 2),
        (
            "/* a comment */ SELECT `name` FROM customer -- and another",
            2,
        ),
        ("SELECT 'it''s; DROP TABLE orders' AS `into`;", 1),
    ] {
        let set = conn
            .execute(sql, &limits(30))
            .result
            .unwrap_or_else(|e| panic!("{sql}: {}", e.message));
        assert_eq!(set.rows.len(), rows, "{sql}");
    }
}

#[test]
fn a_session_the_server_closed_is_replaced() {
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    let id = conn
        .execute("SELECT CONNECTION_ID()", &limits(30))
        .result
        .unwrap();
    server.sql(&format!(
        "KILL {}",
        sqlgate_engine::catalog::text(&id.rows[0][0])
    ));
    let set = conn
        .execute("SELECT CONNECTION_ID()", &limits(30))
        .result
        .unwrap();
    assert_ne!(set.rows, id.rows);
}

#[test]
fn errors_are_classified_and_name_the_database() {
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    for (sql, kind) in [
        ("SELECT nope FROM customer", ExecErrorKind::Prepare),
        ("SELEC 1", ExecErrorKind::Denied),
        ("SELECT * FROM nowhere", ExecErrorKind::Prepare),
        ("SELECT 'a", ExecErrorKind::Prepare),
        ("SELECT * FROM mysql.user", ExecErrorKind::Denied),
        ("SELECT ?", ExecErrorKind::Prepare),
    ] {
        let error = conn.execute(sql, &limits(10)).result.unwrap_err();
        assert_eq!(error.kind, kind, "{sql}: {}", error.message);
    }
    // A database the user may not read, or that does not exist.
    let error = reader
        .open(Path::new("mysql"), Open::for_source(Source::Gold))
        .err()
        .unwrap();
    assert_eq!(error.kind, ExecErrorKind::Unavailable);
    let url = format!("mysql://sqlgate_reader@127.0.0.1:{}/mysql", server.port());
    assert!(error.message.contains(&url), "{}", error.message);
    let error = reader
        .open(Path::new("a/b"), Open::for_source(Source::Gold))
        .err()
        .unwrap();
    assert!(
        error.message.contains("not a MySQL database name"),
        "{}",
        error.message
    );
    let error = reader
        .open(
            Path::new(DB),
            Open {
                source: Source::Gold,
                reverse_unordered: true,
            },
        )
        .err()
        .unwrap();
    assert!(
        error
            .message
            .contains("engine `mysql` does not support reversing"),
        "{}",
        error.message
    );
}

#[test]
fn settings_are_checked() {
    let connect = |dsn: Option<&str>, password_env: Option<&str>| {
        DRIVER
            .connect(&Settings {
                dsn,
                password_env,
                ..Settings::default()
            })
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default()
    };
    assert!(connect(None, None).contains("needs `dsn`"));
    assert!(connect(Some("mysql://r@127.0.0.1/shop"), None).contains("lacks `{db}`"));
    assert!(connect(Some("mysql://r:secret@127.0.0.1/{db}"), None).contains("holds a password"));
    assert!(connect(Some("postgres://r@127.0.0.1/{db}"), None).contains("does not parse"));
    // The password's variable is read when connecting, and named when unset.
    let engine = DRIVER
        .connect(&Settings {
            dsn: Some("mysql://r@127.0.0.1:1/{db}"),
            password_env: Some("SQLGATE_TEST_UNSET_MYSQL_PASSWORD"),
            ..Settings::default()
        })
        .unwrap();
    let error = engine
        .open(Path::new("shop"), Open::for_source(Source::Gold))
        .err()
        .unwrap();
    assert_eq!(error.kind, ExecErrorKind::Unavailable);
    assert!(
        error
            .message
            .contains("SQLGATE_TEST_UNSET_MYSQL_PASSWORD (the MySQL password) is not set"),
        "{}",
        error.message
    );
    // Nothing listens: the connection is refused, the URL named.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let template = format!("mysql://reader@127.0.0.1:{port}/{{db}}");
    let engine = DRIVER
        .connect(&Settings {
            dsn: Some(&template),
            password_env: None,
            ..Settings::default()
        })
        .unwrap();
    let error = engine
        .open(Path::new("shop"), Open::for_source(Source::Gold))
        .err()
        .unwrap();
    assert_eq!(error.kind, ExecErrorKind::Unavailable);
    assert!(
        error.message.contains(&format!(
            "cannot connect to mysql://reader@127.0.0.1:{port}/shop"
        )),
        "{}",
        error.message
    );
}

#[test]
fn the_dialect_is_described() {
    assert_eq!(DRIVER.name(), "mysql");
    assert_eq!(DRIVER.parser_dialect(), "mysql");
    assert_eq!(DRIVER.quote("a`b"), "`a``b`");
    assert!(DRIVER.supports(Feature::Explain) && DRIVER.supports(Feature::Cost));
    assert!(DRIVER.supports(Feature::Create));
    assert!(!DRIVER.supports(Feature::ReverseUnordered) && !DRIVER.supports(Feature::Fingerprint));
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    let schema = DRIVER
        .catalog(&mut |sql: &str| {
            conn.execute(sql, &limits(30))
                .result
                .map(|s| s.rows.clone())
        })
        .unwrap();
    let names: Vec<&str> = schema.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["customer", "orders"]);
    let customer = &schema.tables[0];
    assert_eq!(customer.columns.len(), 16);
    let id = &customer.columns[0];
    assert!(id.primary_key && id.decl_type == "int(11)", "{id:?}");
    let name = &customer.columns[1];
    assert!(
        !name.primary_key && name.not_null && name.decl_type == "varchar(40)",
        "{name:?}"
    );
    assert!(!customer.columns[2].not_null);
    assert_eq!(schema.foreign_keys.len(), 1);
    assert_eq!(schema.foreign_keys[0].from.key(), "orders.customer_id");
    assert_eq!(schema.foreign_keys[0].to.key(), "customer.id");
    // The unique columns: the single-column keys.
    let unique = conn
        .execute(&DRIVER.unique_columns_query().unwrap(), &limits(30))
        .result
        .unwrap();
    let unique: Vec<String> = unique
        .rows
        .iter()
        .map(|row| {
            format!(
                "{}.{}",
                sqlgate_engine::catalog::text(&row[0]),
                sqlgate_engine::catalog::text(&row[1])
            )
        })
        .collect();
    assert_eq!(unique, ["customer.id", "customer.name", "orders.id"]);
    // Rule 17's guard: text that is not an ISO date.
    let guard = format!(
        "SELECT name FROM customer WHERE {} ORDER BY id",
        DRIVER.not_iso_date("`joined`")
    );
    assert!(conn
        .execute(&guard, &limits(30))
        .result
        .unwrap()
        .rows
        .is_empty());
    let guard = format!(
        "SELECT id FROM customer WHERE {}",
        DRIVER.not_iso_date("`name`")
    );
    assert_eq!(
        conn.execute(&guard, &limits(30)).result.unwrap().rows.len(),
        2
    );
    // A plan, through the sandbox like any query.
    let plan = conn
        .execute(
            &DRIVER
                .explain("SELECT * FROM orders WHERE id = 10")
                .unwrap(),
            &limits(30),
        )
        .result
        .unwrap();
    assert!(!plan.rows.is_empty() && plan.columns.contains(&"select_type".to_string()));
    let error = conn
        .execute(&DRIVER.explain("DELETE FROM orders").unwrap(), &limits(30))
        .result
        .unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Denied);
}

#[test]
fn cost_is_the_planned_cost() {
    let Some(server) = server() else { return };
    let reader = backend(server, mariadb::READER);
    let mut conn = open(&reader, DB);
    let one = conn.cost("SELECT * FROM orders", &limits(30)).unwrap();
    let join = conn
        .cost(
            "SELECT * FROM orders o JOIN customer c ON c.id = o.customer_id JOIN orders p",
            &limits(30),
        )
        .unwrap();
    assert!(one > 0.0 && join > one, "{one} {join}");
    // The same plan, the same cost: it depends on the database and the SQL only.
    assert_eq!(conn.cost("SELECT * FROM orders", &limits(30)).unwrap(), one);
    // No cost for a UNION: refused, not zero.
    let error = conn
        .cost(
            "SELECT id FROM orders UNION SELECT id FROM customer",
            &limits(30),
        )
        .unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Unavailable);
    assert!(error.message.contains("no cost"), "{}", error.message);
    let error = conn.cost("DELETE FROM orders", &limits(30)).unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Denied);
    let error = conn
        .cost("SELECT nope FROM orders", &limits(30))
        .unwrap_err();
    assert_eq!(error.kind, ExecErrorKind::Prepare, "{}", error.message);
}

#[test]
fn the_writer_creates_new_databases_only_and_drops_unfinished_ones() {
    let Some(server) = server() else { return };
    let writer: Arc<dyn Backend> = backend(server, mariadb::WRITER);
    let error = writer.create(Path::new(DB)).err().unwrap();
    assert!(
        error.message.contains("cannot create the database"),
        "{}",
        error.message
    );
    let reader = backend(server, mariadb::READER);
    let error = reader.create(Path::new("sneaky")).err().unwrap();
    assert!(error.message.contains("Access denied"), "{}", error.message);
    {
        let mut half = writer.create(Path::new("half")).unwrap();
        half.execute_batch("CREATE TABLE t (a INT)").unwrap();
        // An error in any statement of a batch is returned.
        let error = half
            .execute_batch("CREATE TABLE u (a INT); CREATE TABLE t (a INT)")
            .unwrap_err();
        assert!(
            error.message.contains("already exists"),
            "{}",
            error.message
        );
    }
    let listed = server.sql("SHOW DATABASES");
    assert!(!listed.lines().any(|db| db.starts_with("half")), "{listed}");
    // Room for the staging suffix: 47 characters at most.
    let long = "x".repeat(48);
    let error = writer.create(Path::new(&long)).err().unwrap();
    assert!(
        error.message.contains("at most 47 characters"),
        "{}",
        error.message
    );
    // A name with characters that mean something in a URL or to MySQL.
    let odd = "odd `name`?#'x";
    let mut created = writer.create(Path::new(odd)).unwrap();
    created
        .execute_batch("CREATE TABLE t (a INT); INSERT INTO t VALUES (7)")
        .unwrap();
    created.finish().unwrap();
    server.add_reader(odd);
    let set = open(&reader, odd)
        .execute("SELECT a, DATABASE() FROM t", &limits(30))
        .result
        .unwrap();
    assert_eq!(set.rows, [vec![Value::Int(7), Value::Text(odd.into())]]);
    // Rows of every kind, in batches.
    let mut copy = writer.create(Path::new("typed")).unwrap();
    let table = sqlgate_engine::catalog::Table {
        name: "t".into(),
        columns: ["k TEXT", "i INTEGER", "r REAL", "b BLOB", "d DATE", "any "]
            .iter()
            .map(|spec| {
                let (name, ty) = spec.split_once(' ').unwrap();
                sqlgate_engine::catalog::Column {
                    name: name.into(),
                    decl_type: ty.into(),
                    primary_key: name == "k",
                    not_null: false,
                }
            })
            .collect(),
    };
    copy.create_table(&table, &[]).unwrap();
    let columns: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
    let rows: Vec<Vec<Value>> = (0..20_000)
        .map(|i| {
            vec![
                Value::Text(format!("k{i}")),
                Value::Int(i),
                Value::Real(i as f64 / 4.0),
                Value::Blob(vec![i as u8]),
                Value::Text("2020-02-29".into()),
                Value::Null,
            ]
        })
        .collect();
    copy.insert("t", &columns, &rows).unwrap();
    // A refused row (a duplicate key) is a runtime error, and leaves none of its batch in;
    // a table that is not there means the database cannot be written.
    let duplicate = vec![rows[0].clone()];
    let fresh = vec![
        Value::Text("new".into()),
        Value::Int(0),
        Value::Null,
        Value::Null,
        Value::Null,
        Value::Null,
    ];
    let error = copy
        .insert("t", &columns, &[fresh, duplicate[0].clone()])
        .unwrap_err();
    assert_eq!(
        error.kind,
        sqlgate_engine::ExecErrorKind::Runtime,
        "{}",
        error.message
    );
    let error = copy.insert("nowhere", &columns, &duplicate).unwrap_err();
    assert_eq!(
        error.kind,
        sqlgate_engine::ExecErrorKind::Unavailable,
        "{}",
        error.message
    );
    copy.finish().unwrap();
    server.add_reader("typed");
    let mut conn = open(&reader, "typed");
    let set = conn
        .execute(
            "SELECT COUNT(*), SUM(i), SUM(r), MAX(d) FROM t",
            &limits(30),
        )
        .result
        .unwrap();
    assert_eq!(
        set.rows,
        [vec![
            Value::Int(20_000),
            Value::Real(199_990_000.0),
            Value::Real(49_997_500.0),
            Value::Text("2020-02-29".into())
        ]]
    );
}
