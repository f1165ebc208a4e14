//! The `command` system: a program that reads the JSON request on stdin and prints its answer,
//! `{"sql": "..."}` or `{"abstain": true}`, on stdout.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use super::answer::parse_answer;
use super::{Reply, Request, System, SystemError, SystemErrorKind};
use crate::config::system::CommandConfig;
use sqlgate_eval::secrets;
use sqlgate_eval::store::Hasher;

/// Answers longer than this are not answers.
const STDOUT_LIMIT: usize = 16 << 20;
/// The end of stderr quoted when the command fails.
const STDERR_TAIL: usize = 2000;

/// What every program gets from sqlgate's environment to run at all (find programs, a home, a
/// locale, a place for temporary files; `SYSTEMROOT`, `TEMP`, `TMP` on Windows). Not
/// fingerprinted: they must not change the answers. Anything else is declared.
pub const BASIC_ENV: [&str; 8] = [
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
];

/// Runs a program per case.
pub struct CommandSystem {
    config: CommandConfig,
    timeout: Duration,
    fingerprint: String,
    /// The program's whole environment, read from sqlgate's when the system was built.
    environment: Vec<(String, OsString)>,
}

impl CommandSystem {
    /// Checks the configuration and fingerprints it, reading the program's files now, so
    /// that editing a script during a run does not change the recording key.
    pub fn new(config: &CommandConfig) -> Result<CommandSystem, CommandError> {
        if config.command.is_empty() {
            return Err(CommandError::NoProgram);
        }
        let timeout = config.timeout_secs.duration();
        check_declared_names(config)?;
        for name in config.env_secrets.iter().chain(&config.env_passthrough) {
            secrets::register_env(name);
        }
        let passed_through: Vec<(String, Option<OsString>)> = config
            .env_passthrough
            .iter()
            .map(|name| (name.clone(), std::env::var_os(name)))
            .collect();
        let inherited = BASIC_ENV
            .into_iter()
            .chain(config.env_secrets.iter().map(String::as_str))
            .filter_map(|name| Some((name.to_string(), std::env::var_os(name)?)));
        let fixed = config
            .env
            .iter()
            .map(|(name, value)| (name.clone(), OsString::from(value)));
        let passed = passed_through
            .iter()
            .filter_map(|(name, value)| Some((name.clone(), value.clone()?)));
        Ok(CommandSystem {
            fingerprint: fingerprint(config, &passed_through)?,
            environment: inherited.chain(fixed).chain(passed).collect(),
            config: config.clone(),
            timeout,
        })
    }

    fn program(&self) -> &str {
        self.config.command.first().map_or("", String::as_str)
    }

    /// The command as written, for messages.
    fn command_line(&self) -> String {
        self.config.command.join(" ")
    }

    fn spawn(&self, marker: &str) -> Result<Child, SystemError> {
        let mut command = Command::new(self.program());
        command
            .args(&self.config.command[1..])
            .env_clear()
            .envs(self.environment.iter().map(|(name, value)| (name, value)))
            .env(RUN_MARKER, marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so a timeout kills the program's children too.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // Not recorded: a program that cannot start says nothing about the system.
        command.spawn().map_err(|e| {
            SystemError::new(
                SystemErrorKind::Transport,
                format!("cannot start `{}`: {e}", self.command_line()),
            )
        })
    }

    /// Runs the program on `input` and returns its stdout, within the time bound. Whatever it
    /// started is killed when it ends: nothing it spawned outlives its case.
    fn run(&self, input: Vec<u8>) -> Result<Vec<u8>, SystemError> {
        let deadline = Instant::now() + self.timeout;
        let marker = format!(
            "{}-{}",
            std::process::id(),
            RUN_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut child = self.spawn(&marker)?;
        let pipes = start_pipes(&mut child, input);
        let (stdout, stderr) = match pipes {
            Ok(pipes) => pipes,
            Err(e) => {
                kill_all(&mut child, &marker);
                return Err(SystemError::new(
                    SystemErrorKind::Transport,
                    format!("cannot talk to `{}`: {e}", self.command_line()),
                ));
            }
        };
        let status = wait_until(&mut child, deadline);
        // Children detached with `&` or `setsid` would otherwise outlive the case, and may hold
        // the output open.
        let killed = kill_all(&mut child, &marker);
        let Some(status) = status else {
            return Err(self.timed_out(&format!("it was killed{}", also_killed(killed))));
        };
        let (Some(mut stdout), Some(mut stderr)) =
            (receive(&stdout, deadline), receive(&stderr, deadline))
        else {
            return Err(self.timed_out(
                "its output stayed open after it exited, held by a process that left its \
                 process group and its environment, which may still run",
            ));
        };
        // Whatever the program printed goes on (cassette, reports) without the secrets it
        // was given, whether it echoed them on purpose or by mistake.
        for output in [&mut stdout, &mut stderr] {
            if let Cow::Owned(redacted) = secrets::redact_bytes(&output.bytes) {
                output.bytes = redacted;
            }
        }
        if !status.success() {
            return Err(self.exited(status, &stderr.bytes));
        }
        if stdout.truncated {
            return Err(SystemError::new(
                SystemErrorKind::Garbage,
                format!(
                    "`{}` printed more than {STDOUT_LIMIT} bytes",
                    self.command_line()
                ),
            ));
        }
        Ok(stdout.bytes)
    }

    fn timed_out(&self, what_then: &str) -> SystemError {
        SystemError::retryable(
            SystemErrorKind::Timeout,
            format!(
                "`{}` gave no answer within {} s; {what_then}",
                self.command_line(),
                self.config.timeout_secs.secs()
            ),
        )
    }

    fn exited(&self, status: ExitStatus, stderr: &[u8]) -> SystemError {
        SystemError::new(
            SystemErrorKind::Exit,
            format!(
                "`{}` failed ({status}); stderr: {}",
                self.command_line(),
                excerpt_tail(stderr)
            ),
        )
    }
}

impl System for CommandSystem {
    fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }

    fn answer(&self, request: &Request) -> Result<Reply, SystemError> {
        let input = serde_json::to_vec(request).map_err(|e| {
            SystemError::new(
                SystemErrorKind::Transport,
                format!("cannot encode the request: {e}"),
            )
        })?;
        parse_answer(&self.run(input)?)
    }
}

/// A variable named in two of `env`, `env_passthrough` and `env_secrets` would leave unclear
/// which value the program gets and whether it is fingerprinted.
fn check_declared_names(config: &CommandConfig) -> Result<(), CommandError> {
    let declared = config
        .env
        .keys()
        .map(|name| ("env", name))
        .chain(
            config
                .env_passthrough
                .iter()
                .map(|name| ("env_passthrough", name)),
        )
        .chain(config.env_secrets.iter().map(|name| ("env_secrets", name)));
    let mut seen = BTreeMap::new();
    for (list, name) in declared {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(CommandError::NotAVariable {
                list,
                name: name.clone(),
            });
        }
        if let Some(first) = seen.insert(name, list) {
            return Err(CommandError::DeclaredTwice {
                name: name.clone(),
                first,
                list,
            });
        }
    }
    Ok(())
}

/// Hashes the command line, the declared environment (fixed values, and the passed-through
/// values as read, an unset variable apart from every value; not the secrets), and the
/// contents of every argument that names a file (the program, or the script given to an
/// interpreter).
fn fingerprint(
    config: &CommandConfig,
    passed_through: &[(String, Option<OsString>)],
) -> Result<String, CommandError> {
    let mut hash = Hasher::new();
    // Version 2: the program sees only the declared environment. Recordings of version 1,
    // made with whatever environment sqlgate had, are asked again.
    hash.field("command/2")
        .field(config.command.len().to_le_bytes());
    for argument in &config.command {
        hash.field(argument);
    }
    hash.field(config.env.len().to_le_bytes());
    for (name, value) in &config.env {
        hash.field(name).field(value);
    }
    hash.field(passed_through.len().to_le_bytes());
    for (name, value) in passed_through {
        hash.field(name);
        match value {
            Some(value) => hash.field([1]).field(value.as_encoded_bytes()),
            None => hash.field([0]),
        };
    }
    for argument in &config.command {
        let path = Path::new(argument);
        if path.is_file() {
            let contents = std::fs::read(path).map_err(|source| CommandError::Unreadable {
                argument: argument.clone(),
                source,
            })?;
            hash.field(argument).field(contents);
        }
    }
    Ok(format!("command:{}", hash.hex()))
}

/// Why a `command` system cannot be built ([`CommandSystem::new`]): its settings, or a file
/// it runs that cannot be read to fingerprint it.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// `command = []`.
    #[error("`command` must name a program")]
    NoProgram,
    /// A declared name cannot be an environment variable's.
    #[error("`{list}`: {name:?} is not a variable name")]
    NotAVariable {
        /// `env`, `env_passthrough` or `env_secrets`.
        list: &'static str,
        /// The name as given.
        name: String,
    },
    /// A variable in two of the lists.
    #[error("the variable `{name}` is declared twice (in `{first}` and in `{list}`)")]
    DeclaredTwice {
        /// The variable.
        name: String,
        /// The list it was first seen in.
        first: &'static str,
        /// The list it is seen in again.
        list: &'static str,
    },
    /// An argument naming a file that cannot be read.
    #[error("cannot read `{argument}` to fingerprint it: {source}")]
    Unreadable {
        /// The argument (the program, or the script given to an interpreter).
        argument: String,
        /// Why, as the system said.
        source: std::io::Error,
    },
}

/// What was read from one of the program's outputs.
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    /// More was written than kept.
    truncated: bool,
}

/// Feeds stdin and drains stdout and stderr on their own threads, so a program that writes
/// before it reads, or never reads, cannot deadlock with us.
fn start_pipes(
    child: &mut Child,
    input: Vec<u8>,
) -> std::io::Result<(Receiver<Captured>, Receiver<Captured>)> {
    let missing = || std::io::Error::other("a pipe was not opened");
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    feed(stdin, input)?;
    Ok((
        capture(stdout, STDOUT_LIMIT, false)?,
        capture(stderr, STDERR_TAIL, true)?,
    ))
}

fn feed(mut stdin: ChildStdin, input: Vec<u8>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("command-stdin".into())
        .spawn(move || {
            // A program that exits without reading its input is judged by its output.
            let _ = stdin.write_all(&input);
        })?;
    Ok(())
}

/// Reads `source` to its end on a thread, keeping its first (or, with `keep_tail`, last)
/// `limit` bytes; the result arrives on the returned channel.
fn capture(
    mut source: impl Read + Send + 'static,
    limit: usize,
    keep_tail: bool,
) -> std::io::Result<Receiver<Captured>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("command-output".into())
        .spawn(move || {
            let mut captured = Captured::default();
            let mut chunk = [0u8; 8192];
            loop {
                match source.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(read) => keep(&mut captured, &chunk[..read], limit, keep_tail),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            // The receiver is gone when the run already gave up on this output.
            let _ = sender.send(captured);
        })?;
    Ok(receiver)
}

fn keep(captured: &mut Captured, chunk: &[u8], limit: usize, keep_tail: bool) {
    if captured.truncated && !keep_tail {
        return;
    }
    captured.bytes.extend_from_slice(chunk);
    if captured.bytes.len() > limit {
        captured.truncated = true;
        if keep_tail {
            let excess = captured.bytes.len() - limit;
            captured.bytes.drain(..excess);
        } else {
            captured.bytes.truncate(limit);
        }
    }
}

fn receive(output: &Receiver<Captured>, deadline: Instant) -> Option<Captured> {
    output
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()
}

/// Waits for the program to exit, polling, until the deadline; `None` if it is still running
/// (or its status cannot be read).
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return None,
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Set in the environment of every program run, with a value unique to the run: its
/// descendants inherit it, so they are found even after leaving its process group.
const RUN_MARKER: &str = "SQLGATE_COMMAND_RUN";

/// Tells apart the runs of one process.
static RUN_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Kills the program, its process group, and (on Linux) every process whose environment
/// carries the run's `marker`; reaps the program (no zombie). Returns how many processes
/// outside the program's group were found by their marker.
fn kill_all(child: &mut Child, marker: &str) -> usize {
    let group = libc::pid_t::try_from(child.id()).unwrap_or(0);
    #[cfg(unix)]
    // SAFETY: kill(2) with a negative pid signals the process group the program leads;
    // it touches no memory of ours.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
    kill_marked(marker, group)
}

/// Kills every process whose environment holds `RUN_MARKER=marker`, scanning `/proc` until
/// none is left (one may fork between a scan and its kill). A process that cleared its
/// environment, or runs as another user, is not found.
#[cfg(target_os = "linux")]
fn kill_marked(marker: &str, group: libc::pid_t) -> usize {
    const ROUNDS: usize = 5;
    let entry = format!("{RUN_MARKER}={marker}\0");
    let mut killed = std::collections::BTreeSet::new();
    for _ in 0..ROUNDS {
        let Ok(processes) = std::fs::read_dir("/proc") else {
            break;
        };
        let mut found = false;
        for process in processes.flatten() {
            let Some(pid) = process
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            let Ok(environ) = std::fs::read(process.path().join("environ")) else {
                continue;
            };
            let marked = environ
                .split_inclusive(|&byte| byte == 0)
                .any(|variable| variable == entry.as_bytes());
            if marked {
                // SAFETY: getpgid(2) and kill(2) act on one process; they touch no memory of
                // ours.
                let outside_group = unsafe { libc::getpgid(pid) } != group;
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                if outside_group {
                    killed.insert(pid);
                }
                found = true;
            }
        }
        if !found {
            break;
        }
        // Let the signals land before looking again.
        std::thread::sleep(Duration::from_millis(5));
    }
    killed.len()
}

/// Without `/proc`, only the process group is killed.
#[cfg(not(target_os = "linux"))]
fn kill_marked(_marker: &str, _group: libc::pid_t) -> usize {
    0
}

fn also_killed(count: usize) -> String {
    match count {
        0 => String::new(),
        n => format!(", with {n} process(es) it started outside its process group"),
    }
}

/// The end of a program's stderr (where the error usually is), quoted on one line.
fn excerpt_tail(stderr: &[u8]) -> String {
    const SHOWN: usize = 300;
    let text = String::from_utf8_lossy(stderr);
    let chars: Vec<char> = text.trim().chars().collect();
    if chars.is_empty() {
        return "(nothing)".into();
    }
    let start = chars.len().saturating_sub(SHOWN);
    let tail: String = chars[start..].iter().collect();
    let ellipsis = if start > 0 { "…" } else { "" };
    format!("{ellipsis}{tail:?}")
}
