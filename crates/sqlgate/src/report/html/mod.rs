//! The HTML report: one self-contained page (inline CSS, SVG charts and a little script for
//! filtering and sorting; nothing fetched) for the people who decide whether a change ships.
//! [`Page`] is built from a finished run, rendered through `report.html` by minijinja with
//! HTML auto-escaping, so no question, SQL or tag can add markup; only the charts, which
//! plotters writes and escapes, are inserted as they are.

mod cases;
mod charts;
mod input;
mod page;
mod preview;
mod suites;

use std::path::Path;

use minijinja::value::Serde;
use minijinja::{context, Environment};

use sqlgate_eval::error::OutputError;
use sqlgate_eval::files::write_text;

pub use cases::DETAILED_CASES;
pub use input::{EarlierRun, ReportInput, RunFacts};
pub use page::Page;

/// The page's template: `.html`, so minijinja escapes every value for HTML.
const TEMPLATE: (&str, &str) = ("report.html", include_str!("report.html"));

/// The page of `input` as an HTML document.
pub fn render(input: &ReportInput) -> Result<String, minijinja::Error> {
    let mut env = Environment::new();
    env.add_template(TEMPLATE.0, TEMPLATE.1)?;
    env.get_template(TEMPLATE.0)?
        .render(context! { page => Serde(Page::build(input)) })
}

/// Writes the page of `input` to `path`, atomically, creating its folder.
pub fn write(path: &Path, input: &ReportInput) -> Result<(), OutputError> {
    let html = render(input).map_err(|e| OutputError::new(path, std::io::Error::other(e)))?;
    write_text(path, &html)
}
