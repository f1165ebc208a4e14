//! What the throwaway servers of the tests share: a free port, a folder given to the server's
//! OS user, and programs run with their output checked.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

/// Makes `dir` the OS user `user`'s, so a server that refuses to run as root can use it.
pub(crate) fn give_to(dir: &Path, user: &str) {
    let name = std::ffi::CString::new(user).expect("a user name");
    // SAFETY: getpwnam reads a NUL-terminated name; the record is copied before another call.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    assert!(
        !entry.is_null(),
        "running as root, the server needs the OS user `{user}` (its Debian package creates it)"
    );
    // SAFETY: checked non-null above.
    let (uid, gid) = unsafe { ((*entry).pw_uid, (*entry).pw_gid) };
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("chown the server's folder");
}

/// A port of 127.0.0.1 nobody listens on now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port on 127.0.0.1")
}

pub(crate) fn checked(program: &str, command: &mut Command, log: Option<&Path>) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    if !output.status.success() {
        let log = log
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        panic!(
            "{program} failed ({}): {}{}\n{log}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    output
}

pub(crate) fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}
