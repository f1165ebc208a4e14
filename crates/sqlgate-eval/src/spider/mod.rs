//! A port of the Spider evaluation parser (`process_sql.py` of `taoyds/test-suite-sql-eval`):
//! the SQL structure used by hardness classification and exact set match.
//!
//! - [`tokenize`]: string literals as single tokens, the rest split like NLTK's `word_tokenize`.
//! - [`Schema`]: lowercased table and column names, read from SQLite or `tables.json`.
//! - [`parse`]: the `get_sql` structure ([`Sql`]), with the reference's quirks.
//! - [`hardness`]: the Spider difficulty level (`evaluators.md` §2.5).
//! - [`schema_db`]: schema-only SQLite databases built from `tables.json`.

mod ast;
mod hardness;
mod parse;
mod schema;
pub mod schema_db;
mod tokenize;

#[cfg(test)]
mod tests;

pub use ast::{
    AggOp, ColUnit, CondUnit, Condition, Connector, FromClause, Operand, OrderBy, OrderDirection,
    Select, SelectItem, Sql, TableUnit, UnitOp, ValUnit, WhereOp,
};
pub use hardness::{hardness, Hardness, UnknownHardness};
pub use parse::{parse, ParseError};
pub use schema::{read_tables_json, PrimaryKey, Schema, Table, TablesJsonEntry};
pub use tokenize::tokenize;

/// Parses `sql` against `schema` and classifies it; an unparseable query is an error (the
/// reference crashes on such a gold query, the harness reports it as unparsed).
pub fn classify(sql: &str, schema: &Schema) -> Result<Hardness, ParseError> {
    parse(sql, schema).map(|tree| hardness(&tree))
}
