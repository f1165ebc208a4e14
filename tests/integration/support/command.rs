//! One way to run the `sqlgate` binary cargo built for these tests, and to check what it did.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Cargo links the `sqlgate` binary again when a test runs cargo (the libtest-mimic harness's
/// build) and cargo finds it out of date: between removing the old file and linking the new one,
/// starting it fails with "No such file or directory". Starting it takes this lock shared, a
/// cargo run takes it alone.
static BINARY: RwLock<()> = RwLock::new(());

/// Held while starting the `sqlgate` binary (or a shell that runs it).
pub fn binary_in_use() -> RwLockReadGuard<'static, ()> {
    BINARY.read().unwrap_or_else(PoisonError::into_inner)
}

/// Held while cargo may link the `sqlgate` binary again.
pub fn binary_rebuilding() -> RwLockWriteGuard<'static, ()> {
    BINARY.write().unwrap_or_else(PoisonError::into_inner)
}

/// The variables that switch `sqlgate` into CI behaviour (no pending snapshots, annotations, a
/// step summary). The environment running the tests may set them, so every run starts without
/// them; a test of that behaviour sets them itself.
const CI_VARIABLES: [&str; 3] = ["CI", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"];

/// `sqlgate` with no arguments yet, in the test process's folder, without [`CI_VARIABLES`].
pub fn sqlgate() -> Sqlgate {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sqlgate"));
    for variable in CI_VARIABLES {
        command.env_remove(variable);
    }
    Sqlgate { command }
}

/// A `sqlgate` command being put together (the setters mirror [`Command`]'s).
pub struct Sqlgate {
    command: Command,
}

impl Sqlgate {
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Sqlgate {
        self.command.arg(arg);
        self
    }

    pub fn args(&mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> &mut Sqlgate {
        self.command.args(args);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Sqlgate {
        self.command.current_dir(dir);
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Sqlgate {
        self.command.env(key, value);
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Sqlgate {
        self.command.env_remove(key);
        self
    }

    pub fn stdout(&mut self, stdout: impl Into<Stdio>) -> &mut Sqlgate {
        self.command.stdout(stdout);
        self
    }

    pub fn stderr(&mut self, stderr: impl Into<Stdio>) -> &mut Sqlgate {
        self.command.stderr(stderr);
        self
    }

    /// Starts it with an empty standard input, for a test that waits for the process itself.
    pub fn spawn(&mut self) -> Child {
        let _in_use = binary_in_use();
        self.command
            .stdin(Stdio::null())
            .spawn()
            .expect("the sqlgate binary starts")
    }

    /// Runs it with an empty standard input, to its end; its exit status and output as text.
    pub fn run(&mut self) -> Run {
        let output = self
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .wait_with_output()
            .expect("the sqlgate run ends");
        Run {
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// How a finished `sqlgate` run ended and what it printed.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code (`None` when a signal ended the process).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Standard output followed by standard error, for messages and checks that do not care
    /// which stream a line went to.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Panics, showing both streams, unless the run exited with `code`.
    pub fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code(),
            Some(code),
            "sqlgate exited with {:?}, not {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panics unless the run refused its input: exit 2, standard error naming each of
    /// `words` (the file, the line, the problem), and no panic.
    pub fn assert_bad_input(&self, words: &[&str]) -> &Run {
        self.assert_code(2);
        for word in words {
            assert!(
                self.stderr.contains(word),
                "`{word}` not said:\n{}",
                self.stderr
            );
        }
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        self
    }

    /// Panics, showing both streams, unless the run exited with 0.
    pub fn assert_success(&self) -> &Run {
        self.assert_code(0)
    }

    /// Standard output parsed as JSON; panics, showing both streams, if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not JSON ({error})\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout, self.stderr
            )
        })
    }
}
