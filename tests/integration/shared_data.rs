//! Tests that need `../shared/data` skip visibly where it is absent (each skip printed, and
//! counted when the binary exits), and fail where it is expected (`SQLGATE_REQUIRE_SHARED_DATA`,
//! set by `.ci/run`).

use std::process::Command;

use sqlgate_test_support::{shared_data, REQUIRE_SHARED_DATA};

/// Run only by [`absent_data_skips_visibly_unless_required`], in a child process.
#[test]
fn probe_for_shared_data() {
    if std::env::var_os("SQLGATE_PROBE").is_some() {
        assert_eq!(shared_data(), None);
    }
}

/// Absent, or an empty folder (how `.ci/run` hides the data): the same skip.
#[test]
fn absent_data_skips_visibly_unless_required() {
    let temp = tempfile::tempdir().unwrap();
    let empty = temp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for hidden in [temp.path().join("no-data"), empty] {
        let probe = |required: Option<&str>| {
            let mut command = Command::new(std::env::current_exe().unwrap());
            command
                .args(["shared_data::probe_for_shared_data", "--exact"])
                .env("SQLGATE_PROBE", "1")
                .env("SQLGATE_SHARED_DATA", &hidden)
                .env_remove(REQUIRE_SHARED_DATA);
            if let Some(value) = required {
                command.env(REQUIRE_SHARED_DATA, value);
            }
            let output = command.output().unwrap();
            let text = String::from_utf8_lossy(&output.stdout).to_string()
                + &String::from_utf8_lossy(&output.stderr);
            (output.status.success(), text)
        };
        let (passed, text) = probe(None);
        assert!(passed, "{text}");
        assert!(
            text.contains("skipped: shared_data::probe_for_shared_data needs"),
            "the skip is printed past libtest's capture: {text}"
        );
        assert!(
            text.contains("note: 1 check was skipped, lacking: "),
            "the binary's skips are counted as it exits: {text}"
        );
        let (passed, _) = probe(Some("0"));
        assert!(passed);
        let (passed, text) = probe(Some("1"));
        assert!(!passed, "{text}");
        assert!(
            text.contains("is missing and SQLGATE_REQUIRE_SHARED_DATA is set"),
            "{text}"
        );
    }
}
