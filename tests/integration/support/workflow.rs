//! The shell scripts of a workflow or action file, read the way the runner reads its steps.

/// Every step's `run:` script: a `run: |` block de-indented, or a one-line `run: command`
/// (either may open a list item, `- run: ...`).
pub fn run_scripts(yaml: &str) -> Vec<String> {
    let mut scripts = Vec::new();
    let mut lines = yaml.lines().peekable();
    while let Some(line) = lines.next() {
        let key = line.trim_start();
        let Some(value) = key.strip_prefix("- ").unwrap_or(key).strip_prefix("run: ") else {
            continue;
        };
        if value != "|" {
            scripts.push(format!("{value}\n"));
            continue;
        }
        let key_indent = line.len() - line.trim_start().len();
        let mut script = Vec::new();
        while let Some(next) =
            lines.next_if(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key_indent)
        {
            script.push(next);
        }
        let indent = script
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        scripts.push(
            script
                .iter()
                .map(|l| l.get(indent..).unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n")
                + "\n",
        );
    }
    scripts
}

/// The one script of `yaml` that contains `marker`.
pub fn script_containing(yaml: &str, marker: &str) -> String {
    let mut found: Vec<String> = run_scripts(yaml)
        .into_iter()
        .filter(|script| script.contains(marker))
        .collect();
    assert_eq!(found.len(), 1, "one script contains {marker:?}: {found:#?}");
    found.remove(0)
}
