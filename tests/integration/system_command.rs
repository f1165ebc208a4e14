//! The `command` system against real shell scripts: answers, abstentions, garbage, failures,
//! timeouts (the script and its children killed), and fingerprints.
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sqlgate::config::system::CommandConfig;
use sqlgate::config::Seconds;
use sqlgate::system::command::{CommandSystem, BASIC_ENV};
use sqlgate::system::{Request, System, SystemErrorKind};

fn request(id: &str) -> Request {
    Request::question(
        id,
        "shop",
        "dbs/shop.sqlite",
        "How many \"books\" are there?",
    )
    .with_evidence("books are rows of `book`")
    .with_schema("CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT);")
}

fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

/// A system running `sh <script>` (not exec'ing the file, which races with writing it).
fn config(script: &Path, timeout_secs: f64) -> CommandConfig {
    CommandConfig {
        command: vec!["sh".into(), script.display().to_string()],
        timeout_secs: Seconds::new(timeout_secs).unwrap(),
        ..CommandConfig::default()
    }
}

fn system(script: &Path) -> CommandSystem {
    CommandSystem::new(&config(script, 20.0)).unwrap()
}

#[test]
fn reads_the_request_on_stdin_and_answers_with_sql() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "answer.sh",
        r#"cat > "$REQUEST_COPY"
printf '%s' '{"sql": "SELECT count(*) FROM book", "samples": ["SELECT 1;"], "retrieved": ["book.id"]}'
"#,
    );
    let copy = dir.path().join("request.json");
    let mut config = config(&script, 20.0);
    config
        .env
        .insert("REQUEST_COPY".into(), copy.display().to_string());
    let system = CommandSystem::new(&config).unwrap();

    let reply = system.answer(&request("q1")).unwrap();
    assert_eq!(
        reply.samples,
        vec![Some("SELECT 1;".to_string())],
        "passed on as sent"
    );
    let reply = reply.clean();

    assert_eq!(reply.sql.as_deref(), Some("SELECT count(*) FROM book"));
    assert!(!reply.cleaned);
    assert_eq!(reply.samples, vec![Some("SELECT 1".to_string())]);
    assert_eq!(reply.retrieved, vec!["book.id".to_string()]);
    let sent: Request = serde_json::from_slice(&std::fs::read(&copy).unwrap()).unwrap();
    assert_eq!(sent, request("q1"));
}

#[test]
fn abstains() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "abstain.sh", "echo '{\"abstain\": true}'\n");
    let reply = system(&script).answer(&request("q1")).unwrap();
    assert_eq!(reply.sql, None);
    assert!(reply.samples.is_empty());
}

#[test]
fn fenced_sql_is_cleaned_by_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "fenced.sh",
        r#"cat <<'EOF'
{"sql": "Here is the query:\n```sql\nSELECT title FROM book;\n```\nIt lists titles."}
EOF
"#,
    );
    // The system passes the text on as it came; the pipeline cleans every reply.
    let reply = system(&script).answer(&request("q1")).unwrap();
    assert!(reply.sql.as_deref().unwrap().contains("```sql"));
    let reply = reply.clean();
    assert_eq!(reply.sql.as_deref(), Some("SELECT title FROM book"));
    assert!(reply.cleaned);
}

#[test]
fn output_that_is_not_an_answer_is_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = [
        ("prose.sh", "echo 'SELECT 1'\n"),
        (
            "both.sh",
            "echo '{\"sql\": \"SELECT 1\", \"abstain\": true}'\n",
        ),
        ("neither.sh", "echo '{\"query\": \"SELECT 1\"}'\n"),
        (
            "twice.sh",
            "echo '{\"sql\": \"SELECT 1\", \"sql\": \"SELECT 2\"}'\n",
        ),
        ("nothing.sh", "true\n"),
        ("list.sh", "echo '[\"SELECT 1\"]'\n"),
    ];
    for (name, body) in outputs {
        let script = write_script(dir.path(), name, body);
        let answer = system(&script).answer(&request("q1"));
        let Err(error) = answer else {
            panic!("{name}: {answer:?}")
        };
        assert_eq!(error.kind, SystemErrorKind::Garbage, "{name}: {error:?}");
        assert!(!error.retryable, "{name}");
    }
}

#[test]
fn a_failing_program_is_an_exit_error_quoting_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "fail.sh",
        "echo 'loading model' >&2\necho 'model exploded' >&2\nexit 3\n",
    );
    let error = system(&script).answer(&request("q1")).unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Exit);
    assert!(!error.retryable);
    assert!(
        error.message.contains("model exploded"),
        "{}",
        error.message
    );
    assert!(error.message.contains('3'), "{}", error.message);
}

#[test]
fn a_missing_program_is_a_transport_error_never_recorded() {
    let config = CommandConfig {
        command: vec!["./surely-no-such-program-here".into()],
        timeout_secs: Seconds::new(5.0).unwrap(),
        ..CommandConfig::default()
    };
    let error = CommandSystem::new(&config)
        .unwrap()
        .answer(&request("q1"))
        .unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Transport);
    assert!(error.kind.is_transient());
    assert!(!error.retryable);
}

/// Whether a process still runs (a zombie left to PID 1 does not).
fn running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[test]
fn a_slow_program_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "slow.sh",
        &format!(
            "echo $$ > {dir}/script.pid\nsleep 30 &\necho $! > {dir}/child.pid\nwait\necho '{{\"sql\": \"SELECT 1\"}}'\n",
            dir = dir.path().display()
        ),
    );
    let system = CommandSystem::new(&config(&script, 0.5)).unwrap();

    let started = Instant::now();
    let error = system.answer(&request("q1")).unwrap_err();

    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.kind, SystemErrorKind::Timeout);
    assert!(error.retryable);
    if Path::new("/proc/self/stat").exists() {
        let script_pid = std::fs::read_to_string(dir.path().join("script.pid")).unwrap();
        let child_pid = std::fs::read_to_string(dir.path().join("child.pid")).unwrap();
        // The script was reaped by us: not even a zombie is left.
        assert!(!Path::new(&format!("/proc/{}", script_pid.trim())).exists());
        let deadline = Instant::now() + Duration::from_secs(5);
        while running(child_pid.trim()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!running(child_pid.trim()), "the script's child survived");
    }
}

/// Waits up to five seconds for the process in `pid_file` to end.
fn ended(pid_file: &Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid.trim()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    !running(pid.trim())
}

#[test]
fn children_left_running_after_answering_are_killed_and_the_answer_kept() {
    let dir = tempfile::tempdir().unwrap();
    let holding_output = format!(
        "sleep 30 &\necho $! > {}/holding.pid\n",
        dir.path().display()
    );
    let detached = format!(
        "sleep 30 > /dev/null 2>&1 &\necho $! > {}/detached.pid\n",
        dir.path().display()
    );
    for (name, body, pid_file) in [
        ("holding.sh", holding_output, "holding.pid"),
        ("detached.sh", detached, "detached.pid"),
    ] {
        let script = write_script(
            dir.path(),
            name,
            &format!("{body}echo '{{\"sql\": \"SELECT 1\"}}'\n"),
        );
        let system = CommandSystem::new(&config(&script, 5.0)).unwrap();
        let started = Instant::now();
        let reply = system.answer(&request("q1")).unwrap();
        assert_eq!(reply.sql.as_deref(), Some("SELECT 1"), "{name}");
        assert!(started.elapsed() < Duration::from_secs(4), "{name}");
        if Path::new("/proc/self/stat").exists() {
            assert!(
                ended(&dir.path().join(pid_file)),
                "{name}: the child survived"
            );
        }
    }
}

#[test]
#[cfg(target_os = "linux")]
fn children_that_left_the_process_group_are_killed_too() {
    if !Path::new("/usr/bin/setsid").exists() && !Path::new("/bin/setsid").exists() {
        sqlgate_test_support::skip::without_tool("setsid (util-linux)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("session.pid");
    // `setsid` starts a new session and process group: killing the program's group misses it.
    let answering = write_script(
        dir.path(),
        "answering.sh",
        &format!(
            "setsid sh -c 'echo $$ > {pid}; exec sleep 30' > /dev/null 2>&1 < /dev/null &\n\
             while [ ! -s {pid} ]; do sleep 0.01; done\n\
             echo '{{\"sql\": \"SELECT 1\"}}'\n",
            pid = pid_file.display()
        ),
    );
    let reply = system(&answering).answer(&request("q1")).unwrap();
    assert_eq!(reply.sql.as_deref(), Some("SELECT 1"));
    assert!(ended(&pid_file), "the setsid child survived an answer");

    std::fs::remove_file(&pid_file).unwrap();
    let hanging = write_script(
        dir.path(),
        "hanging.sh",
        &format!(
            "setsid sh -c 'echo $$ > {pid}; exec sleep 30' > /dev/null 2>&1 < /dev/null &\n\
             sleep 30\n",
            pid = pid_file.display()
        ),
    );
    let error = CommandSystem::new(&config(&hanging, 0.5))
        .unwrap()
        .answer(&request("q1"))
        .unwrap_err();
    assert_eq!(error.kind, SystemErrorKind::Timeout);
    assert!(
        error
            .message
            .contains("1 process(es) it started outside its process group"),
        "{}",
        error.message
    );
    assert!(ended(&pid_file), "the setsid child survived a timeout");
}

#[test]
fn a_program_that_ignores_a_large_request_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "deaf.sh", "echo '{\"sql\": \"SELECT 1\"}'\n");
    let mut big = request("q1");
    big.schema = "CREATE TABLE t (a INTEGER);\n".repeat(100_000);
    let reply = system(&script).answer(&big).unwrap();
    assert_eq!(reply.sql.as_deref(), Some("SELECT 1"));
}

#[test]
fn the_fingerprint_follows_the_script_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "v.sh", "echo '{\"sql\": \"SELECT 1\"}'\n");
    let first = system(&script).fingerprint();
    assert_eq!(system(&script).fingerprint(), first, "not stable");

    let mut with_env = config(&script, 20.0);
    with_env.env.insert("MODEL".into(), "small".into());
    let env_print = CommandSystem::new(&with_env).unwrap().fingerprint();
    assert_ne!(env_print, first);

    write_script(dir.path(), "v.sh", "echo '{\"sql\": \"SELECT 2\"}'\n");
    let edited = system(&script).fingerprint();
    assert_ne!(edited, first);
    assert_ne!(edited, env_print);
}

#[test]
fn configuration_is_checked() {
    let parsed: CommandConfig = toml::from_str(r#"command = ["python3", "agent.py"]"#).unwrap();
    assert_eq!(parsed.timeout_secs.secs(), 60.0);
    assert!(parsed.env.is_empty());
    assert!(toml::from_str::<CommandConfig>("command = [\"x\"]\ntimeout = 3").is_err());

    let empty = CommandConfig {
        command: Vec::new(),
        ..parsed.clone()
    };
    assert!(CommandSystem::new(&empty).is_err());
    // A time bound out of range is refused while the settings are read.
    for bad in ["0", "-1", "nan", "1e12"] {
        let text = format!("command = [\"true\"]\ntimeout_secs = {bad}");
        let error = toml::from_str::<CommandConfig>(&text).unwrap_err();
        assert!(
            error.message().contains("number of seconds"),
            "{bad}: {error}"
        );
    }
}

/// The variables a program sees, by name and value, read from what it wrote to `env.txt`.
fn program_environment(config: &CommandConfig, dir: &Path) -> BTreeMap<String, String> {
    CommandSystem::new(config)
        .unwrap()
        .answer(&request("q1"))
        .unwrap();
    std::fs::read_to_string(dir.join("env.txt"))
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

#[test]
fn the_program_sees_only_the_declared_environment() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "env.sh",
        &format!(
            "env > {}/env.txt\necho '{{\"sql\": \"SELECT 1\"}}'\n",
            dir.path().display()
        ),
    );
    let mut config = config(&script, 20.0);
    config.env.insert("MODEL".into(), "small".into());
    // cargo sets these for the tests it runs.
    config.env_passthrough = vec!["CARGO_PKG_NAME".into(), "SQLGATE_TEST_SURELY_UNSET".into()];
    config.env_secrets = vec!["CARGO_PKG_VERSION".into()];
    let seen = program_environment(&config, dir.path());

    assert_eq!(seen["MODEL"], "small");
    assert_eq!(seen["CARGO_PKG_NAME"], env!("CARGO_PKG_NAME"));
    assert_eq!(seen["CARGO_PKG_VERSION"], env!("CARGO_PKG_VERSION"));
    assert!(!seen.contains_key("SQLGATE_TEST_SURELY_UNSET"));
    assert_eq!(seen.get("PATH"), std::env::var("PATH").ok().as_ref());
    // What the shell sets itself, and the marker that finds the program's descendants.
    let shell = ["PWD", "OLDPWD", "SHLVL", "_", "SQLGATE_COMMAND_RUN"];
    let declared = ["MODEL", "CARGO_PKG_NAME", "CARGO_PKG_VERSION"];
    let allowed: BTreeSet<&str> = BASIC_ENV
        .iter()
        .chain(&shell)
        .chain(&declared)
        .copied()
        .collect();
    let undeclared: Vec<&String> = seen
        .keys()
        .filter(|name| !allowed.contains(name.as_str()))
        .collect();
    assert!(
        undeclared.is_empty(),
        "inherited without being declared: {undeclared:?}"
    );
    // cargo sets it for this process: the program would see it if it inherited everything.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
}

#[test]
fn the_fingerprint_follows_passed_through_values_but_not_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), "v.sh", "echo '{\"sql\": \"SELECT 1\"}'\n");
    let print = |passthrough: &[&str], secrets: &[&str]| {
        let mut config = config(&script, 20.0);
        config.env_passthrough = passthrough.iter().map(|name| name.to_string()).collect();
        config.env_secrets = secrets.iter().map(|name| name.to_string()).collect();
        CommandSystem::new(&config).unwrap().fingerprint()
    };
    let base = print(&[], &[]);
    // Set by cargo, with different values.
    let name = print(&["CARGO_PKG_NAME"], &[]);
    let version = print(&["CARGO_PKG_VERSION"], &[]);
    let unset = print(&["SQLGATE_TEST_SURELY_UNSET"], &[]);
    let all = [&base, &name, &version, &unset];
    for (index, print) in all.iter().enumerate() {
        assert!(!all[index + 1..].contains(print), "{index}");
    }
    // The same variable under a fixed value is another declaration.
    let mut fixed = config(&script, 20.0);
    fixed
        .env
        .insert("CARGO_PKG_NAME".into(), env!("CARGO_PKG_NAME").into());
    assert_ne!(CommandSystem::new(&fixed).unwrap().fingerprint(), name);

    assert_eq!(print(&[], &["CARGO_PKG_NAME"]), base);
    assert_eq!(print(&["CARGO_PKG_VERSION"], &["CARGO_PKG_NAME"]), version);
}

#[test]
fn a_variable_is_declared_once_with_a_real_name() {
    let parsed: CommandConfig = toml::from_str(
        "command = [\"x\"]\nenv = { A = \"1\" }\nenv_passthrough = [\"B\"]\nenv_secrets = [\"C\"]",
    )
    .unwrap();
    assert!(CommandSystem::new(&parsed).is_ok());
    let declared_twice = [
        (vec!["A"], vec![]),
        (vec![], vec!["A"]),
        (vec!["B"], vec!["B"]),
        (vec!["B", "B"], vec![]),
    ];
    for (passthrough, secrets) in declared_twice {
        let config = CommandConfig {
            env_passthrough: passthrough.iter().map(|n| n.to_string()).collect(),
            env_secrets: secrets.iter().map(|n| n.to_string()).collect(),
            ..parsed.clone()
        };
        let error = CommandSystem::new(&config).err().unwrap().to_string();
        assert!(error.contains("declared twice"), "{error}");
    }
    for bad in ["", "A=B"] {
        let config = CommandConfig {
            env_passthrough: vec![bad.into()],
            ..parsed.clone()
        };
        let error = CommandSystem::new(&config).err().unwrap().to_string();
        assert!(error.contains("not a variable name"), "{error}");
    }
}
