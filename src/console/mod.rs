//! What the `sqlgate` process prints: results for people (the terminal report, progress,
//! `score`'s text) and for machines (libtest JSON, `score`'s JSON). The files a gate run writes
//! for others to read (JUnit, GitHub outputs, HTML) are the gate crate's `report`, shared with
//! `harness!`.

pub mod libtest_json;
pub mod progress;
pub mod score_json;
pub mod score_text;
pub mod terminal;
