//! Single-error mutants of a state case's gold statements: the mistakes an answer that changes
//! the database makes most, one statement of the script changed at a time:
//! - `where_dropped`: an UPDATE's or DELETE's WHERE left out, so every row changes;
//! - `set_column_swapped`: an UPDATE's assignment given to another column of its table;
//! - `wrong_table`: an INSERT, UPDATE or DELETE aimed at another table of the database.
//!
//! Each mutant is the whole script with that one statement rewritten (SQLite's dialect, as
//! [`super::mutants_of`] reads golds); the choice of column or table is drawn from a seeded
//! stream of the seed case and operator (the generators' `rng` module), so it does not depend
//! on the order of the benchmark.

use rand::RngExt;
use sqlparser::ast::{
    AssignmentTarget, FromTable, ObjectName, Statement, TableFactor, TableObject,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use super::rng::labelled_stream;

/// The DML operators, in the order mutants are written.
pub const DML_OPERATORS: [&str; 3] = ["where_dropped", "set_column_swapped", "wrong_table"];

/// A mutant of a state case's script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmlMutant {
    /// The operator applied ([`DML_OPERATORS`]).
    pub operator: &'static str,
    /// The 1-based number of the statement it changed.
    pub statement: usize,
    /// The whole script, that statement rewritten.
    pub script: String,
}

/// Every operator's mutant of each statement of `statements` where it applies; `tables` are
/// the database's tables with their columns. Deterministic for `run_seed`.
pub fn dml_mutants(
    seed_id: &str,
    statements: &[String],
    tables: &[(String, Vec<String>)],
    run_seed: u64,
) -> Vec<DmlMutant> {
    let mut found = Vec::new();
    for (index, text) in statements.iter().enumerate() {
        let Ok(mut parsed) = Parser::parse_sql(&SQLiteDialect {}, text) else {
            continue;
        };
        if parsed.len() != 1 {
            continue;
        }
        let statement = parsed.remove(0);
        for operator in DML_OPERATORS {
            let number = (index + 1).to_string();
            let mut rng = labelled_stream(run_seed, seed_id, &["dml", operator, &number]);
            let mut pick = |n: usize| rng.random_range(0..n);
            let mut mutated = statement.clone();
            let applied = match operator {
                "where_dropped" => drop_where(&mut mutated),
                "set_column_swapped" => swap_set_column(&mut mutated, tables, &mut pick),
                _ => retarget(&mut mutated, tables, &mut pick),
            };
            if !applied {
                continue;
            }
            let mut script = statements.to_vec();
            script[index] = mutated.to_string();
            found.push(DmlMutant {
                operator,
                statement: index + 1,
                script: script.join(";\n"),
            });
        }
    }
    found
}

fn drop_where(statement: &mut Statement) -> bool {
    let selection = match statement {
        Statement::Update(update) => &mut update.selection,
        Statement::Delete(delete) => &mut delete.selection,
        _ => return false,
    };
    selection.take().is_some()
}

/// The last part of a name, unquoted.
fn last_part(name: &ObjectName) -> Option<String> {
    name.0
        .last()
        .and_then(|part| part.as_ident())
        .map(|ident| ident.value.clone())
}

fn columns_of<'a>(tables: &'a [(String, Vec<String>)], table: &str) -> Option<&'a [String]> {
    tables
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(table))
        .map(|(_, columns)| columns.as_slice())
}

fn swap_set_column(
    statement: &mut Statement,
    tables: &[(String, Vec<String>)],
    pick: &mut dyn FnMut(usize) -> usize,
) -> bool {
    let Statement::Update(update) = statement else {
        return false;
    };
    let TableFactor::Table { name, .. } = &update.table.relation else {
        return false;
    };
    let Some(columns) = last_part(name).and_then(|table| columns_of(tables, &table)) else {
        return false;
    };
    let assigned: Vec<String> = update
        .assignments
        .iter()
        .filter_map(|a| match &a.target {
            AssignmentTarget::ColumnName(column) => last_part(column),
            AssignmentTarget::Tuple(_) => None,
        })
        .collect();
    let Some(first) = update
        .assignments
        .iter_mut()
        .find(|a| matches!(a.target, AssignmentTarget::ColumnName(_)))
    else {
        return false;
    };
    let others: Vec<&String> = columns
        .iter()
        .filter(|c| !assigned.iter().any(|a| a.eq_ignore_ascii_case(c)))
        .collect();
    if others.is_empty() {
        return false;
    }
    let other = others[pick(others.len())];
    first.target =
        AssignmentTarget::ColumnName(ObjectName::from(vec![sqlparser::ast::Ident::with_quote(
            '"',
            other.clone(),
        )]));
    true
}

fn retarget(
    statement: &mut Statement,
    tables: &[(String, Vec<String>)],
    pick: &mut dyn FnMut(usize) -> usize,
) -> bool {
    let name: &mut ObjectName = match statement {
        Statement::Insert(insert) => match &mut insert.table {
            TableObject::TableName(name) => name,
            _ => return false,
        },
        Statement::Update(update) => match &mut update.table.relation {
            TableFactor::Table { name, .. } => name,
            _ => return false,
        },
        Statement::Delete(delete) => {
            let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) =
                &mut delete.from;
            match from.first_mut().map(|t| &mut t.relation) {
                Some(TableFactor::Table { name, .. }) => name,
                _ => return false,
            }
        }
        _ => return false,
    };
    let Some(current) = last_part(name) else {
        return false;
    };
    let others: Vec<&String> = tables
        .iter()
        .map(|(table, _)| table)
        .filter(|table| !table.eq_ignore_ascii_case(&current))
        .collect();
    if others.is_empty() {
        return false;
    }
    let other = others[pick(others.len())];
    *name = ObjectName::from(vec![sqlparser::ast::Ident::with_quote('"', other.clone())]);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> Vec<(String, Vec<String>)> {
        vec![
            (
                "books".into(),
                vec!["book_id".into(), "title".into(), "price".into()],
            ),
            ("orders".into(), vec!["order_id".into(), "status".into()]),
        ]
    }

    fn mutants(script: &[&str]) -> Vec<DmlMutant> {
        let statements: Vec<String> = script.iter().map(|s| s.to_string()).collect();
        dml_mutants("s1", &statements, &tables(), 42)
    }

    #[test]
    fn each_operator_changes_one_statement_where_it_applies() {
        let found = mutants(&[
            "UPDATE books SET price = price * 1.1 WHERE title = 'x'",
            "DELETE FROM orders WHERE status = 'cancelled'",
        ]);
        let shown: Vec<(&str, usize)> = found.iter().map(|m| (m.operator, m.statement)).collect();
        assert_eq!(
            shown,
            [
                ("where_dropped", 1),
                ("set_column_swapped", 1),
                ("wrong_table", 1),
                ("where_dropped", 2),
                ("wrong_table", 2),
            ]
        );
        assert_eq!(
            found[0].script,
            "UPDATE books SET price = price * 1.1;\nDELETE FROM orders WHERE status = 'cancelled'"
        );
        let swapped = &found[1].script;
        assert!(
            swapped.starts_with("UPDATE books SET \"book_id\" = price * 1.1")
                || swapped.starts_with("UPDATE books SET \"title\" = price * 1.1"),
            "{swapped}"
        );
        assert!(found[2].script.starts_with("UPDATE \"orders\" SET price"));
        assert!(found[4]
            .script
            .ends_with("DELETE FROM \"books\" WHERE status = 'cancelled'"));
    }

    #[test]
    fn statements_without_a_site_or_that_do_not_parse_have_no_mutant() {
        assert!(mutants(&["CREATE INDEX i ON books (price)", "SELECT 1", "UPDATE ((("]).is_empty());
        let insert = mutants(&["INSERT INTO books (book_id) VALUES (1)"]);
        assert_eq!(insert.len(), 1);
        assert_eq!(
            insert[0].script,
            "INSERT INTO \"orders\" (book_id) VALUES (1)"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_mutants() {
        let script = ["UPDATE books SET price = 1 WHERE book_id = 2"];
        assert_eq!(mutants(&script), mutants(&script));
    }
}
