//! The integration tests: one binary (one link of the whole stack), one module per area. Each
//! module's tests are named after it: `cargo test --test integration gate_demo::`.
//!
//! A new area is a file here plus its `mod` line below; the modules share `support` (running
//! `sqlgate`, the demo fixtures) and `llm_support` (a scripted OpenAI-format server).

mod llm_support;
mod support;

mod audit;
mod calibrate;
mod case_metrics;
mod cli_init;
mod cli_score;
mod diff;
mod distill;
mod distill_safety;
mod doc_commands;
mod doc_links;
mod doc_snippets;
mod efficiency_gate;
mod efficiency_parity;
#[cfg(feature = "embedder")]
mod embedder;
mod engine_imports;
mod engines;
#[cfg(feature = "duckdb")]
mod engines_duckdb;
mod etm_reference;
mod every_database;
mod exit_codes;
mod family_metrics;
mod fuzz_properties;
mod gate_cassette;
mod gate_config;
mod gate_cost;
mod gate_demo;
mod gate_guidance;
mod gate_openai;
mod gate_scale;
mod gate_warnings;
mod generate_errors;
mod generate_infeasible;
mod generate_jqe;
mod generate_paraphrase;
mod generate_rewrites;
mod generate_tqa;
mod harness_reuse;
mod hostile_inputs;
mod hostile_names;
mod hostile_sql;
mod install_script;
mod llm_client;
mod llm_openai;
mod memory_budget;
mod output_snapshots;
mod partial_cell_note;
mod postgres;
mod reference_defaults;
mod reference_parity;
mod reliability;
mod report_action;
mod report_github;
mod report_html;
mod report_junit;
mod report_snapshot;
mod reuse_property;
mod sampled;
mod sandbox;
mod schema_db;
mod score_gate_parity;
mod secrets;
mod security_doc;
mod shared_data;
mod soft_f1_outputs;
mod soft_f1_parity;
mod sqlmorph_properties;
mod state;
mod structural;
mod suite_folder_checks;
mod system_cassette;
mod system_command;
mod system_http;
mod system_kill;
mod system_replay;
mod system_throttle;
