//! Renders results for people (text) and machines (JSON).

pub mod score_json;
pub mod score_text;
pub mod terminal;
