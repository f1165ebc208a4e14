//! Renders results for people (text) and machines (JSON).

pub mod github;
pub mod junit;
pub mod score_json;
pub mod score_text;
pub mod terminal;
