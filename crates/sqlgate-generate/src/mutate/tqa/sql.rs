//! Gold SQL onto the renamed schema, on the sqlparser AST (SQLite dialect): only identifiers
//! change (table names, qualifiers and columns, quoted or not, keeping their quotes); string
//! literals never do, even one that spells a column name.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Ident, ObjectName, ObjectNamePart, Statement, VisitMut, VisitorMut};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::{Parser, ParserError};

use super::rename::RenameMap;
use sqlgate_eval::sqltext::{self, TooComplex};

/// Why TQA cannot read or rename a query.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SqlError {
    /// Too long or too deeply nested to parse safely.
    #[error("{0}")]
    TooComplex(TooComplex),
    /// The parser's error (SQLite dialect).
    #[error(transparent)]
    Parse(#[from] ParserError),
    /// One statement, but no query.
    #[error("not a query")]
    NotAQuery,
}

/// The one place TQA parses SQL, within the bounds on untrusted SQL (size, nesting depth).
fn parse(sql: &str) -> Result<Vec<Statement>, SqlError> {
    sqltext::check(sql).map_err(SqlError::TooComplex)?;
    Ok(Parser::parse_sql(&SQLiteDialect {}, sql)?)
}

/// The single query of `sql` (for join-graph analysis).
pub fn parse_query(sql: &str) -> Result<sqlparser::ast::Query, SqlError> {
    match parse(sql)?.into_iter().next() {
        Some(Statement::Query(query)) => Ok(*query),
        _ => Err(SqlError::NotAQuery),
    }
}

/// `sql` with every renamed table and column written with its new name.
pub fn rename_sql(sql: &str, map: &RenameMap) -> Result<String, SqlError> {
    let depth = sqltext::check(sql).map_err(SqlError::TooComplex)?.depth;
    // Parsed, walked and dropped where the stack is deep enough for the query.
    sqltext::run(depth, || {
        let mut statements = parse(sql)?;
        let _ = statements.visit(&mut Renamer { map });
        Ok(statements
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "))
    })
    .map_err(SqlError::TooComplex)?
}

struct Renamer<'a> {
    map: &'a RenameMap,
}

impl Renamer<'_> {
    fn table(&self, ident: &mut Ident) {
        if let Some(new) = self.map.table(&ident.value) {
            ident.value = new.to_string();
        }
    }

    fn column(&self, ident: &mut Ident) {
        if let Some(new) = self.map.column(&ident.value) {
            ident.value = new.to_string();
        }
    }
}

impl VisitorMut for Renamer<'_> {
    type Break = ();

    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> ControlFlow<()> {
        if let Some(ObjectNamePart::Identifier(ident)) = relation.0.last_mut() {
            self.table(ident);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Identifier(ident) => self.column(ident),
            Expr::CompoundIdentifier(parts) => {
                let n = parts.len();
                if let Some(last) = parts.last_mut() {
                    self.column(last);
                }
                if n >= 2 {
                    self.table(&mut parts[n - 2]);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> RenameMap {
        let mut map = RenameMap::default();
        map.tables.insert("books".into(), "bks".into());
        map.columns.insert("name".into(), "nm".into());
        map.columns.insert("title".into(), "ttl".into());
        map
    }

    #[test]
    fn identifiers_change_and_literals_that_spell_them_do_not() {
        let sql = "SELECT b.title, \"name\" FROM books AS b WHERE b.title = 'title' AND name <> 'name' ORDER BY books.title";
        assert_eq!(
            rename_sql(sql, &map()).unwrap(),
            "SELECT b.ttl, \"nm\" FROM bks AS b WHERE b.ttl = 'title' AND nm <> 'name' ORDER BY bks.ttl"
        );
    }

    #[test]
    fn subqueries_and_functions_are_renamed_inside() {
        let sql = "SELECT COUNT(*) FROM books WHERE title IN (SELECT name FROM books WHERE LENGTH(title) > 3)";
        assert_eq!(
            rename_sql(sql, &map()).unwrap(),
            "SELECT COUNT(*) FROM bks WHERE ttl IN (SELECT nm FROM bks WHERE LENGTH(ttl) > 3)"
        );
    }
}
