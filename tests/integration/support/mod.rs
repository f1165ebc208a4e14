//! What the test modules share: running the `sqlgate` binary, and the demo fixtures.

mod command;
mod fixtures;
mod tools;
mod tree;
pub mod workflow;

pub use command::{binary_in_use, binary_rebuilding, sqlgate, Run, Sqlgate};
pub use fixtures::{
    demo, demo_workspace, doc_files, replace_prediction, repo, repository_gate_copy,
};
pub use sqlgate_test_support::shared_data;
pub use tools::{python_with, run_python, wordnet_installed};
pub use tree::{copy_tree, every_file};
