//! `process_sql.get_sql`: a recursive-descent parser over the reference tokens.
//!
//! Every step mirrors the reference, quirks included; wherever the reference raises (an
//! assertion, a missing key, an index past the end) this returns a [`ParseError`]. Notable
//! quirks kept:
//! - aliases (`x AS y`, anywhere in the query) are global; an alias equal to a table name fails;
//! - the SELECT list is parsed after FROM, with FROM's tables as the default tables;
//! - a column operand swallows every token up to `,` `)` `and`, a clause or join keyword, and
//!   only its first column unit is kept (so `a = b OR c = 1` is one condition);
//! - ORDER BY keeps the last direction written; `none` reads as an aggregate or unit operator;
//! - tokens after the parsed query are ignored.
//!
//! One deliberate difference: two condition units not separated by `and`/`or` (e.g.
//! `WHERE a = 1 b = 2`) are an error here. The reference stores them side by side, which breaks
//! its `[::2]` reading of the list: hardness then crashes, and exact match can never succeed, so
//! both outcomes equal those of a parse failure.

use std::collections::HashMap;

use super::ast::{
    AggOp, ColUnit, CondUnit, Condition, Connector, FromClause, Operand, OrderBy, OrderDirection,
    Select, SelectItem, Sql, TableUnit, UnitOp, ValUnit, WhereOp,
};
use super::schema::Schema;
use super::tokenize::tokenize;
use crate::sqltext;

/// Why the reference parser would reject a query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// What the parser met, in the reference's wording where it has one.
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(message: impl Into<String>) -> ParseError {
        ParseError {
            message: message.into(),
        }
    }
}

type Parsed<T> = Result<(usize, T), ParseError>;

const CLAUSE_KEYWORDS: [&str; 9] = [
    "select",
    "from",
    "where",
    "group",
    "order",
    "limit",
    "intersect",
    "union",
    "except",
];
const JOIN_KEYWORDS: [&str; 3] = ["join", "on", "as"];

/// Nesting deeper than this fails, as Python's recursion limit makes the reference fail.
const MAX_DEPTH: usize = 100;

fn is_clause_keyword(token: &str) -> bool {
    CLAUSE_KEYWORDS.contains(&token)
}

/// A clause keyword, `)` or `;`: where a list (FROM, GROUP BY, ORDER BY) stops.
fn ends_list(token: &str) -> bool {
    is_clause_keyword(token) || token == ")" || token == ";"
}

/// Parses `sql` into the reference's structure, resolving columns against `schema`.
pub fn parse(sql: &str, schema: &Schema) -> Result<Sql, ParseError> {
    // The parser's own bound is on nested queries; the text's size and depth come first.
    sqltext::check(sql).map_err(|e| ParseError::new(e.to_string()))?;
    let tokens = tokenize(sql)?;
    let parser = Parser {
        schema,
        aliases: table_aliases(&tokens, schema)?,
    };
    let (_, tree) = parser.sql(Tokens(&tokens), 0, 0)?;
    Ok(tree)
}

/// `get_tables_with_alias`: every `x AS y` maps `y` → `x` (the last one wins), then every table
/// maps to itself; an alias that is also a table name is an error.
fn table_aliases(
    tokens: &[String],
    schema: &Schema,
) -> Result<HashMap<String, String>, ParseError> {
    let mut aliases = HashMap::new();
    for (index, token) in tokens.iter().enumerate() {
        if token != "as" {
            continue;
        }
        // Python's toks[-1] at index 0 would still leave a query that cannot start with `as`
        let (Some(target), Some(alias)) = (index.checked_sub(1), tokens.get(index + 1)) else {
            return Err(ParseError::new("`as` without a name on both sides"));
        };
        aliases.insert(alias.clone(), tokens[target].clone());
    }
    for table in schema.tables() {
        if aliases.contains_key(&table.name) {
            return Err(ParseError::new(format!(
                "alias {} has the same name as a table",
                table.name
            )));
        }
        aliases.insert(table.name.clone(), table.name.clone());
    }
    Ok(aliases)
}

/// The token list with the reference's two ways of reading it.
#[derive(Clone, Copy)]
struct Tokens<'a>(&'a [String]);

impl<'a> Tokens<'a> {
    fn len(self) -> usize {
        self.0.len()
    }

    /// `toks[idx]`, which raises past the end.
    fn get(self, index: usize) -> Result<&'a str, ParseError> {
        self.0
            .get(index)
            .map(String::as_str)
            .ok_or_else(|| ParseError::new("unexpected end of query"))
    }

    /// `idx < len_ and toks[idx] ...`: the token, or `None` past the end.
    fn peek(self, index: usize) -> Option<&'a str> {
        self.0.get(index).map(String::as_str)
    }

    fn is(self, index: usize, expected: &str) -> bool {
        self.peek(index) == Some(expected)
    }

    /// `assert toks[idx] == expected`; returns the index after it.
    fn expect(self, index: usize, expected: &str) -> Result<usize, ParseError> {
        let token = self.get(index)?;
        if token == expected {
            Ok(index + 1)
        } else {
            Err(ParseError::new(format!(
                "expected `{expected}`, found `{token}`"
            )))
        }
    }

    fn slice(self, start: usize, end: usize) -> Tokens<'a> {
        Tokens(&self.0[start..end])
    }
}

struct Parser<'a> {
    schema: &'a Schema,
    aliases: HashMap<String, String>,
}

impl Parser<'_> {
    fn sql(&self, toks: Tokens, start: usize, depth: usize) -> Parsed<Sql> {
        if depth > MAX_DEPTH {
            return Err(ParseError::new("queries nested too deeply"));
        }
        let block = toks.get(start)? == "(";
        let select_start = if block { start + 1 } else { start };
        let (mut idx, (from, default_tables)) = self.from(toks, start, depth)?;
        let (_, select) = self.select(toks, select_start, &default_tables)?;
        let mut sql = Sql {
            select,
            from,
            ..Sql::default()
        };

        (idx, sql.r#where) = self.clause_condition(toks, idx, "where", &default_tables, depth)?;
        (idx, sql.group_by) = self.group_by(toks, idx, &default_tables)?;
        (idx, sql.having) = self.clause_condition(toks, idx, "having", &default_tables, depth)?;
        (idx, sql.order_by) = self.order_by(toks, idx, &default_tables)?;
        (idx, sql.limit) = limit(toks, idx)?;

        idx = skip_semicolons(toks, idx);
        if block {
            idx = toks.expect(idx, ")")?;
        }
        idx = skip_semicolons(toks, idx);

        if let Some(operator) = toks.peek(idx) {
            let slot = match operator {
                "intersect" => Some(&mut sql.intersect),
                "union" => Some(&mut sql.union),
                "except" => Some(&mut sql.except),
                _ => None,
            };
            if let Some(slot) = slot {
                let (next, nested) = self.sql(toks, idx + 1, depth + 1)?;
                *slot = Some(Box::new(nested));
                idx = next;
            }
        }
        Ok((idx, sql))
    }

    /// `parse_from`: starts at the first `from` at or after `start`. Returns the FROM clause and
    /// the default tables (the table names, in order).
    fn from(&self, toks: Tokens, start: usize, depth: usize) -> Parsed<(FromClause, Vec<String>)> {
        let from_at = toks.0[start..]
            .iter()
            .position(|token| token == "from")
            .ok_or_else(|| ParseError::new("`from` not found"))?;
        let mut idx = start + from_at + 1;
        let mut from = FromClause::default();
        let mut default_tables = Vec::new();

        while idx < toks.len() {
            let block = toks.get(idx)? == "(";
            if block {
                idx += 1;
            }
            if toks.get(idx)? == "select" {
                let (next, subquery) = self.sql(toks, idx, depth + 1)?;
                from.table_units.push(TableUnit::Sql(Box::new(subquery)));
                idx = next;
            } else {
                if toks.is(idx, "join") {
                    idx += 1;
                }
                let (next, (table_id, table_name)) = self.table_unit(toks, idx)?;
                from.table_units.push(TableUnit::Table(table_id));
                default_tables.push(table_name);
                idx = next;
            }
            if toks.is(idx, "on") {
                let (next, conds) = self.condition(toks, idx + 1, &default_tables, depth)?;
                if !from.conds.is_empty() {
                    push_connector(&mut from.conds, Connector::And)?;
                }
                append_condition(&mut from.conds, conds)?;
                idx = next;
            }
            if block {
                idx = toks.expect(idx, ")")?;
            }
            if toks.peek(idx).is_some_and(ends_list) {
                break;
            }
        }
        Ok((idx, (from, default_tables)))
    }

    /// `parse_table_unit`: a name (table or alias), optionally followed by `as <alias>`.
    fn table_unit(&self, toks: Tokens, idx: usize) -> Parsed<(String, String)> {
        let name = toks.get(idx)?;
        let table = self
            .aliases
            .get(name)
            .ok_or_else(|| ParseError::new(format!("unknown table or alias `{name}`")))?;
        let next = if toks.is(idx + 1, "as") {
            idx + 3
        } else {
            idx + 1
        };
        let table_id = self
            .schema
            .id(table)
            .ok_or_else(|| ParseError::new(format!("unknown table `{table}`")))?;
        Ok((next, (table_id, table.clone())))
    }

    fn select(&self, toks: Tokens, start: usize, default_tables: &[String]) -> Parsed<Select> {
        let mut idx = toks.expect(start, "select")?;
        let distinct = toks.is(idx, "distinct");
        if distinct {
            idx += 1;
        }
        let mut items = Vec::new();
        while let Some(token) = toks.peek(idx).filter(|t| !is_clause_keyword(t)) {
            let agg = AggOp::from_token(token);
            if agg.is_some() {
                idx += 1;
            }
            let (next, val_unit) = self.val_unit(toks, idx, default_tables)?;
            items.push(SelectItem {
                agg: agg.unwrap_or_default(),
                val_unit,
            });
            idx = next;
            if toks.is(idx, ",") {
                idx += 1;
            }
        }
        Ok((idx, Select { distinct, items }))
    }

    /// WHERE or HAVING: an empty condition unless the clause keyword is at `idx`.
    fn clause_condition(
        &self,
        toks: Tokens,
        idx: usize,
        keyword: &str,
        default_tables: &[String],
        depth: usize,
    ) -> Parsed<Condition> {
        if toks.is(idx, keyword) {
            self.condition(toks, idx + 1, default_tables, depth)
        } else {
            Ok((idx, Condition::default()))
        }
    }

    fn group_by(
        &self,
        toks: Tokens,
        idx: usize,
        default_tables: &[String],
    ) -> Parsed<Vec<ColUnit>> {
        let mut col_units = Vec::new();
        if !toks.is(idx, "group") {
            return Ok((idx, col_units));
        }
        let mut idx = toks.expect(idx + 1, "by")?;
        while toks.peek(idx).is_some_and(|t| !ends_list(t)) {
            let (next, col_unit) = self.col_unit(toks, idx, default_tables)?;
            col_units.push(col_unit);
            idx = next;
            if !toks.is(idx, ",") {
                break;
            }
            idx += 1;
        }
        Ok((idx, col_units))
    }

    fn order_by(
        &self,
        toks: Tokens,
        idx: usize,
        default_tables: &[String],
    ) -> Parsed<Option<OrderBy>> {
        if !toks.is(idx, "order") {
            return Ok((idx, None));
        }
        let mut idx = toks.expect(idx + 1, "by")?;
        let mut order = OrderBy::default();
        while toks.peek(idx).is_some_and(|t| !ends_list(t)) {
            let (next, val_unit) = self.val_unit(toks, idx, default_tables)?;
            order.val_units.push(val_unit);
            idx = next;
            let direction = match toks.peek(idx) {
                Some("asc") => Some(OrderDirection::Asc),
                Some("desc") => Some(OrderDirection::Desc),
                _ => None,
            };
            if let Some(direction) = direction {
                order.direction = direction;
                idx += 1;
            }
            if !toks.is(idx, ",") {
                break;
            }
            idx += 1;
        }
        Ok((idx, Some(order)))
    }

    /// `parse_condition`: units joined by `and`/`or`, up to a clause or join keyword, `)` or `;`.
    fn condition(
        &self,
        toks: Tokens,
        start: usize,
        default_tables: &[String],
        depth: usize,
    ) -> Parsed<Condition> {
        let mut idx = start;
        let mut condition = Condition::default();
        while idx < toks.len() {
            let (next, val_unit) = self.val_unit(toks, idx, default_tables)?;
            idx = next;
            let not = toks.get(idx)? == "not";
            if not {
                idx += 1;
            }
            let op = toks
                .peek(idx)
                .and_then(WhereOp::from_token)
                .ok_or_else(|| match toks.peek(idx) {
                    Some(token) => {
                        ParseError::new(format!("expected an operator, found `{token}`"))
                    }
                    None => ParseError::new("expected an operator at the end of the query"),
                })?;
            idx += 1;
            let (next, val1) = self.operand(toks, idx, default_tables, depth)?;
            idx = next;
            let mut val2 = None;
            if op == WhereOp::Between {
                let (next, operand) =
                    self.operand(toks, toks.expect(idx, "and")?, default_tables, depth)?;
                val2 = Some(operand);
                idx = next;
            }
            push_unit(
                &mut condition,
                CondUnit {
                    not,
                    op,
                    val_unit,
                    val1: Some(val1),
                    val2,
                },
            )?;

            if toks
                .peek(idx)
                .is_some_and(|t| ends_list(t) || JOIN_KEYWORDS.contains(&t))
            {
                break;
            }
            if let Some(connector) = toks.peek(idx).and_then(Connector::from_token) {
                push_connector(&mut condition, connector)?;
                idx += 1;
            }
        }
        Ok((idx, condition))
    }

    /// `parse_value`: a subquery, a quoted string, a number, or else a column unit read from the
    /// tokens up to the next `,` `)` `and` or clause/join keyword (the rest of them is dropped).
    fn operand(
        &self,
        toks: Tokens,
        start: usize,
        default_tables: &[String],
        depth: usize,
    ) -> Parsed<Operand> {
        let block = toks.get(start)? == "(";
        let mut idx = if block { start + 1 } else { start };
        let token = toks.get(idx)?;
        let operand = if token == "select" {
            let (next, subquery) = self.sql(toks, idx, depth + 1)?;
            idx = next;
            Operand::Sql(Box::new(subquery))
        } else if token.contains('"') {
            idx += 1;
            Operand::Text(token.to_string())
        } else if let Some(number) = python_float(token) {
            idx += 1;
            Operand::Number(number)
        } else {
            let end = (idx..toks.len())
                .find(|&i| ends_operand(&toks.0[i]))
                .unwrap_or(toks.len());
            // the reference re-reads from `start`, so a `(` before a column is read again
            let (_, col_unit) = self.col_unit(toks.slice(start, end), 0, default_tables)?;
            idx = end;
            Operand::Column(col_unit)
        };
        if block {
            idx = toks.expect(idx, ")")?;
        }
        Ok((idx, operand))
    }

    /// `parse_val_unit`: a column unit, optionally `<op> <column unit>`, optionally in parentheses.
    fn val_unit(&self, toks: Tokens, start: usize, default_tables: &[String]) -> Parsed<ValUnit> {
        let block = toks.get(start)? == "(";
        let idx = if block { start + 1 } else { start };
        let (mut idx, left) = self.col_unit(toks, idx, default_tables)?;
        let mut val_unit = ValUnit {
            op: UnitOp::None,
            left,
            right: None,
        };
        if let Some(op) = toks.peek(idx).and_then(UnitOp::from_token) {
            let (next, right) = self.col_unit(toks, idx + 1, default_tables)?;
            val_unit.op = op;
            val_unit.right = Some(right);
            idx = next;
        }
        if block {
            idx = toks.expect(idx, ")")?;
        }
        Ok((idx, val_unit))
    }

    /// `parse_col_unit`: `[(] agg ( [distinct] col )` or `[(] [distinct] col [)]`. With an
    /// aggregate, an opening `(` before it is not closed here (as in the reference).
    fn col_unit(&self, toks: Tokens, start: usize, default_tables: &[String]) -> Parsed<ColUnit> {
        let block = toks.get(start)? == "(";
        let mut idx = if block { start + 1 } else { start };
        if let Some(agg) = AggOp::from_token(toks.get(idx)?) {
            if !toks.is(idx + 1, "(") {
                return Err(ParseError::new("expected `(` after an aggregate"));
            }
            idx += 2;
            let distinct = toks.get(idx)? == "distinct";
            if distinct {
                idx += 1;
            }
            let (next, col_id) = self.column(toks, idx, default_tables)?;
            if !toks.is(next, ")") {
                return Err(ParseError::new("expected `)` after an aggregated column"));
            }
            return Ok((
                next + 1,
                ColUnit {
                    agg,
                    col_id,
                    distinct,
                },
            ));
        }
        let distinct = toks.get(idx)? == "distinct";
        if distinct {
            idx += 1;
        }
        let (mut idx, col_id) = self.column(toks, idx, default_tables)?;
        if block {
            idx = toks.expect(idx, ")")?;
        }
        let agg = AggOp::None;
        Ok((
            idx,
            ColUnit {
                agg,
                col_id,
                distinct,
            },
        ))
    }

    /// `parse_col`: `*`, `alias.column`, or a bare column looked up in the default tables in
    /// order.
    fn column(&self, toks: Tokens, idx: usize, default_tables: &[String]) -> Parsed<String> {
        let token = toks.get(idx)?;
        let unknown = || ParseError::new(format!("unknown column `{token}`"));
        if token == "*" {
            return Ok((idx + 1, "__all__".to_string()));
        }
        if let Some((alias, column)) = token.split_once('.') {
            if column.contains('.') {
                return Err(unknown());
            }
            let table = self.aliases.get(alias).ok_or_else(unknown)?;
            let id = self
                .schema
                .id(&format!("{table}.{column}"))
                .ok_or_else(unknown)?;
            return Ok((idx + 1, id));
        }
        if default_tables.is_empty() {
            return Err(ParseError::new("a column needs a table in FROM"));
        }
        for name in default_tables {
            let table = self.aliases.get(name).ok_or_else(unknown)?;
            let columns = self.schema.columns(table).ok_or_else(unknown)?;
            if columns.iter().any(|c| c == token) {
                let id = self
                    .schema
                    .id(&format!("{table}.{token}"))
                    .ok_or_else(unknown)?;
                return Ok((idx + 1, id));
            }
        }
        Err(unknown())
    }
}

/// Where a column operand's tokens stop.
fn ends_operand(token: &str) -> bool {
    matches!(token, "," | ")" | "and") || is_clause_keyword(token) || JOIN_KEYWORDS.contains(&token)
}

fn push_unit(condition: &mut Condition, unit: CondUnit) -> Result<(), ParseError> {
    if condition.units.len() > condition.connectors.len() {
        return Err(ParseError::new(
            "two conditions without `and`/`or` between them",
        ));
    }
    condition.units.push(unit);
    Ok(())
}

fn push_connector(condition: &mut Condition, connector: Connector) -> Result<(), ParseError> {
    if condition.connectors.len() >= condition.units.len() {
        return Err(ParseError::new("`and`/`or` without a condition before it"));
    }
    condition.connectors.push(connector);
    Ok(())
}

/// Appends `other`'s units and connectors, keeping the alternation.
fn append_condition(condition: &mut Condition, other: Condition) -> Result<(), ParseError> {
    let mut connectors = other.connectors.into_iter();
    for unit in other.units {
        push_unit(condition, unit)?;
        if let Some(connector) = connectors.next() {
            push_connector(condition, connector)?;
        }
    }
    Ok(())
}

/// `parse_limit`: `limit` and the next token, read as a Python `int`.
fn limit(toks: Tokens, idx: usize) -> Parsed<Option<i64>> {
    if !toks.is(idx, "limit") {
        return Ok((idx, None));
    }
    let token = toks.get(idx + 1)?;
    let value = python_int(token)
        .ok_or_else(|| ParseError::new(format!("LIMIT needs an integer, found `{token}`")))?;
    Ok((idx + 2, Some(value)))
}

fn skip_semicolons(toks: Tokens, mut idx: usize) -> usize {
    while toks.is(idx, ";") {
        idx += 1;
    }
    idx
}

/// Removes PEP 515 underscores (only allowed between two digits); `None` if one is misplaced.
fn strip_digit_underscores(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let misplaced = bytes.iter().enumerate().any(|(i, &b)| {
        b == b'_'
            && !(i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    (!misplaced).then(|| text.replace('_', ""))
}

/// Python's `float(token)` for a token (no surrounding whitespace): decimal and exponent forms,
/// `inf`, `infinity`, `nan` with an optional sign, digits grouped by `_`.
fn python_float(token: &str) -> Option<f64> {
    let first = token.chars().next()?;
    // Rust also accepts these forms; a quick reject keeps column names off the slow path
    if !(first.is_ascii_digit() || matches!(first, '+' | '-' | '.' | 'i' | 'n')) {
        return None;
    }
    strip_digit_underscores(token)?.parse().ok()
}

/// Python's `int(token)`: optional sign, ASCII digits grouped by `_`. Saturates beyond `i64`.
fn python_int(token: &str) -> Option<i64> {
    let digits = strip_digit_underscores(token)?;
    let (negative, unsigned) = match digits.as_bytes().first()? {
        b'-' => (true, &digits[1..]),
        b'+' => (false, &digits[1..]),
        _ => (false, digits.as_str()),
    };
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let saturated = if negative { i64::MIN } else { i64::MAX };
    Some(digits.parse().unwrap_or(saturated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::new([
            ("singer", vec!["singer_id", "name", "country", "age"]),
            ("singer_in_concert", vec!["concert_id", "singer_id"]),
        ])
    }

    fn parsed(sql: &str) -> Sql {
        parse(sql, &schema()).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    fn col(agg: AggOp, col_id: &str) -> ColUnit {
        ColUnit {
            agg,
            col_id: col_id.to_string(),
            distinct: false,
        }
    }

    fn val(col_id: &str) -> ValUnit {
        ValUnit {
            op: UnitOp::None,
            left: col(AggOp::None, col_id),
            right: None,
        }
    }

    #[test]
    fn join_with_aliases_gives_canonical_ids() {
        let sql = parsed(
            "SELECT T2.name, count(DISTINCT T2.age) FROM singer_in_concert AS T1 \
             JOIN singer AS T2 ON T1.singer_id = T2.singer_id WHERE T2.age > 20",
        );
        // `count` is the item's aggregate; `( DISTINCT T2.age )` is a block column unit
        let distinct_age = ColUnit {
            distinct: true,
            ..col(AggOp::None, "__singer.age__")
        };
        assert_eq!(
            sql.select.items,
            [
                SelectItem {
                    agg: AggOp::None,
                    val_unit: val("__singer.name__"),
                },
                SelectItem {
                    agg: AggOp::Count,
                    val_unit: ValUnit {
                        op: UnitOp::None,
                        left: distinct_age,
                        right: None,
                    },
                },
            ]
        );
        assert_eq!(
            sql.from.table_units,
            [
                TableUnit::Table("__singer_in_concert__".into()),
                TableUnit::Table("__singer__".into())
            ]
        );
        assert_eq!(
            sql.from.conds.units,
            [CondUnit {
                not: false,
                op: WhereOp::Eq,
                val_unit: val("__singer_in_concert.singer_id__"),
                val1: Some(Operand::Column(col(AggOp::None, "__singer.singer_id__"))),
                val2: None,
            }]
        );
        assert_eq!(sql.r#where.units[0].val1, Some(Operand::Number(20.0)));
    }

    #[test]
    fn aggregate_in_select_is_the_item_aggregate() {
        // the reference reads `count` as the select item's aggregate, then `( * )` as a block
        let sql = parsed("SELECT count(*) FROM singer");
        assert_eq!(sql.select.items[0].agg, AggOp::Count);
        assert_eq!(sql.select.items[0].val_unit, val("__all__"));
    }

    #[test]
    fn bare_columns_resolve_in_from_order() {
        let sql = parsed("SELECT singer_id FROM singer_in_concert JOIN singer");
        assert_eq!(
            sql.select.items[0].val_unit,
            val("__singer_in_concert.singer_id__")
        );
    }

    #[test]
    fn column_operand_swallows_up_to_and() {
        // `OR T1.country = 'x'` is read as part of the operand and dropped
        let sql = parsed("SELECT name FROM singer AS T1 WHERE T1.age = T1.singer_id OR T1.country = 'x' AND age = 1");
        assert_eq!(sql.r#where.units.len(), 2);
        assert_eq!(sql.r#where.connectors, [Connector::And]);
        assert_eq!(
            sql.r#where.units[0].val1,
            Some(Operand::Column(col(AggOp::None, "__singer.singer_id__")))
        );
    }

    #[test]
    fn order_by_keeps_the_last_direction() {
        let sql = parsed("SELECT name FROM singer ORDER BY age DESC, name ASC LIMIT 3");
        let order = sql.order_by.expect("order by");
        assert_eq!(order.direction, OrderDirection::Asc);
        assert_eq!(
            order.val_units,
            [val("__singer.age__"), val("__singer.name__")]
        );
        assert_eq!(sql.limit, Some(3));
    }

    #[test]
    fn compound_subquery_and_between() {
        let sql = parsed(
            "SELECT name FROM singer WHERE age BETWEEN 1 AND 2 EXCEPT \
             SELECT name FROM singer WHERE singer_id NOT IN (SELECT singer_id FROM singer_in_concert)",
        );
        let between = &sql.r#where.units[0];
        assert_eq!(
            (between.op, &between.val2),
            (WhereOp::Between, &Some(Operand::Number(2.0)))
        );
        let except = sql.except.as_deref().expect("except");
        let not_in = &except.r#where.units[0];
        assert!(not_in.not && not_in.op == WhereOp::In);
        assert_eq!(not_in.subqueries().count(), 1);
        assert!(sql.union.is_none() && sql.intersect.is_none());
    }

    #[test]
    fn trailing_connector_is_kept() {
        let sql = parsed("SELECT name FROM singer WHERE age > 1 AND");
        assert_eq!((sql.r#where.units.len(), sql.r#where.list_len()), (1, 2));
    }

    #[test]
    fn literal_tokens_and_numbers() {
        let sql =
            parsed("SELECT name FROM singer WHERE country = 'France' AND age > 1_000 LIMIT 1_0");
        assert_eq!(
            sql.r#where.units[0].val1,
            Some(Operand::Text("\"France\"".into()))
        );
        assert_eq!(sql.r#where.units[1].val1, Some(Operand::Number(1000.0)));
        assert_eq!(sql.limit, Some(10));
        let huge = parsed("SELECT name FROM singer LIMIT 99999999999999999999999");
        assert_eq!(huge.limit, Some(i64::MAX));
    }

    #[test]
    fn the_reference_rejects_these() {
        for sql in [
            "SELECT count(*) AS c FROM singer",  // column alias
            "SELECT name FROM singer AS singer", // alias named like a table
            "SELECT name FROM singer LEFT JOIN singer_in_concert", // LEFT JOIN
            "SELECT name FROM singer WHERE age IN (1, 2)", // IN with a list
            "SELECT name FROM singer WHERE age = 1 name = 'a'", // no connector
            "SELECT name FROM singer WHERE name IS NOT NULL", // IS NOT NULL
            "SELECT name FROM singer, singer_in_concert", // comma join
            "SELECT name FROM singer S",         // alias without AS
            "SELECT name FROM singer LIMIT 1.5", // non-integer limit
            "SELECT T9.name FROM singer",        // unknown alias
            "SELECT name FROM singer WHERE age = (age)", // parenthesized column
            "SELECT a.b.c FROM singer",          // two dots
            "SELECT name FROM singer WHERE name='x'", // glued literal
        ] {
            assert!(parse(sql, &schema()).is_err(), "{sql}");
        }
    }

    #[test]
    fn malformed_input_never_panics() {
        for sql in [
            "",
            "(",
            ")",
            "as",
            "x as",
            "select",
            "select as from",
            "'",
            "select * from",
            "select count( from singer",
            "select name from singer limit",
            "select name from singer where",
            "select name from singer where age",
            "select name from singer where age not",
            "select name from singer where age between 1",
            "select name from (",
            "select name from ( select",
            "select name from singer group",
            "select name from singer order",
            "select name from singer union",
            "= select",
            "select name from singer where age = (",
            "select max from singer",
            "select name from singer on",
            "select name from singer join",
            "select distinct",
        ] {
            // the result does not matter, only that it is one
            let _ = parse(sql, &schema());
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let nested = |levels: usize| {
            let mut sql = "SELECT name FROM singer".to_string();
            for _ in 0..levels {
                sql = format!("SELECT name FROM singer WHERE age IN ({sql})");
            }
            sql
        };
        assert!(parse(&nested(MAX_DEPTH), &schema()).is_ok());
        assert!(parse(&nested(MAX_DEPTH + 1), &schema()).is_err());
        assert!(parse(&nested(10_000), &schema()).is_err());
    }

    #[test]
    fn huge_and_deep_texts_are_refused_before_tokenizing() {
        let deep = format!(
            "SELECT name FROM singer WHERE age = 1{}",
            "+1".repeat(140_000)
        );
        let error = parse(&deep, &schema()).unwrap_err().to_string();
        assert!(error.contains("too deeply nested (depth 140"), "{error}");
        let list = vec!["1"; 600_000].join(",");
        let long = format!("SELECT name FROM singer WHERE age IN ({list})");
        let error = parse(&long, &schema()).unwrap_err().to_string();
        assert!(error.contains("too long ("), "{error}");
    }
}
