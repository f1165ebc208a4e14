//! The `sqlgate.toml` that `sqlgate init` writes: one `[[suite]]`, the system under test (a
//! predictions file replayed, or commented templates), and the CI profile's starting threshold.
//! Every key is one of docs/config.md and docs/systems.md; comments say what each part does.
//! Values go through the `toml` crate; the one user text in a comment, the suite's name, holds
//! no control character (init checks), so it cannot end the comment.

use sqlgate::gate::judge::format_metric;
use sqlgate_eval::loaders::GoldFormat;
use sqlgate_eval::metrics::ex::Mode;

/// The `[[suite]]`, its paths as written (relative to the configuration's folder).
pub struct SuiteEntry {
    pub name: String,
    pub benchmark: String,
    pub db_dir: Option<String>,
    pub format: GoldFormat,
    pub mode: Mode,
    pub cases: usize,
}

/// What answers the questions.
pub enum SystemEntry {
    /// A predictions file, replayed.
    Replay { name: String, predictions: String },
    /// Nothing yet: commented templates, so `sqlgate test` stops and asks for a system.
    Templates,
}

/// The CI profile's threshold on execution accuracy.
pub enum StartingGate {
    /// Nothing measured: a commented default to set once a system answers.
    Unmeasured,
    /// Measured on the replayed predictions: `ex` over `cases` feasible cases.
    Measured { ex: f64, cases: usize },
}

/// Starting thresholds are multiples of 1/20 (0.05).
const THRESHOLD_STEPS: f64 = 20.0;

/// The commented default threshold, before anything was measured.
const DEFAULT_THRESHOLD: &str = ">= 0.5";

/// An OpenAI-compatible endpoint, as a template (written commented).
const OPENAI_TEMPLATE: &str = r#"[[system]]
name = "my-model"
type = "openai"
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"
"#;

/// A program asked once per case, as a template (written commented).
const COMMAND_TEMPLATE: &str = r#"[[system]]
name = "my-program"
type = "command"
command = ["python3", "text_to_sql.py"]
env_secrets = ["OPENAI_API_KEY"]
"#;

/// The highest multiple of 0.05 that `ex` meets: the gate passes on the predictions it was
/// measured on, and fails once they lose a step.
pub fn starting_threshold(ex: f64) -> f64 {
    // `k / 20` is the number `"0.7"` parses to, which `k * 0.05` need not be (14 * 0.05 is
    // 0.7000000000000001); the estimate is corrected both ways for rounding.
    let mut k = (ex * THRESHOLD_STEPS).floor();
    if k / THRESHOLD_STEPS > ex {
        k -= 1.0;
    }
    if (k + 1.0) / THRESHOLD_STEPS <= ex {
        k += 1.0;
    }
    (k / THRESHOLD_STEPS).max(0.0)
}

/// The whole file; `profile` is the CI profile's name and `repository` sqlgate's on GitHub.
pub fn render(
    suite: &SuiteEntry,
    system: &SystemEntry,
    gate: &StartingGate,
    profile: &str,
    repository: &str,
) -> String {
    let mut text = format!(
        "# The text-to-SQL gate, written by `sqlgate init`. Every key is described in\n\
         # https://github.com/{repository}/blob/main/docs/config.md; paths are relative to this file.\n\n"
    );
    text += &suite_section(suite);
    text += "\n";
    text += &system_section(system);
    text += "\n";
    text += &profile_section(gate, profile);
    text
}

fn suite_section(suite: &SuiteEntry) -> String {
    let mut text = format!(
        "# The benchmark: each of its {} cases is a test named `{}::<db>::<case-id>`, passing when\n\
         # the answer is correct, or wrong and accepted as a known failure in snapshots/{}.snap.\n\
         # Format `{}` (detected), scored as its own evaluator does (mode `{}`).\n\
         [[suite]]\n\
         name = {}\n\
         benchmark = {}\n",
        suite.cases,
        suite.name,
        suite.name,
        format_name(suite.format),
        suite.mode.name(),
        toml_string(&suite.name),
        toml_string(&suite.benchmark),
    );
    if let Some(db_dir) = &suite.db_dir {
        text += &format!("db_dir = {}\n", toml_string(db_dir));
    }
    text
}

fn system_section(system: &SystemEntry) -> String {
    match system {
        SystemEntry::Replay { name, predictions } => format!(
            "# The system under test: this predictions file answers each case by its id. To ask your\n\
             # system itself, replace it with a `command`, `http` or `openai` system (docs/systems.md):\n\
             # its answers are then recorded in snapshots/predictions/ and replayed in CI.\n\
             [[system]]\n\
             name = {}\n\
             type = \"replay\"\n\
             predictions = {}\n",
            toml_string(name),
            toml_string(predictions)
        ),
        SystemEntry::Templates => format!(
            "# The system under test: none yet, so `sqlgate test` stops and asks for one. Uncomment one\n\
             # of these and fill it in (docs/systems.md), or replay a predictions file with\n\
             # `type = \"replay\"` and `predictions = \"predictions.jsonl\"`. A system's answers are\n\
             # recorded in snapshots/predictions/<name>.jsonl: commit them, and CI replays them.\n\
             \n\
             # An OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp); the key is read\n\
             # from the variable named, never written here:\n\
             {}\n\
             # A program run once per case: the request as JSON on stdin, `{{\"sql\": \"...\"}}` on stdout:\n\
             {}",
            commented(OPENAI_TEMPLATE),
            commented(COMMAND_TEMPLATE)
        ),
    }
}

fn profile_section(gate: &StartingGate, profile: &str) -> String {
    let header = format!(
        "# The profile CI runs (.github/workflows/sqlgate.yml; locally `sqlgate test --profile {profile}`):\n\
         # thresholds on top of the per-case verdicts.\n\
         [profile.{profile}]\n"
    );
    let gate = match gate {
        StartingGate::Measured { ex, cases } => format!(
            "# Measured by `sqlgate init` on the predictions above: ex = {} over {cases} feasible \
             case{}.\n\
             # A starting point: raise it as the system improves.\n\
             gate = {{ ex = \">= {}\" }}\n",
            format_metric(*ex),
            if *cases == 1 { "" } else { "s" },
            format_metric(starting_threshold(*ex)),
        ),
        StartingGate::Unmeasured => format!(
            "# A threshold on execution accuracy, once a system answers: set it at or just below the ex\n\
             # it reaches (a failing gate says the value, as does the JUnit report's `ex` property)\n\
             # and raise it as the system improves.\n\
             # gate = {{ ex = \"{DEFAULT_THRESHOLD}\" }}\n"
        ),
    };
    header + &gate
}

/// Every line of `text` commented out.
fn commented(text: &str) -> String {
    text.lines().map(|line| format!("# {line}\n")).collect()
}

/// A format's name as `sqlgate.toml` and `--gold-format` write it (`spider-json`).
pub fn format_name(format: GoldFormat) -> String {
    match serde_json::to_value(format) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{format:?}"),
    }
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    fn suite() -> SuiteEntry {
        SuiteEntry {
            name: "questions".into(),
            benchmark: "data/questions \"v2\".csv".into(),
            db_dir: Some("db".into()),
            format: GoldFormat::Defog,
            mode: Mode::Defog,
            cases: 3,
        }
    }

    /// The file with its commented system templates and threshold uncommented: what a user who
    /// fills them in gets.
    fn uncommented() -> String {
        let text = render(
            &suite(),
            &SystemEntry::Templates,
            &StartingGate::Unmeasured,
            "ci",
            "sqlgate/sqlgate",
        );
        text.replace(&commented(OPENAI_TEMPLATE), OPENAI_TEMPLATE)
            .replace(&commented(COMMAND_TEMPLATE), COMMAND_TEMPLATE)
            .replace("# gate = ", "gate = ")
    }

    #[test]
    fn the_threshold_is_the_highest_step_the_measure_meets() {
        for (ex, threshold) in [
            (0.0, 0.0),
            (0.04, 0.0),
            (0.05, 0.05),
            (2.0 / 3.0, 0.65),
            (0.7, 0.7),
            (0.7 - 1e-12, 0.65),
            (14.0 / 20.0, 0.7),
            (0.8, 0.8),
            (0.999, 0.95),
            (1.0, 1.0),
        ] {
            let found = starting_threshold(ex);
            assert!(
                (found - threshold).abs() < 1e-9 && found <= ex,
                "{ex} -> {found}, not {threshold}"
            );
        }
        // Every count of correct cases out of n: the written threshold holds on the measure.
        for n in 1..=200u32 {
            for correct in 0..=n {
                let ex = f64::from(correct) / f64::from(n);
                let written: f64 = format_metric(starting_threshold(ex)).parse().unwrap();
                assert!(
                    written <= ex && ex - written < 1.0 / THRESHOLD_STEPS,
                    "{correct}/{n}"
                );
            }
        }
    }

    #[test]
    fn the_templates_and_the_default_gate_load_once_uncommented() {
        let config = sqlgate::config::Config::parse(Path::new("sqlgate.toml"), uncommented())
            .unwrap_or_else(|error| panic!("{error}\n{}", uncommented()));
        let names: Vec<&str> = config.systems.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["my-model", "my-program"]);
        let profile = config.profile("ci").expect("the ci profile");
        assert_eq!(profile.gate.len(), 1);
        assert_eq!(
            config.suites[0].get_ref().benchmark,
            Path::new("data/questions \"v2\".csv")
        );
    }

    /// Every key the file may hold, commented or not, is in the reference: docs/config.md or,
    /// for a system type's own keys, docs/systems.md.
    #[test]
    fn every_key_written_is_documented() {
        let docs_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        let docs = ["config.md", "systems.md"]
            .map(|file| std::fs::read_to_string(docs_dir.join(file)).expect("reads the docs"))
            .join("\n");
        let measured = render(
            &suite(),
            &SystemEntry::Replay {
                name: "predictions".into(),
                predictions: "predictions.jsonl".into(),
            },
            &StartingGate::Measured { ex: 0.7, cases: 3 },
            "ci",
            "sqlgate/sqlgate",
        );
        let mut keys = BTreeSet::new();
        for text in [uncommented(), measured] {
            let table: toml::Table = text.parse().expect("TOML");
            collect_keys(&toml::Value::Table(table), &mut keys);
        }
        let undocumented: Vec<&String> = keys
            .iter()
            .filter(|key| !docs.contains(&format!("{key} = ")))
            .collect();
        assert!(undocumented.is_empty(), "not in the docs: {undocumented:?}");
        assert!(keys.contains("api_key_env") && keys.contains("predictions"));
    }

    /// The keys of values (not of tables: `suite`, `system`, `profile`, `ci`).
    fn collect_keys(value: &toml::Value, keys: &mut BTreeSet<String>) {
        let tables: Vec<&toml::Table> = match value {
            toml::Value::Table(table) => vec![table],
            toml::Value::Array(items) => items.iter().filter_map(|v| v.as_table()).collect(),
            _ => Vec::new(),
        };
        for table in tables {
            for (key, value) in table {
                let nested = value.is_table() && key != "gate"
                    || value
                        .as_array()
                        .is_some_and(|a| a.iter().all(|v| v.is_table()));
                if !nested {
                    keys.insert(key.clone());
                }
                collect_keys(value, keys);
            }
        }
    }

    #[test]
    fn a_measured_gate_says_what_was_measured() {
        let text = render(
            &suite(),
            &SystemEntry::Replay {
                name: "predictions".into(),
                predictions: "predictions.jsonl".into(),
            },
            &StartingGate::Measured {
                ex: 2.0 / 3.0,
                cases: 3,
            },
            "ci",
            "sqlgate/sqlgate",
        );
        assert!(
            text.contains("on the predictions above: ex = 0.6667 over 3 feasible cases.\n"),
            "{text}"
        );
        assert!(text.contains("[profile.ci]\n"), "{text}");
        assert!(text.contains("\ngate = { ex = \">= 0.65\" }\n"), "{text}");
    }
}
