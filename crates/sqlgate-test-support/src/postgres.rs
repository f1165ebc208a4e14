//! A real PostgreSQL server for tests: `initdb` into a temporary folder as an unprivileged
//! user, `pg_ctl` on a free port of 127.0.0.1, stopped when dropped (also while a panic
//! unwinds) or, for the shared server of a test binary, when the process exits.
//!
//! Where PostgreSQL is not installed the caller skips, counted by [`crate::skip`], unless
//! `SQLGATE_REQUIRE_TOOLS` is set (as under CI), in which case this panics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::server::{checked, free_port, give_to, path_str};

/// The role tests connect as, set up by `docs/postgres-reader.sql`.
pub const READER: &str = "sqlgate_reader";
/// The five Defog databases of the shared data.
pub const DEFOG_DATABASES: [&str; 5] = ["academic", "advising", "atis", "geography", "restaurants"];

/// A running server; stopped on drop.
pub struct PgServer {
    /// Holds `data/` (the cluster), the socket and the log; removed on drop.
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    /// The OS user the server runs as, when this process is root (PostgreSQL refuses root).
    run_as: Option<String>,
}

impl PgServer {
    /// Starts a new empty server, or `None` (printed as skipped) when PostgreSQL is missing.
    pub fn start() -> Option<PgServer> {
        let Some(bin) = binaries() else {
            crate::skip::without_tool(
                "PostgreSQL (initdb, pg_ctl, psql, pg_dump: Debian's `postgresql` package)",
            );
            return None;
        };
        // SAFETY: geteuid has no preconditions.
        let run_as = (unsafe { libc::geteuid() } == 0).then(|| "postgres".to_string());
        let dir = tempfile::Builder::new()
            .prefix("sqlgate-pg-")
            .tempdir()
            .expect("a temporary folder for PostgreSQL");
        if let Some(user) = &run_as {
            give_to(dir.path(), user);
        }
        let port = free_port();
        let server = PgServer {
            dir,
            bin,
            port,
            run_as,
        };
        let data = server.data_dir();
        server.as_owner(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
            ],
        );
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            path_str(server.dir.path())
        );
        let log = server.dir.path().join("server.log");
        server.as_owner(
            "pg_ctl",
            &[
                "-D",
                path_str(&data),
                "-l",
                path_str(&log),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
        Some(server)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of `db` for the superuser `postgres`.
    pub fn admin_url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// The URL template (`{db}`) of the read-only role.
    pub fn reader_template(&self) -> String {
        format!("postgres://{READER}@127.0.0.1:{}/{{db}}", self.port)
    }

    /// Runs `psql` as the superuser on `db` with `args`, stopping at the first error.
    pub fn psql(&self, db: &str, args: &[&str]) -> String {
        let mut all = vec!["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db];
        all.extend_from_slice(args);
        let output = self.client("psql", &all);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Creates database `db`, loads the plain `pg_dump` file `dump` into it and analyzes it.
    pub fn load_dump(&self, db: &str, dump: &Path) {
        self.psql("postgres", &["-c", &format!("CREATE DATABASE \"{db}\"")]);
        self.psql(db, &["-f", path_str(dump)]);
        // The planner's statistics now, not whenever autovacuum gets to them mid-test.
        self.psql(db, &["-c", "ANALYZE"]);
    }

    /// Applies the documented read-only role setup (`docs/postgres-reader.sql`) to `db`.
    pub fn add_reader(&self, db: &str) {
        let script = crate::repo_root().join("docs/postgres-reader.sql");
        self.psql(db, &["-v", &format!("db={db}"), "-f", path_str(&script)]);
    }

    /// Gives `db`'s tables and views in schema `public` (with the sequences their columns own)
    /// to a new role `owner` (not a superuser), and applies the documented scratch role setup (`docs/postgres-scratch.sql`),
    /// which makes `sqlgate_scratch` a member of `owner`.
    pub fn add_scratch(&self, db: &str, owner: &str) {
        let give = format!(
            "CREATE ROLE \"{owner}\" NOLOGIN; \
             DO $$ DECLARE r record; BEGIN \
             FOR r IN SELECT c.relname, c.relkind FROM pg_class c \
               JOIN pg_namespace n ON n.oid = c.relnamespace \
               WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') LOOP \
               EXECUTE format('ALTER %s %I OWNER TO %I', \
                 CASE r.relkind WHEN 'r' THEN 'TABLE' ELSE 'VIEW' END, \
                 r.relname, '{owner}'); \
             END LOOP; END $$"
        );
        self.psql(db, &["-c", &give]);
        let script = crate::repo_root().join("docs/postgres-scratch.sql");
        self.psql(
            db,
            &[
                "-v",
                &format!("db={db}"),
                "-v",
                &format!("owner={owner}"),
                "-f",
                path_str(&script),
            ],
        );
    }

    /// The URL template (`{db}`) of the scratch role (`docs/postgres-scratch.sql`).
    pub fn scratch_template(&self) -> String {
        format!("postgres://sqlgate_scratch@127.0.0.1:{}/{{db}}", self.port)
    }

    /// SHA-256 of `pg_dump`'s output for `db`: data, schema, owners and privileges. The
    /// `\restrict` lines, whose key is new at each dump (PostgreSQL 15.14 on), are left out.
    pub fn dump_checksum(&self, db: &str) -> String {
        use sha2::{Digest, Sha256};
        let output = self.client("pg_dump", &["--no-comments", "-d", db]);
        let mut hash = Sha256::new();
        for line in output.stdout.split(|b| *b == b'\n') {
            if !line.starts_with(b"\\restrict ") && !line.starts_with(b"\\unrestrict ") {
                hash.update(line);
                hash.update(b"\n");
            }
        }
        format!("{:x}", hash.finalize())
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs a client program as this user, connected as `postgres` over TCP.
    fn client(&self, program: &str, args: &[&str]) -> Output {
        let port = self.port.to_string();
        let mut command = Command::new(self.bin.join(program));
        command
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres"])
            .args(args);
        checked(program, &mut command, None)
    }

    /// Runs a server program as the server's owner.
    fn as_owner(&self, program: &str, args: &[&str]) -> Output {
        let mut command = self.owner_command(program);
        command.args(args);
        checked(
            program,
            &mut command,
            Some(&self.dir.path().join("server.log")),
        )
    }

    fn owner_command(&self, program: &str) -> Command {
        let binary = self.bin.join(program);
        match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&binary);
                command
            }
            None => Command::new(&binary),
        }
    }

    fn stop(&self) {
        let data = self.data_dir();
        if data.exists() {
            // Best effort: a drop while panicking must not panic again.
            let _ = self
                .owner_command("pg_ctl")
                .args(["-D", path_str(&data), "-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The Defog databases loaded from the shared data's PostgreSQL dumps, each with the
/// read-only role: started once per test binary, stopped when the process exits. `None` (printed
/// as skipped) when PostgreSQL or the shared data is missing.
pub fn defog_server() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Option<PgServer>> = OnceLock::new();
    extern "C" fn stop_at_exit() {
        if let Some(Some(server)) = SERVER.get() {
            server.stop();
            let _ = std::fs::remove_dir_all(server.dir.path());
        }
    }
    SERVER
        .get_or_init(|| {
            let dumps = super::shared_data()?.join("defog/postgres");
            let server = PgServer::start()?;
            for db in DEFOG_DATABASES {
                server.load_dump(db, &dumps.join(format!("{db}.sql")));
                server.add_reader(db);
            }
            // SAFETY: registers a plain function; statics are never dropped, so this is what
            // stops the server and removes its folder.
            unsafe { libc::atexit(stop_at_exit) };
            Some(server)
        })
        .as_ref()
}

/// The folder holding `initdb`, `pg_ctl`, `psql` and `pg_dump`: the newest
/// `/usr/lib/postgresql/<version>/bin`, else the folder of `initdb` on the `PATH`.
fn binaries() -> Option<PathBuf> {
    let has_all = |dir: &Path| {
        ["initdb", "pg_ctl", "psql", "pg_dump"]
            .iter()
            .all(|p| dir.join(p).is_file())
    };
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.into_iter().rev().find(|(_, dir)| has_all(dir)) {
        return Some(dir);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|dir| has_all(dir))
}
