//! Bounds on untrusted SQL text before anything parses or walks it.
//!
//! Predicted SQL, and gold or generated SQL read from files, can be anything: a 60 MB IN list, or
//! `1+1+1...` with 140,000 terms. Parsers build such a chain iteratively, but the tree they build
//! leans left as deep as the chain is long, and dropping, printing or walking it recurses once
//! per level: an ordinary thread's stack overflows and the process aborts. So every place that
//! parses SQL first calls [`check`], which measures the text cheaply (one pass over its bytes,
//! no allocation beyond a stack of open parentheses) and refuses what is too long or too deeply
//! nested, then does its parsing, walking and dropping inside [`run`], which moves the work to a
//! thread with a large stack when the text is deep enough to need it.
//!
//! The depth is an upper bound of any parser's expression-tree depth: each parenthesised group
//! adds one level plus one per operator inside it (`+`, `AND`, `NOT`, `CASE`, `UNION`...), so a
//! flat list (`IN (1, 2, ...)`, a long select list) is shallow however long it is.

use std::fmt;

/// The longest SQL text parsed, in bytes. Real queries are a few kilobytes; parsers need about a
/// hundred times the text's size in memory, so this also bounds their memory.
pub const MAX_BYTES: usize = 1 << 20;

/// The deepest nesting parsed, as [`check`] measures it. SQLite refuses expressions deeper than
/// 1,000 levels, which this measure counts as at most about 2,000 (`a = 1 AND ...` counts both
/// operators), so every query SQLite runs passes.
pub const MAX_DEPTH: usize = 5_000;

/// Texts at most this deep are handled on the calling thread (a 2 MiB worker stack is enough).
const INLINE_DEPTH: usize = 100;

/// The stack of the thread [`run`] uses for deeper texts: enough for [`MAX_DEPTH`] levels of
/// any walk in the crate, debug builds included. The memory is reserved, not committed.
const LARGE_STACK: usize = 512 << 20;

/// Why a text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TooComplex {
    /// The text is longer than the byte bound.
    TooLong {
        /// The text's length in bytes.
        bytes: usize,
        /// The bound it exceeds.
        limit: usize,
    },
    /// Parentheses and subqueries nest deeper than the bound.
    TooDeep {
        /// The nesting depth reached.
        depth: usize,
        /// The bound it exceeds.
        limit: usize,
    },
    /// No thread with a large stack could be started for a deep text.
    NoStack(String),
}

impl fmt::Display for TooComplex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TooComplex::TooLong { bytes, limit } => {
                write!(f, "too long ({bytes} bytes > limit {limit})")
            }
            TooComplex::TooDeep { depth, limit } => {
                write!(f, "too deeply nested (depth {depth} > limit {limit})")
            }
            TooComplex::NoStack(message) => {
                write!(f, "cannot start a thread to parse a deep query: {message}")
            }
        }
    }
}

impl std::error::Error for TooComplex {}

/// A text that passed [`check`], with its measured depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The deepest nesting of the text, which decides whether parsing needs a large stack.
    pub depth: usize,
}

/// Refuses a text longer than [`MAX_BYTES`] or deeper than [`MAX_DEPTH`].
pub fn check(sql: &str) -> Result<Checked, TooComplex> {
    if sql.len() > MAX_BYTES {
        return Err(TooComplex::TooLong {
            bytes: sql.len(),
            limit: MAX_BYTES,
        });
    }
    let depth = depth(sql);
    if depth > MAX_DEPTH {
        return Err(TooComplex::TooDeep {
            depth,
            limit: MAX_DEPTH,
        });
    }
    Ok(Checked { depth })
}

/// Runs `work` (parsing, walking and dropping trees of texts at most `depth` deep) where the
/// stack is large enough: inline for shallow texts, else on a thread of its own.
pub fn run<T: Send>(depth: usize, work: impl FnOnce() -> T + Send) -> Result<T, TooComplex> {
    if depth <= INLINE_DEPTH {
        return Ok(work());
    }
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("sqlgate-deep-sql".to_string())
            .stack_size(LARGE_STACK)
            .spawn_scoped(scope, work)
            .map_err(|e| TooComplex::NoStack(e.to_string()))?;
        // A panic is a bug: it goes on as it would have on the calling thread.
        Ok(thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// The nesting measure of [`check`]: the largest sum, over the parenthesised groups open at some
/// point, of one plus the operators met so far in each. Strings, quoted identifiers and
/// comments are skipped; a run of operator characters (`<=`, `||`) counts once.
pub fn depth(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    // Operators met in each open group, outermost first.
    let mut groups: Vec<usize> = vec![0];
    let mut total = 1;
    let mut deepest = 1;
    let mut i = 0;
    while i < bytes.len() {
        let skip_to = |closing: &[u8], from: usize| {
            bytes[from..]
                .windows(closing.len())
                .position(|w| w == closing)
                .map_or(bytes.len(), |at| from + at + closing.len())
        };
        let byte = bytes[i];
        i = match byte {
            b'\'' => skip_to(b"'", i + 1),
            b'"' => skip_to(b"\"", i + 1),
            b'`' => skip_to(b"`", i + 1),
            b'[' => skip_to(b"]", i + 1),
            b'-' if bytes.get(i + 1) == Some(&b'-') => skip_to(b"\n", i + 2),
            b'/' if bytes.get(i + 1) == Some(&b'*') => skip_to(b"*/", i + 2),
            b'(' => {
                groups.push(0);
                total += 1;
                i + 1
            }
            b')' => {
                if groups.len() > 1 {
                    total -= 1 + groups.pop().unwrap_or(0);
                }
                i + 1
            }
            _ if is_operator_char(byte) => {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| !is_operator_char(b))
                    .map_or(bytes.len(), |n| i + n);
                count_operator(&mut groups, &mut total);
                end
            }
            _ if byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80 => {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| {
                        !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80)
                    })
                    .map_or(bytes.len(), |n| i + n);
                if is_operator_word(&bytes[i..end]) {
                    count_operator(&mut groups, &mut total);
                }
                end
            }
            _ => i + 1,
        };
        deepest = deepest.max(total);
    }
    deepest
}

fn count_operator(groups: &mut [usize], total: &mut usize) {
    if let Some(innermost) = groups.last_mut() {
        *innermost += 1;
        *total += 1;
    }
}

fn is_operator_char(byte: u8) -> bool {
    b"+-*/%<>=!|&~^:".contains(&byte)
}

/// Keywords that make a node above or beside their operands.
fn is_operator_word(word: &[u8]) -> bool {
    const WORDS: &[&[u8]] = &[
        b"AND",
        b"OR",
        b"NOT",
        b"IS",
        b"IN",
        b"LIKE",
        b"GLOB",
        b"MATCH",
        b"REGEXP",
        b"BETWEEN",
        b"ESCAPE",
        b"COLLATE",
        b"CASE",
        b"UNION",
        b"INTERSECT",
        b"EXCEPT",
        b"EXISTS",
    ];
    word.len() <= 9 && WORDS.iter().any(|w| w.eq_ignore_ascii_case(word))
}

/// The quote a character opens in SQL: strings, quoted and bracketed identifiers.
pub fn opening_quote(c: char) -> Option<char> {
    matches!(c, '\'' | '"' | '`' | '[').then_some(c)
}

/// The character that closes a quote opened by `open`.
pub fn closing_quote(open: char) -> char {
    if open == '[' {
        ']'
    } else {
        open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(term: &str, op: &str, n: usize) -> String {
        let mut sql = String::from("SELECT ");
        sql.push_str(term);
        for _ in 1..n {
            sql.push_str(op);
            sql.push_str(term);
        }
        sql
    }

    #[test]
    fn flat_queries_are_shallow_however_long() {
        assert!(depth("SELECT a, b, c FROM t") <= 3);
        let list: Vec<String> = (0..50_000).map(|i| i.to_string()).collect();
        let sql = format!("SELECT a FROM t WHERE a IN ({})", list.join(", "));
        assert!(depth(&sql) < 10, "{}", depth(&sql));
        assert!(check(&sql).is_ok());
    }

    #[test]
    fn operator_chains_and_parentheses_count() {
        assert_eq!(depth(&chain("1", "+", 1_001)), 1 + 1_000);
        assert_eq!(depth(&chain("1", " AND ", 11)), 1 + 10);
        // Each group adds one, plus its operators so far.
        assert_eq!(depth("SELECT ((((1))))"), 1 + 4);
        assert_eq!(depth("SELECT (1 + (2 + (3)))"), 1 + 2 + 2 + 1);
        // A group that closed no longer counts; a stray `)` is ignored.
        assert_eq!(depth("SELECT (1+1+1) ) ) , 2"), 1 + 1 + 2);
    }

    #[test]
    fn quoted_text_and_comments_are_skipped() {
        let sql = "SELECT '((((+++' , \"a+b\", `c-d`, [e*f] -- AND AND (((\n /* OR ((( */ FROM t";
        assert_eq!(depth(sql), 1);
        // Unclosed quotes and comments run to the end without panicking.
        for odd in ["'", "\"", "`", "[", "--", "/*", "/", "(", ")", "é(", ""] {
            let _ = depth(odd);
        }
    }

    #[test]
    fn the_issue_reproductions_are_refused_with_a_clear_message() {
        // 140,000 terms, 280 KB: short enough, far too deep.
        assert_eq!(
            check(&chain("1", "+", 140_000)).unwrap_err().to_string(),
            format!("too deeply nested (depth 140000 > limit {MAX_DEPTH})")
        );
        let where_chain = format!("SELECT 1 FROM t WHERE {}", &chain("1", " AND ", 6_000)[7..]);
        assert!(matches!(
            check(&where_chain),
            Err(TooComplex::TooDeep { depth: 6_000, .. })
        ));
        // A flat IN list over the size bound.
        let list = vec!["1"; 600_000].join(",");
        let long = format!("SELECT a FROM t WHERE a IN ({list})");
        assert_eq!(
            check(&long).unwrap_err().to_string(),
            format!("too long ({} bytes > limit {MAX_BYTES})", long.len())
        );
    }

    #[test]
    fn deep_work_runs_on_a_large_stack() {
        // A recursion that would overflow a 2 MiB test thread at this depth.
        fn recurse(n: usize) -> usize {
            let frame = [n as u8; 512];
            if n == 0 {
                0
            } else {
                std::hint::black_box(&frame);
                1 + recurse(n - 1)
            }
        }
        assert_eq!(run(MAX_DEPTH * 4, || recurse(20_000)), Ok(20_000));
        assert_eq!(run(1, || 7), Ok(7));
    }
}
