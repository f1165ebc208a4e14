//! Renders results for people (text) and machines (JSON). The outputs a finished gate run
//! writes (JUnit, GitHub, the families' tables) live in the gate crate, shared with `harness!`.

pub mod libtest_json;
pub mod progress;
pub mod score_json;
pub mod score_text;
pub mod terminal;
