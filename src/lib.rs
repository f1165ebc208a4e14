//! The `sqlgate` command and its reporters (terminal, JUnit, GitHub, score outputs), on top of
//! the library crates: `sqlgate-eval` (the evaluation core), `sqlgate-llm` (asking models),
//! `sqlgate` (the gate) and `sqlgate-generate` (the generators).

pub mod console;

pub mod cli;
