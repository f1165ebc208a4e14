//! dist/install.sh, the action's installer, against a release served on 127.0.0.1 and packed by
//! the release workflow's own step: a pinned archive installs without a build, a download that
//! does not match its pin is refused, a missing archive, pin or target falls back to a build.
//! Also: the release builds every target the script installs, and the build cache's key
//! follows the sources.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::support::workflow::script_containing;
use crate::support::{binary_in_use, copy_tree, repo};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A copy of the action as the script sees it (the manifest that gives its version, the
/// script, and the `dist/checksums.txt` a test writes), and a runner's folders to install with.
struct Action {
    dir: tempfile::TempDir,
    runner: tempfile::TempDir,
}

impl Action {
    fn new() -> Action {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("dist")).expect("mkdir");
        for file in ["Cargo.toml", "dist/install.sh"] {
            std::fs::copy(repo().join(file), dir.path().join(file)).expect("copies");
        }
        let runner = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(runner.path().join("temp")).expect("mkdir");
        Action { dir, runner }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `SQLGATE_INSTALL_ROOT`: the binary goes to its `bin` folder.
    fn install_root(&self) -> PathBuf {
        self.runner.path().join("sqlgate")
    }

    /// `bash dist/install.sh ARGS` with none of the GitHub variables or proxies of the
    /// environment running the tests.
    fn script(&self, args: &[&str]) -> Command {
        let mut command = Command::new("bash");
        command
            .arg(self.root().join("dist/install.sh"))
            .args(args)
            .current_dir(self.root());
        for variable in [
            "GITHUB_ACTION_REPOSITORY",
            "GITHUB_REPOSITORY",
            "GITHUB_SERVER_URL",
            "GITHUB_OUTPUT",
            "GITHUB_PATH",
            "RUNNER_TEMP",
            "SQLGATE_RELEASES_URL",
            "SQLGATE_INSTALL_ROOT",
            "http_proxy",
            "HTTP_PROXY",
            "https_proxy",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
        ] {
            command.env_remove(variable);
        }
        command
    }

    /// The machine's target triple, as the script names it.
    fn host_target(&self) -> String {
        let output = self.script(&["target"]).output().expect("bash runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout)
            .expect("text")
            .trim()
            .to_string()
    }

    /// The committed `dist/checksums.txt` (its comments, no pins) followed by `pins`; returns
    /// the line number of the first pin.
    fn pin(&self, pins: &str) -> usize {
        let header = std::fs::read_to_string(repo().join("dist/checksums.txt")).expect("reads");
        assert!(
            header.lines().all(|line| line.starts_with('#')),
            "main pins nothing:\n{header}"
        );
        let path = self.root().join("dist/checksums.txt");
        std::fs::write(path, format!("{header}{pins}")).expect("writes");
        header.lines().count() + 1
    }

    /// Runs the release workflow's packing step on `binary`, built for `target` where the
    /// workflow's build step leaves it; returns the folder it uploads.
    fn release(&self, target: &str, binary: &Path) -> PathBuf {
        let workflow =
            std::fs::read_to_string(repo().join(".github/workflows/release.yml")).expect("reads");
        let pack = script_containing(&workflow, "install.sh pack");
        let built = self.root().join("target").join(target).join("dist");
        std::fs::create_dir_all(&built).expect("mkdir");
        std::os::unix::fs::symlink(binary, built.join("sqlgate")).expect("links");
        let _in_use = binary_in_use();
        let output = Command::new("bash")
            .args(["-e", "-o", "pipefail", "-c", &pack])
            .current_dir(self.root())
            .env("TARGET", target)
            .output()
            .expect("bash runs");
        assert!(output.status.success(), "{output:?}");
        self.root().join("target/assets")
    }

    /// Runs the install as the action does, downloading from `releases_url`.
    fn install(&self, releases_url: &str) -> Install {
        self.install_with(releases_url, &[])
    }

    fn install_with(&self, releases_url: &str, env: &[(&str, &str)]) -> Install {
        let runner_temp = self.runner.path().join("temp");
        let github_output = self.runner.path().join("github-output");
        let github_path = self.runner.path().join("github-path");
        let started = Instant::now();
        let output = self
            .script(&[])
            .env("SQLGATE_INSTALL_ROOT", self.install_root())
            .env("SQLGATE_RELEASES_URL", releases_url)
            .env("RUNNER_TEMP", &runner_temp)
            .env("GITHUB_OUTPUT", &github_output)
            .env("GITHUB_PATH", &github_path)
            .envs(env.iter().copied())
            .output()
            .expect("bash runs");
        eprintln!("install.sh took {:?}", started.elapsed());
        Install {
            output,
            github_output: std::fs::read_to_string(github_output).unwrap_or_default(),
            github_path: std::fs::read_to_string(github_path).unwrap_or_default(),
            scratch_left: file_names(&runner_temp),
        }
    }
}

/// What an install did.
#[derive(Debug)]
struct Install {
    output: Output,
    github_output: String,
    github_path: String,
    /// What the script left in `RUNNER_TEMP`, its scratch space.
    scratch_left: Vec<String>,
}

impl Install {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// The names in a folder, sorted; none when it does not exist.
fn file_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|entry| {
            entry
                .expect("lists")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A release download server on 127.0.0.1: the files it was given, 404 for anything else.
struct ReleaseServer {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl ReleaseServer {
    /// Serves each file of `assets` as the release of this version does:
    /// `/v<version>/<file name>`.
    fn serve(assets: &Path) -> ReleaseServer {
        let files = file_names(assets)
            .into_iter()
            .map(|name| {
                let content = std::fs::read(assets.join(&name)).expect("reads");
                (format!("/v{VERSION}/{name}"), content)
            })
            .collect();
        ReleaseServer::start(files)
    }

    fn start(files: BTreeMap<String, Vec<u8>>) -> ReleaseServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("binds"));
        let url = format!("http://{}", server.server_addr().to_ip().expect("an IP"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (server, requests) = (Arc::clone(&server), Arc::clone(&requests));
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let path = request.url().to_string();
                    requests.lock().expect("lock").push(path.clone());
                    let response = match files.get(&path) {
                        Some(content) => tiny_http::Response::from_data(content.clone()),
                        None => tiny_http::Response::from_data(b"Not Found".to_vec())
                            .with_status_code(404),
                    };
                    let _ = request.respond(response);
                }
            })
        };
        ReleaseServer {
            url,
            requests,
            server,
            thread: Some(thread),
        }
    }

    /// The paths requested so far.
    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("lock").clone()
    }
}

impl Drop for ReleaseServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_pinned_release_installs_without_a_build() {
    let action = Action::new();
    let target = action.host_target();
    let assets = action.release(&target, Path::new(env!("CARGO_BIN_EXE_sqlgate")));
    // The documented names: the archive, its checksum in sha256sum's format, the line to pin.
    let archive = format!("sqlgate-v{VERSION}-{target}.tar.gz");
    assert_eq!(
        file_names(&assets),
        [
            archive.clone(),
            format!("{archive}.sha256"),
            format!("{target}.pin")
        ]
    );
    let checksum = sha256_hex(&std::fs::read(assets.join(&archive)).expect("reads"));
    let sha256_file = std::fs::read_to_string(assets.join(format!("{archive}.sha256")));
    assert_eq!(
        sha256_file.expect("reads"),
        format!("{checksum}  {archive}\n")
    );
    let pin = std::fs::read_to_string(assets.join(format!("{target}.pin"))).expect("reads");
    assert_eq!(pin, format!("{VERSION} {target} {checksum}\n"));
    action.pin(&pin);

    let server = ReleaseServer::serve(&assets);
    let install = action.install(&server.url);
    assert!(install.output.status.success(), "{install:#?}");
    assert_eq!(server.requests(), [format!("/v{VERSION}/{archive}")]);
    let root = action.install_root();
    let shown = root.display();
    assert_eq!(
        install.github_output,
        format!("root={shown}\ninstalled=true\n")
    );
    assert_eq!(install.github_path, format!("{shown}/bin\n"));
    assert_eq!(file_names(&root.join("bin")), ["sqlgate"]);
    assert!(install.scratch_left.is_empty(), "{install:#?}");
    let version = Command::new(root.join("bin/sqlgate"))
        .arg("--version")
        .output()
        .expect("the installed binary runs");
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("sqlgate {VERSION}\n")
    );
}

/// An executable that answers `--version` as sqlgate does, to pack when its content does not
/// matter.
fn stand_in(dir: &Path) -> PathBuf {
    let path = dir.join("stand-in");
    std::fs::write(&path, format!("#!/bin/sh\necho 'sqlgate {VERSION}'\n")).expect("writes");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[test]
fn a_download_that_does_not_match_its_pin_is_refused() {
    let action = Action::new();
    let target = action.host_target();
    let assets = action.release(&target, &stand_in(action.root()));
    action.pin(&std::fs::read_to_string(assets.join(format!("{target}.pin"))).expect("reads"));
    // The archive changed after it was pinned (one byte more still unpacks).
    let archive = assets.join(format!("sqlgate-v{VERSION}-{target}.tar.gz"));
    let mut altered = std::fs::read(&archive).expect("reads");
    altered.push(0);
    std::fs::write(&archive, altered).expect("writes");
    let server = ReleaseServer::serve(&assets);
    // A binary installed before stays as it was.
    let bin = action.install_root().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::fs::write(bin.join("sqlgate"), "installed before").expect("writes");

    let install = action.install(&server.url);
    assert_eq!(install.output.status.code(), Some(1), "{install:#?}");
    let stderr = install.stderr();
    assert!(
        stderr.contains("does not match the SHA-256 pinned in")
            && stderr.contains("Refusing to install it"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
    assert!(
        !install.github_output.contains("installed="),
        "{install:#?}"
    );
    assert_eq!(install.github_path, "");
    assert_eq!(file_names(&bin), ["sqlgate"]);
    let kept = std::fs::read_to_string(bin.join("sqlgate")).expect("reads");
    assert_eq!(kept, "installed before");
    assert!(install.scratch_left.is_empty(), "{install:#?}");
}

#[test]
fn a_missing_archive_falls_back_to_a_build() {
    let action = Action::new();
    let target = action.host_target();
    action.pin(&format!("{VERSION} {target} {}\n", sha256_hex(b"pinned")));
    let server = ReleaseServer::start(BTreeMap::new());

    let install = action.install(&server.url);
    assert!(install.output.status.success(), "{install:#?}");
    let root = action.install_root();
    let shown = root.display();
    assert_eq!(
        install.github_output,
        format!("root={shown}\ninstalled=false\n")
    );
    let stderr = install.stderr();
    assert!(
        stderr.contains("sqlgate: not installed: could not download") && stderr.contains("404"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(install.github_path, "");
    assert!(!root.exists());
    assert!(install.scratch_left.is_empty(), "{install:#?}");
}

#[test]
fn a_version_without_a_pin_falls_back_without_downloading() {
    let action = Action::new();
    let target = action.host_target();
    let checksum = sha256_hex(b"pinned");
    // Pins of another version, and of this version for another target.
    action.pin(&format!(
        "0.0.0 {target} {checksum}\n{VERSION} riscv64gc-unknown-linux-gnu {checksum}\n"
    ));
    let server = ReleaseServer::start(BTreeMap::new());

    let install = action.install(&server.url);
    assert!(install.output.status.success(), "{install:#?}");
    assert!(install.github_output.ends_with("installed=false\n"));
    let stderr = install.stderr();
    assert!(
        stderr.contains(&format!(
            "not installed: no checksum pinned for {VERSION} {target}"
        )),
        "{stderr}"
    );
    assert_eq!(server.requests(), Vec::<String>::new());
    assert!(!action.install_root().exists());
}

#[test]
fn a_malformed_pin_is_an_error_naming_its_line() {
    let action = Action::new();
    let target = action.host_target();
    let line = action.pin(&format!("{VERSION} {target} 0123abc\n"));
    let server = ReleaseServer::start(BTreeMap::new());

    let install = action.install(&server.url);
    assert_eq!(install.output.status.code(), Some(2), "{install:#?}");
    let stderr = install.stderr();
    assert!(
        stderr.contains(&format!(
            "dist/checksums.txt:{line}: '0123abc' is not a SHA-256"
        )),
        "{stderr}"
    );
    assert_eq!(server.requests(), Vec::<String>::new());
}

/// A folder holding a `uname` that reports `os` and `arch`, to put first on PATH.
fn fake_uname(dir: &Path, os: &str, arch: &str) -> String {
    let bin = dir.join(format!("uname-{os}-{arch}"));
    std::fs::create_dir_all(&bin).expect("mkdir");
    let uname = bin.join("uname");
    std::fs::write(
        &uname,
        format!("#!/bin/sh\ncase \"$1\" in -s) echo '{os}' ;; -m) echo '{arch}' ;; esac\n"),
    )
    .expect("writes");
    std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The target `install.sh target` names on a machine whose uname says `os` and `arch`.
fn target_on(action: &Action, os: &str, arch: &str) -> Option<String> {
    let output = action
        .script(&["target"])
        .env("PATH", fake_uname(action.root(), os, arch))
        .output()
        .expect("bash runs");
    let target = String::from_utf8(output.stdout).expect("text");
    output.status.success().then(|| target.trim().to_string())
}

#[test]
fn the_release_builds_every_target_the_script_installs() {
    let action = Action::new();
    let workflow =
        std::fs::read_to_string(repo().join(".github/workflows/release.yml")).expect("reads");
    let built: BTreeSet<String> = workflow
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- target: "))
        .map(str::to_string)
        .collect();
    // uname on GitHub's Linux x64 and arm64 runners and macOS arm64 and Intel runners.
    let installed: BTreeSet<String> = [
        ("Linux", "x86_64"),
        ("Linux", "aarch64"),
        ("Darwin", "arm64"),
        ("Darwin", "x86_64"),
    ]
    .into_iter()
    .map(|(os, arch)| target_on(&action, os, arch).expect("a known target"))
    .collect();
    assert_eq!(built, installed);
    assert_eq!(target_on(&action, "Linux", "riscv64"), None);
    assert_eq!(target_on(&action, "MINGW64_NT-10.0-20348", "x86_64"), None);
}

#[test]
fn an_unknown_machine_falls_back_without_downloading() {
    let action = Action::new();
    let server = ReleaseServer::start(BTreeMap::new());
    let path = fake_uname(action.root(), "Linux", "riscv64");

    let install = action.install_with(&server.url, &[("PATH", &path)]);
    assert!(install.output.status.success(), "{install:#?}");
    assert!(install.github_output.ends_with("installed=false\n"));
    let stderr = install.stderr();
    assert!(
        stderr.contains("not installed: no prebuilt binary for Linux riscv64"),
        "{stderr}"
    );
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn the_build_cache_key_follows_the_sources_only() {
    let action = Action::new();
    std::fs::copy(repo().join("Cargo.lock"), action.root().join("Cargo.lock")).expect("copies");
    for folder in ["src", "crates"] {
        copy_tree(&repo().join(folder), &action.root().join(folder));
    }
    let source_hash = || {
        let output = action.script(&["source-hash"]).output().expect("bash runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("text")
    };
    let original = source_hash();
    assert_eq!(original.trim().len(), 64, "{original}");

    // Tests and docs are not built into the binary.
    std::fs::create_dir_all(action.root().join("tests")).expect("mkdir");
    std::fs::write(action.root().join("tests/new.rs"), "// a test\n").expect("writes");
    assert_eq!(source_hash(), original);

    let lib = action.root().join("crates/sqlgate-eval/src/lib.rs");
    let code = std::fs::read_to_string(&lib).expect("reads");
    std::fs::write(&lib, format!("{code}// changed\n")).expect("writes");
    assert_ne!(source_hash(), original);
    std::fs::write(&lib, &code).expect("writes");
    assert_eq!(source_hash(), original);

    // A file moved to another name is another source.
    let moved = action.root().join("crates/sqlgate-eval/src/lib2.rs");
    std::fs::rename(&lib, &moved).expect("renames");
    assert_ne!(source_hash(), original);
    std::fs::rename(&moved, &lib).expect("renames");

    let lock = action.root().join("Cargo.lock");
    let locked = std::fs::read_to_string(&lock).expect("reads");
    std::fs::write(&lock, format!("{locked}\n")).expect("writes");
    assert_ne!(source_hash(), original);
}
