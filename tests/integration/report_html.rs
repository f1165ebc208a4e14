//! The HTML report: self-contained (nothing fetched), escaped (a question, SQL or result cell
//! holding markup stays text), rendered by headless Chromium without a console error, naming
//! every test and drawing a chart in every section; from run records too, with the gates'
//! history.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{copy_tree, repo, sqlgate, Run};
use sqlgate_test_support::skip::without_tool;

/// Markup that would run if the page inserted it as it is: it marks the document if it does.
const HOSTILE: &str = r#"</script><script>document.documentElement.setAttribute('data-pwned','1')</script><img src=x onerror="document.documentElement.setAttribute('data-pwned','1')">"#;

/// The repository's demo gate (every suite and family) in a temporary folder, the demo suite
/// with SQLMorph's fine-grained metrics, one question holding markup, and a regression whose
/// predicted SQL and result hold markup.
struct Demo {
    dir: tempfile::TempDir,
}

impl Demo {
    fn new() -> Demo {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(
            &repo().join("benchmarks/demo"),
            &dir.path().join("benchmarks/demo"),
        );
        std::fs::create_dir_all(dir.path().join("snapshots")).unwrap();
        for entry in std::fs::read_dir(repo().join("snapshots")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "snap") {
                std::fs::copy(
                    &path,
                    dir.path().join("snapshots").join(path.file_name().unwrap()),
                )
                .unwrap();
            }
        }
        let config = std::fs::read_to_string(repo().join("sqlgate.toml")).unwrap();
        let config = config.replacen(
            "structural = [\"etm\"]",
            "structural = [\"etm\"]\nregime = \"EC-PC-PE\"",
            1,
        );
        std::fs::write(dir.path().join("sqlgate.toml"), config).unwrap();
        let demo = Demo { dir };
        demo.edit_line("benchmarks/demo/cases.jsonl", "q03", "question", HOSTILE);
        // q01 is correct in the accepted snapshot: a wrong answer is a regression.
        // Not a lone string literal, which reads as an apology (an abstention).
        let sql = format!(
            "SELECT title || '{}' AS title FROM books WHERE genre = 'Poetry'",
            HOSTILE.replace('\'', "''")
        );
        demo.edit_line(
            "benchmarks/demo/predictions/sample.jsonl",
            "q01",
            "sql",
            &sql,
        );
        demo
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sqlgate(&self, args: &[&str]) -> Run {
        sqlgate()
            .args(args)
            .args(["--no-cache"])
            .current_dir(self.dir.path())
            .run()
    }

    /// Sets `field` of the JSON line whose `id` is `id`.
    fn edit_line(&self, file: &str, id: &str, field: &str, value: &str) {
        let path = self.path(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|line| {
                let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
                if record["id"] == id {
                    record[field] = value.into();
                }
                record.to_string()
            })
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }

    /// Every test name, as `sqlgate test --list` prints them.
    fn test_names(&self) -> Vec<String> {
        let run = sqlgate()
            .args(["test", "--list", "--format", "terse"])
            .current_dir(self.dir.path())
            .run();
        run.assert_success();
        run.text()
            .lines()
            .filter_map(|line| line.strip_suffix(": test"))
            .map(str::to_string)
            .collect()
    }

    /// The demo's report, written by `sqlgate test --html` (the regression fails the run).
    fn report(&self) -> String {
        self.sqlgate(&["test", "--html", "report.html"])
            .assert_code(100);
        std::fs::read_to_string(self.path("report.html")).unwrap()
    }
}

/// The `<section id="...">` elements of a page, by id.
fn sections(html: &str) -> Vec<(String, String)> {
    html.split("<section id=\"")
        .skip(1)
        .map(|part| {
            let (id, rest) = part.split_once('"').unwrap();
            let body = rest.split("</section>").next().unwrap();
            (id.to_string(), body.to_string())
        })
        .collect()
}

#[test]
fn the_page_names_no_outside_resource_and_keeps_markup_as_text() {
    let demo = Demo::new();
    let html = demo.report();
    // The template's two scripts, and no other element that could load or run anything.
    assert_eq!(html.matches("<script").count(), 2, "scripts");
    for forbidden in [
        "<img", "<link", "<iframe", "<object", "<embed", "@import", "url(",
    ] {
        assert!(!html.contains(forbidden), "the page holds {forbidden}");
    }
    assert!(!html.contains("://"), "the page names an address");
    let attribute =
        regex::Regex::new(r#"(?i)\b(src|href|action|xlink:href)\s*=\s*"([^"]*)""#).unwrap();
    for found in attribute.captures_iter(&html) {
        assert!(
            found[2].starts_with('#'),
            "a link out of the page: {}",
            &found[0]
        );
    }
    // The hostile question, predicted SQL and result cell are all there, as text.
    assert!(!html.contains("data-pwned','1')</script>"));
    let escaped = "&lt;&#x2f;script&gt;&lt;script&gt;document.documentElement";
    assert!(
        html.matches(escaped).count() >= 3,
        "question, SQL and cell escaped: {}",
        html.matches(escaped).count()
    );
    // The regression comes first among the cases, with its result rows side by side.
    let cases = &sections(&html)
        .into_iter()
        .find(|(id, _)| id == "cases")
        .unwrap()
        .1;
    let first = cases.split("<details class=\"c\"").nth(1).unwrap();
    assert!(
        first.starts_with(" data-rank=\"0\" open>"),
        "the first regression is open"
    );
    assert!(first.contains("demo::bookshop::q01") && first.contains("regression"));
    assert!(first.contains("class=\"differs\""), "marked cells: {first}");
}

#[test]
fn chromium_renders_every_test_and_a_chart_per_section() {
    let demo = Demo::new();
    let html = demo.report();
    let page = demo.path("report.html");
    let Some(dom) = chromium(&page, &["--dump-dom"], "") else {
        return;
    };
    let text = String::from_utf8_lossy(&dom.stdout);
    // With --enable-logging, every console message of the page is a `:CONSOLE` line; the
    // page writes none, so any is an error (a script error, a refused load).
    let stderr = String::from_utf8_lossy(&dom.stderr).into_owned();
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    // The page's script marks the root element when it finishes, and with any error it met.
    let root = text.split("<head>").next().unwrap();
    assert!(
        root.contains("data-ready=\"true\""),
        "the script did not finish: {root}"
    );
    assert!(!root.contains("data-errors"), "script errors: {root}");
    assert!(
        !root.contains("data-pwned"),
        "markup from the data ran: {root}"
    );
    for name in demo.test_names() {
        assert!(text.contains(&name), "{name} is not on the page");
    }
    let ids: Vec<String> = sections(&text).into_iter().map(|(id, _)| id).collect();
    for part in [
        "run",
        "gates",
        "metrics",
        "families",
        "abstention",
        "fine",
        "cases",
    ] {
        assert!(
            ids.iter().any(|id| id == part),
            "no section {part}: {ids:?}"
        );
    }
    for (id, body) in sections(&text) {
        assert!(body.contains("<svg"), "section {id} has no chart");
    }
    // A screenshot of the page; with `SQLGATE_UPDATE_SCREENSHOTS=1`, one of each section as
    // the docs' (a browser per section is too much work for every test run).
    let keep = std::env::var_os("SQLGATE_UPDATE_SCREENSHOTS").is_some_and(|v| v != "0");
    let shots: Vec<(String, PathBuf)> = match keep {
        true => sections(&html)
            .into_iter()
            .map(|(id, _)| {
                (
                    format!("#only={id}"),
                    repo().join(format!("docs/report/{id}.png")),
                )
            })
            .collect(),
        false => vec![(String::new(), demo.path("page.png"))],
    };
    for (fragment, shot) in shots {
        let argument = format!("--screenshot={}", shot.display());
        chromium(&page, &[&argument, "--window-size=1280,1500"], &fragment)
            .expect("chromium ran before");
        let png = std::fs::read(&shot).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{fragment}: no screenshot"
        );
    }
}

/// Headless Chromium on `page` (with `fragment`), or `None` (a skip) where it is not installed.
fn chromium(page: &Path, arguments: &[&str], fragment: &str) -> Option<Output> {
    let profile = tempfile::tempdir().unwrap();
    // To files, not pipes: a page's DOM outgrows a pipe's buffer while chromium waits.
    let (out, err) = (profile.path().join("out"), profile.path().join("err"));
    let spawned = Command::new("chromium")
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--hide-scrollbars",
        ])
        .args(["--enable-logging=stderr", "--v=0", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(arguments)
        .arg(format!("file://{}{fragment}", page.display()))
        .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(_) => {
            without_tool("chromium (apt-get install chromium)");
            return None;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = Output {
        status: child.wait().unwrap(),
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    };
    assert!(
        output.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(output)
}

#[test]
fn a_report_from_run_records_shows_the_gates_history() {
    let demo = Demo::new();
    // An earlier whole run, then this one's shards.
    demo.sqlgate(&["test", "--record-out", "earlier.json"])
        .assert_code(100);
    for shard in 1..=2 {
        let partition = format!("hash:{shard}/2");
        let record = format!("shard-{shard}.json");
        demo.sqlgate(&["test", "--partition", &partition, "--record-out", &record]);
    }
    let report = sqlgate()
        .args([
            "report",
            "shard-1.json",
            "shard-2.json",
            "--html",
            "merged.html",
        ])
        .args(["--history", "earlier.json"])
        .current_dir(demo.dir.path())
        .run();
    report.assert_success();
    let html = std::fs::read_to_string(demo.path("merged.html")).unwrap();
    assert!(html.contains("sqlgate report from 2 run records"), "origin");
    assert!(html.contains("demo::gate::ex") && html.contains("History over the earlier runs"));
    let gates = &sections(&html)
        .into_iter()
        .find(|(id, _)| id == "gates")
        .unwrap()
        .1;
    // The history's x axis names the earlier run (its date, without GITHUB_SHA) and this one.
    assert!(gates.contains("this run"), "{gates:.3000}");
    // A shard's record holds no gate outcome: it is no history.
    let refused = sqlgate()
        .args(["report", "shard-1.json", "shard-2.json", "--html", "x.html"])
        .args(["--history", "shard-1.json"])
        .current_dir(demo.dir.path())
        .run();
    refused.assert_code(2);
    assert!(
        refused.text().contains("holds no gate outcomes"),
        "{}",
        refused.text()
    );
    // The report of the records matches the one `sqlgate test` wrote, section for section.
    let direct = demo.report();
    let cases = |html: &str| {
        sections(html)
            .into_iter()
            .find(|(id, _)| id == "cases")
            .unwrap()
            .1
    };
    assert_eq!(cases(&html), cases(&direct));
}
