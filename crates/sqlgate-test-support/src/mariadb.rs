//! A real MariaDB server for tests: `mariadb-install-db` into a temporary folder, `mariadbd` on
//! a free port of 127.0.0.1 with its socket in that folder (as the OS user `mysql` when this
//! process is root, as the PostgreSQL helper does), stopped when dropped (also while a panic
//! unwinds) or, for the shared server of a test binary, when the process exits.
//!
//! Where MariaDB is not installed the caller skips, counted by [`crate::skip`], unless
//! `SQLGATE_REQUIRE_TOOLS` is set (as under CI), in which case this panics.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::server::{checked, free_port, give_to, path_str};

/// The read-only user, set up per database by `docs/mysql-reader.sql` ([`MariaDb::add_reader`]).
pub const READER: &str = "sqlgate_reader";
/// The user state cases' scratch copies are made by, set up per database by
/// `docs/mysql-scratch.sql` ([`MariaDb::add_scratch`]).
pub const SCRATCH: &str = "sqlgate_scratch";
/// A user that may do anything (create databases, write): for loading, and for showing that the
/// engine's sandbox holds by itself.
pub const WRITER: &str = "sqlgate_writer";

/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running server; stopped on drop.
pub struct MariaDb {
    /// Holds `data/`, the socket, the pid file and the log; removed on drop.
    dir: tempfile::TempDir,
    client: PathBuf,
    port: u16,
    /// `mariadbd`, or `runuser` running it; killed and reaped when the server stops.
    server: Mutex<Child>,
}

impl MariaDb {
    /// Starts a new server with the [`WRITER`] user, or `None` (printed as skipped) when
    /// MariaDB is missing.
    pub fn start() -> Option<MariaDb> {
        let programs = ["mariadbd", "mariadb-install-db", "mariadb"].map(program);
        let [Some(daemon), Some(install), Some(client)] = programs else {
            crate::skip::without_tool(
                "MariaDB (mariadbd, mariadb-install-db, mariadb: Debian's `mariadb-server` package)",
            );
            return None;
        };
        // SAFETY: geteuid has no preconditions.
        let run_as = (unsafe { libc::geteuid() } == 0).then_some("mysql");
        let dir = tempfile::Builder::new()
            .prefix("sqlgate-mariadb-")
            .tempdir()
            .expect("a temporary folder for MariaDB");
        if let Some(user) = run_as {
            give_to(dir.path(), user);
        }
        let at = |name: &str| dir.path().join(name);
        // A temporary folder of its own: a MariaDB server starting removes the `#sql*` files
        // of its temporary folder, which another server sharing /tmp is still using.
        std::fs::create_dir(at("tmp")).expect("MariaDB's temporary folder");
        if let Some(user) = run_as {
            give_to(&at("tmp"), user);
        }
        let log = at("server.log");
        let mut command = as_user(run_as, &install);
        command.args([
            "--no-defaults",
            &format!("--datadir={}", path_str(&at("data"))),
            &format!("--tmpdir={}", path_str(&at("tmp"))),
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            "--lower-case-table-names=1",
        ]);
        checked("mariadb-install-db", &mut command, None);
        let port = free_port();
        let log_file = std::fs::File::create(&log).expect("the MariaDB log");
        let server = as_user(run_as, &daemon)
            .args([
                "--no-defaults".to_string(),
                format!("--datadir={}", path_str(&at("data"))),
                format!("--tmpdir={}", path_str(&at("tmp"))),
                format!("--socket={}", path_str(&at("mysqld.sock"))),
                format!("--pid-file={}", path_str(&at("mysqld.pid"))),
                format!("--port={port}"),
                "--bind-address=127.0.0.1".to_string(),
                "--skip-name-resolve".to_string(),
                // Table names compare case-insensitively, as in SQLite and PostgreSQL (the
                // Defog golds write `DOMAIN` for `domain`); set when the data folder is made.
                "--lower-case-table-names=1".to_string(),
                "--skip-log-bin".to_string(),
                "--innodb-flush-log-at-trx-commit=0".to_string(),
                "--innodb-buffer-pool-size=64M".to_string(),
                // Table statistics change only by ANALYZE TABLE, never in the background in the
                // middle of a test: costs stay put, and a copy without ANALYZE shows.
                "--innodb-stats-auto-recalc=OFF".to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("the MariaDB log"))
            .stderr(log_file)
            .spawn()
            .expect("cannot run mariadbd");
        let server = MariaDb {
            dir,
            client,
            port,
            server: Mutex::new(server),
        };
        server.wait_until_ready();
        server.sql(&format!(
            "CREATE USER {WRITER}@'%'; GRANT ALL PRIVILEGES ON *.* TO {WRITER}@'%'"
        ));
        Some(server)
    }

    /// The server's error log so far, for a failure's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL template (`{db}`) of `user`, as the engine's `dsn` takes it.
    pub fn template(&self, user: &str) -> String {
        format!("mysql://{user}@127.0.0.1:{}/{{db}}", self.port)
    }

    /// Runs `sql` as the server's `root` over its socket, stopping at the first error, and
    /// returns what it printed (tab-separated rows, no header).
    pub fn sql(&self, sql: &str) -> String {
        let mut command = Command::new(&self.client);
        command
            .arg("--no-defaults")
            .arg(format!(
                "--socket={}",
                path_str(&self.dir.path().join("mysqld.sock"))
            ))
            .args(["--user=root", "--batch", "--skip-column-names", "-e", sql]);
        let output = checked("mariadb", &mut command, None);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Applies the documented read-only user setup (`docs/mysql-reader.sql`) to `db`, the
    /// [`READER`] without a password.
    pub fn add_reader(&self, db: &str) {
        let script = crate::repo_root().join("docs/mysql-reader.sql");
        let script = std::fs::read_to_string(&script).expect("docs/mysql-reader.sql");
        self.sql(&format!(
            "SET @db = '{}', @password = '';\n{script}",
            db.replace('\'', "''")
        ));
    }

    /// Applies the documented scratch user setup (`docs/mysql-scratch.sql`) to `db`, the
    /// [`SCRATCH`] user without a password.
    pub fn add_scratch(&self, db: &str) {
        let script = crate::repo_root().join("docs/mysql-scratch.sql");
        let script = std::fs::read_to_string(&script).expect("docs/mysql-scratch.sql");
        self.sql(&format!(
            "SET @db = '{}', @password = '';\n{script}",
            db.replace('\'', "''")
        ));
    }

    /// The names of sqlgate's scratch databases on the server.
    pub fn scratch_databases(&self) -> Vec<String> {
        self.sql(
            "SELECT schema_name FROM information_schema.schemata \
             WHERE schema_name LIKE 'sqlgate\\_scratch\\_%' ORDER BY 1",
        )
        .lines()
        .map(str::to_string)
        .collect()
    }

    /// Everything a write could change in `db`, as text: each table's `SHOW CREATE TABLE` and
    /// its `CHECKSUM TABLE ... EXTENDED`.
    pub fn fingerprint(&self, db: &str) -> String {
        let mut text = String::new();
        let tables = self.sql(&format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = '{}' \
             ORDER BY 1",
            db.replace('\'', "''")
        ));
        let db = quoted(db);
        for table in tables.lines() {
            let table = format!("{db}.{}", quoted(table));
            text.push_str(&self.sql(&format!(
                "SHOW CREATE TABLE {table}; CHECKSUM TABLE {table} EXTENDED"
            )));
        }
        text
    }

    fn wait_until_ready(&self) {
        let started = Instant::now();
        let socket = self.dir.path().join("mysqld.sock");
        loop {
            let exited = self.server.lock().unwrap().try_wait().ok().flatten();
            if let Some(status) = exited {
                panic!("mariadbd exited ({status}):\n{}", self.log());
            }
            let ping = Command::new(&self.client)
                .arg("--no-defaults")
                .arg(format!("--socket={}", path_str(&socket)))
                .args(["--user=root", "-e", "SELECT 1"])
                .output();
            if ping.is_ok_and(|output: Output| output.status.success()) {
                return;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "mariadbd did not accept connections within {START_TIMEOUT:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&self) {
        // `runuser` does not pass signals on: the server's own pid is in its pid file.
        let pid = std::fs::read_to_string(self.dir.path().join("mysqld.pid"))
            .ok()
            .and_then(|pid| pid.trim().parse::<libc::pid_t>().ok());
        // Best effort: a drop while panicking must not panic again.
        let mut server = self.server.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pid) = pid {
            // SAFETY: sends a signal to the server this value started; no pointers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = server.kill();
        let _ = server.wait();
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One server for the whole test binary, stopped when the process exits; `None` (printed as
/// skipped) when MariaDB is missing.
pub fn shared() -> Option<&'static MariaDb> {
    static SERVER: OnceLock<Option<MariaDb>> = OnceLock::new();
    extern "C" fn stop_at_exit() {
        if let Some(Some(server)) = SERVER.get() {
            server.stop();
            let _ = std::fs::remove_dir_all(server.dir.path());
        }
    }
    SERVER
        .get_or_init(|| {
            let server = MariaDb::start()?;
            // SAFETY: registers a plain function; statics are never dropped, so this is what
            // stops the server and removes its folder.
            unsafe { libc::atexit(stop_at_exit) };
            Some(server)
        })
        .as_ref()
}

/// `name` as a MySQL identifier in backticks.
pub fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `program` on the `PATH` or in `/usr/sbin` (where Debian puts `mariadbd`).
fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `binary` run as `user` when given (the server refuses to run as root).
fn as_user(user: Option<&str>, binary: &Path) -> Command {
    match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--"]).arg(binary);
            command
        }
        None => Command::new(binary),
    }
}
