//! The tree ETM normalises and compares: a node kind with named fields, the model the ETM
//! paper's rules are written in (sqlglot's), lowered from sqlparser's AST by [`super::lower`].
//!
//! Equality follows `etm.md` §4: same kind, equal fields, absent/false/empty fields ignored
//! (the setters never store them), lists compared in order, text compared as stored (rule 100
//! lowercases everything but literals, so only literal values stay case-sensitive).

use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Select,
    Union,
    Intersect,
    Except,
    Subquery,
    With,
    Cte,
    From,
    Join,
    Table,
    TableAlias,
    Where,
    Group,
    Having,
    Order,
    Ordered,
    Limit,
    Offset,
    Column,
    Identifier,
    Star,
    Literal,
    Null,
    Boolean,
    Alias,
    Paren,
    And,
    Or,
    Not,
    Neg,
    Eq,
    Neq,
    Gt,
    Gte,
    Lt,
    Lte,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    /// Any other binary operator, spelled in `Key::Op`.
    Binary,
    Is,
    In,
    Like,
    ILike,
    Between,
    Exists,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    Distinct,
    Case,
    If,
    Cast,
    DataType,
    Substring,
    /// A function without a node of its own: name in `This`, arguments in `Expressions`.
    Anonymous,
    /// A construct ETM has no rule for, kept as its SQL text.
    Raw,
}

/// Field names. Values of `Expressions`, `Joins` and `Ifs` are lists; `This` of an
/// identifier, literal, anonymous function, data type or raw node is text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    This,
    Expression,
    Expressions,
    Table,
    Alias,
    With,
    From,
    Joins,
    Where,
    Group,
    Having,
    Order,
    Limit,
    Offset,
    Distinct,
    On,
    Using,
    Side,
    JoinKind,
    Method,
    Query,
    Low,
    High,
    Ifs,
    Default,
    True,
    False,
    Start,
    Length,
    To,
    Desc,
    Quoted,
    IsString,
    Op,
    Escape,
    /// Under `--etm-compat`, a SELECT whose joins rule 14 removed: the reference keeps an empty
    /// `joins` list, which later rules read as "has joins". Ignored by equality.
    JoinsKept,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    Node(Box<Node>),
    List(Vec<Node>),
    Text(String),
    Flag(bool),
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: Kind,
    /// Sorted by key; never holds an empty list or a false flag.
    fields: Vec<(Key, Field)>,
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        fn compared(node: &Node) -> impl Iterator<Item = &(Key, Field)> {
            node.fields.iter().filter(|(key, _)| *key != Key::JoinsKept)
        }
        self.kind == other.kind && compared(self).eq(compared(other))
    }
}

impl Eq for Node {}

impl Node {
    pub fn new(kind: Kind) -> Node {
        Node {
            kind,
            fields: Vec::new(),
        }
    }

    pub fn with(mut self, key: Key, field: impl Into<Field>) -> Node {
        self.set(key, field);
        self
    }

    pub fn with_opt(mut self, key: Key, node: Option<Node>) -> Node {
        if let Some(node) = node {
            self.set(key, node);
        }
        self
    }

    pub fn set(&mut self, key: Key, field: impl Into<Field>) {
        let field = field.into();
        let empty = matches!(&field, Field::List(items) if items.is_empty())
            || matches!(field, Field::Flag(false));
        match self.fields.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(index) if empty => {
                self.fields.remove(index);
            }
            Ok(index) => self.fields[index].1 = field,
            Err(_) if empty => {}
            Err(index) => self.fields.insert(index, (key, field)),
        }
    }

    pub fn remove(&mut self, key: Key) -> Option<Field> {
        let index = self.fields.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        Some(self.fields.remove(index).1)
    }

    pub fn take(&mut self, key: Key) -> Option<Node> {
        match self.remove(key)? {
            Field::Node(node) => Some(*node),
            other => {
                self.set(key, other);
                None
            }
        }
    }

    pub fn has(&self, key: Key) -> bool {
        self.get(key).is_some()
    }

    pub fn get(&self, key: Key) -> Option<&Field> {
        let index = self.fields.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        Some(&self.fields[index].1)
    }

    fn get_mut(&mut self, key: Key) -> Option<&mut Field> {
        let index = self.fields.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        Some(&mut self.fields[index].1)
    }

    pub fn node(&self, key: Key) -> Option<&Node> {
        match self.get(key)? {
            Field::Node(node) => Some(node),
            _ => None,
        }
    }

    pub fn node_mut(&mut self, key: Key) -> Option<&mut Node> {
        match self.get_mut(key)? {
            Field::Node(node) => Some(node),
            _ => None,
        }
    }

    pub fn list(&self, key: Key) -> &[Node] {
        match self.get(key) {
            Some(Field::List(items)) => items,
            _ => &[],
        }
    }

    /// The list under `key`, when there is one.
    pub fn list_mut(&mut self, key: Key) -> Option<&mut Vec<Node>> {
        match self.get_mut(key)? {
            Field::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn text(&self, key: Key) -> Option<&str> {
        match self.get(key)? {
            Field::Text(text) => Some(text),
            _ => None,
        }
    }

    pub fn flag(&self, key: Key) -> bool {
        matches!(self.get(key), Some(Field::Flag(true)))
    }

    pub fn fields(&self) -> &[(Key, Field)] {
        &self.fields
    }

    pub fn fields_mut(&mut self) -> impl Iterator<Item = (Key, &mut Field)> {
        self.fields.iter_mut().map(|(key, field)| (*key, field))
    }

    // --- constructors -------------------------------------------------------------------

    pub fn ident(name: &str, quoted: bool) -> Node {
        Node::new(Kind::Identifier)
            .with(Key::This, Field::Text(name.to_string()))
            .with(Key::Quoted, quoted)
    }

    pub fn literal(text: &str, is_string: bool) -> Node {
        Node::new(Kind::Literal)
            .with(Key::This, Field::Text(text.to_string()))
            .with(Key::IsString, is_string)
    }

    pub fn column(table: &str, name: &str) -> Node {
        Node::new(Kind::Column)
            .with(Key::This, Node::ident(name, false))
            .with(Key::Table, Node::ident(table, false))
    }

    pub fn table(name: &str) -> Node {
        Node::new(Kind::Table).with(Key::This, Node::ident(name, false))
    }

    pub fn binary(kind: Kind, left: Node, right: Node) -> Node {
        Node::new(kind)
            .with(Key::This, left)
            .with(Key::Expression, right)
    }

    pub fn unary(kind: Kind, inner: Node) -> Node {
        Node::new(kind).with(Key::This, inner)
    }

    /// `1.0 = 1.0`, the placeholder the rules leave where they removed a condition.
    pub fn true_condition() -> Node {
        Node::binary(
            Kind::Eq,
            Node::literal("1.0", false),
            Node::literal("1.0", false),
        )
    }

    /// Left-deep chain `a op b op c ...`; `None` for no items.
    pub fn chain(kind: Kind, items: impl IntoIterator<Item = Node>) -> Option<Node> {
        items
            .into_iter()
            .reduce(|left, right| Node::binary(kind, left, right))
    }

    // --- accessors the rules share ------------------------------------------------------

    /// The text of an identifier child (`Table.this`, `Column.table`, ...).
    pub fn ident_text(&self, key: Key) -> Option<&str> {
        let ident = self.node(key)?;
        (ident.kind == Kind::Identifier)
            .then(|| ident.text(Key::This))
            .flatten()
    }

    /// `(table, column)` of a qualified column whose parts are plain identifiers.
    pub fn qualified_column(&self) -> Option<(&str, &str)> {
        if self.kind != Kind::Column {
            return None;
        }
        Some((self.ident_text(Key::Table)?, self.ident_text(Key::This)?))
    }

    /// The table name of a FROM/JOIN item that is a table (not a derived table).
    pub fn table_name(&self) -> Option<&str> {
        (self.kind == Kind::Table)
            .then(|| self.ident_text(Key::This))
            .flatten()
    }

    /// Whether a SELECT has joins (or, under `--etm-compat`, had them: [`Key::JoinsKept`]).
    pub fn has_joins(&self) -> bool {
        !self.list(Key::Joins).is_empty() || self.flag(Key::JoinsKept)
    }

    pub fn is_set_operation(&self) -> bool {
        matches!(self.kind, Kind::Union | Kind::Intersect | Kind::Except)
    }

    /// The operands of a binary node.
    pub fn operands(&self) -> Option<(&Node, &Node)> {
        Some((self.node(Key::This)?, self.node(Key::Expression)?))
    }

    /// The FROM item and the joined items of a SELECT, in order.
    pub fn relations(&self) -> Vec<&Node> {
        let mut items = Vec::new();
        if let Some(from) = self.node(Key::From).and_then(|f| f.node(Key::This)) {
            items.push(from);
        }
        items.extend(
            self.list(Key::Joins)
                .iter()
                .filter_map(|j| j.node(Key::This)),
        );
        items
    }

    /// The sort key of rules 102, 104 and 105: kind, then rendered text.
    pub fn sort_key(&self) -> (Kind, String) {
        (self.kind, self.to_sql())
    }

    pub fn to_sql(&self) -> String {
        let mut out = String::new();
        render(self, &mut out);
        out
    }
}

impl From<Node> for Field {
    fn from(node: Node) -> Field {
        Field::Node(Box::new(node))
    }
}

impl From<Vec<Node>> for Field {
    fn from(items: Vec<Node>) -> Field {
        Field::List(items)
    }
}

impl From<bool> for Field {
    fn from(flag: bool) -> Field {
        Field::Flag(flag)
    }
}

impl From<&str> for Field {
    fn from(text: &str) -> Field {
        Field::Text(text.to_string())
    }
}

// --- rendering ------------------------------------------------------------------------------

fn render_key(node: &Node, key: Key, out: &mut String) {
    if let Some(child) = node.node(key) {
        render(child, out);
    }
}

fn render_list(items: &[Node], separator: &str, out: &mut String) {
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push_str(separator);
        }
        render(item, out);
    }
}

fn binary_symbol(kind: Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::And => " AND ",
        Kind::Or => " OR ",
        Kind::Eq => " = ",
        Kind::Neq => " <> ",
        Kind::Gt => " > ",
        Kind::Gte => " >= ",
        Kind::Lt => " < ",
        Kind::Lte => " <= ",
        Kind::Add => " + ",
        Kind::Sub => " - ",
        Kind::Mul => " * ",
        Kind::Div => " / ",
        Kind::Mod => " % ",
        Kind::Concat => " || ",
        Kind::Is => " IS ",
        Kind::Like => " LIKE ",
        Kind::ILike => " ILIKE ",
        _ => return None,
    })
}

fn function_name(kind: Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Count => "COUNT",
        Kind::Sum => "SUM",
        Kind::Avg => "AVG",
        Kind::Min => "MIN",
        Kind::Max => "MAX",
        Kind::Exists => "EXISTS",
        _ => return None,
    })
}

/// SQL-like text of a node. Used for sort keys and explanations: it shows every field that
/// equality looks at, so that different nodes render differently.
fn render(node: &Node, out: &mut String) {
    let text = node.text(Key::This).unwrap_or("");
    if let Some(symbol) = binary_symbol(node.kind) {
        render_key(node, Key::This, out);
        out.push_str(symbol);
        render_key(node, Key::Expression, out);
        if let Some(escape) = node.node(Key::Escape) {
            out.push_str(" ESCAPE ");
            render(escape, out);
        }
        return;
    }
    if let Some(name) = function_name(node.kind) {
        out.push_str(name);
        out.push('(');
        render_key(node, Key::This, out);
        for extra in node.list(Key::Expressions) {
            out.push_str(", ");
            render(extra, out);
        }
        out.push(')');
        return;
    }
    match node.kind {
        Kind::Select => render_select(node, out),
        Kind::Union | Kind::Intersect | Kind::Except => {
            render_key(node, Key::This, out);
            out.push_str(match node.kind {
                Kind::Union => " UNION ",
                Kind::Intersect => " INTERSECT ",
                _ => " EXCEPT ",
            });
            if !node.flag(Key::Distinct) {
                out.push_str("ALL ");
            }
            render_key(node, Key::Expression, out);
            render_tail(node, out);
        }
        Kind::Subquery => {
            out.push('(');
            render_key(node, Key::This, out);
            out.push(')');
            if let Some(alias) = node.node(Key::Alias) {
                out.push_str(" AS ");
                render(alias, out);
            }
        }
        Kind::With => {
            out.push_str("WITH ");
            render_list(node.list(Key::Expressions), ", ", out);
        }
        Kind::Cte => {
            render_key(node, Key::Alias, out);
            out.push_str(" AS (");
            render_key(node, Key::This, out);
            out.push(')');
        }
        Kind::From => render_key(node, Key::This, out),
        Kind::Join => {
            for key in [Key::Method, Key::Side, Key::JoinKind] {
                if let Some(word) = node.text(key) {
                    out.push_str(word);
                    out.push(' ');
                }
            }
            out.push_str("JOIN ");
            render_key(node, Key::This, out);
            if let Some(on) = node.node(Key::On) {
                out.push_str(" ON ");
                render(on, out);
            }
            if !node.list(Key::Using).is_empty() {
                out.push_str(" USING (");
                render_list(node.list(Key::Using), ", ", out);
                out.push(')');
            }
        }
        Kind::Table => {
            render_key(node, Key::This, out);
            if let Some(alias) = node.node(Key::Alias) {
                out.push_str(" AS ");
                render(alias, out);
            }
        }
        Kind::TableAlias => render_key(node, Key::This, out),
        Kind::Where | Kind::Having => render_key(node, Key::This, out),
        Kind::Group | Kind::Order | Kind::Distinct => {
            render_list(node.list(Key::Expressions), ", ", out)
        }
        Kind::Ordered => {
            render_key(node, Key::This, out);
            if node.flag(Key::Desc) {
                out.push_str(" DESC");
            }
        }
        Kind::Limit | Kind::Offset => render_key(node, Key::Expression, out),
        Kind::Column => {
            if let Some(table) = node.node(Key::Table) {
                render(table, out);
                out.push('.');
            }
            render_key(node, Key::This, out);
        }
        Kind::Identifier => {
            if node.flag(Key::Quoted) {
                let _ = write!(out, "\"{}\"", text.replace('"', "\"\""));
            } else {
                out.push_str(text);
            }
        }
        Kind::Star => out.push('*'),
        Kind::Literal => {
            if node.flag(Key::IsString) {
                let _ = write!(out, "'{}'", text.replace('\'', "''"));
            } else {
                out.push_str(text);
            }
        }
        Kind::Null => out.push_str("NULL"),
        Kind::Boolean => out.push_str(if node.flag(Key::This) {
            "TRUE"
        } else {
            "FALSE"
        }),
        Kind::Alias => {
            render_key(node, Key::This, out);
            out.push_str(" AS ");
            render_key(node, Key::Alias, out);
        }
        Kind::Paren => {
            out.push('(');
            render_key(node, Key::This, out);
            out.push(')');
        }
        Kind::Not => {
            out.push_str("NOT ");
            render_key(node, Key::This, out);
        }
        Kind::Neg => {
            out.push('-');
            render_key(node, Key::This, out);
        }
        Kind::Binary => {
            render_key(node, Key::This, out);
            let _ = write!(out, " {} ", node.text(Key::Op).unwrap_or("?"));
            render_key(node, Key::Expression, out);
        }
        Kind::In => {
            render_key(node, Key::This, out);
            out.push_str(" IN ");
            match node.node(Key::Query) {
                Some(query) => render(query, out),
                None => {
                    out.push('(');
                    render_list(node.list(Key::Expressions), ", ", out);
                    out.push(')');
                }
            }
        }
        Kind::Between => {
            render_key(node, Key::This, out);
            out.push_str(" BETWEEN ");
            render_key(node, Key::Low, out);
            out.push_str(" AND ");
            render_key(node, Key::High, out);
        }
        Kind::Case => {
            out.push_str("CASE");
            if let Some(operand) = node.node(Key::This) {
                out.push(' ');
                render(operand, out);
            }
            for branch in node.list(Key::Ifs) {
                out.push_str(" WHEN ");
                render_key(branch, Key::This, out);
                out.push_str(" THEN ");
                render_key(branch, Key::True, out);
            }
            if let Some(default) = node.node(Key::Default) {
                out.push_str(" ELSE ");
                render(default, out);
            }
            out.push_str(" END");
        }
        Kind::If => {
            out.push_str("IIF(");
            render_key(node, Key::This, out);
            out.push_str(", ");
            render_key(node, Key::True, out);
            out.push_str(", ");
            render_key(node, Key::False, out);
            out.push(')');
        }
        Kind::Cast => {
            out.push_str("CAST(");
            render_key(node, Key::This, out);
            out.push_str(" AS ");
            render_key(node, Key::To, out);
            out.push(')');
        }
        Kind::DataType | Kind::Raw => out.push_str(text),
        Kind::Substring => {
            out.push_str("SUBSTR(");
            render_key(node, Key::This, out);
            for key in [Key::Start, Key::Length] {
                if let Some(arg) = node.node(key) {
                    out.push_str(", ");
                    render(arg, out);
                }
            }
            out.push(')');
        }
        Kind::Anonymous => {
            out.push_str(text);
            out.push('(');
            if node.has(Key::Distinct) {
                out.push_str("DISTINCT ");
            }
            render_list(node.list(Key::Expressions), ", ", out);
            out.push(')');
        }
        _ => out.push_str(&format!("{:?}", node.kind)),
    }
}

fn render_select(node: &Node, out: &mut String) {
    if let Some(with) = node.node(Key::With) {
        render(with, out);
        out.push(' ');
    }
    out.push_str("SELECT ");
    if node.has(Key::Distinct) {
        out.push_str("DISTINCT ");
    }
    render_list(node.list(Key::Expressions), ", ", out);
    if let Some(from) = node.node(Key::From) {
        out.push_str(" FROM ");
        render(from, out);
    }
    for join in node.list(Key::Joins) {
        out.push(' ');
        render(join, out);
    }
    for (key, word) in [
        (Key::Where, " WHERE "),
        (Key::Group, " GROUP BY "),
        (Key::Having, " HAVING "),
    ] {
        if let Some(clause) = node.node(key) {
            out.push_str(word);
            render(clause, out);
        }
    }
    render_tail(node, out);
}

fn render_tail(node: &Node, out: &mut String) {
    for (key, word) in [
        (Key::Order, " ORDER BY "),
        (Key::Limit, " LIMIT "),
        (Key::Offset, " OFFSET "),
    ] {
        if let Some(clause) = node.node(key) {
            out.push_str(word);
            render(clause, out);
        }
    }
}
