//! What a schema says about its tables and columns beyond their identifiers, read from where
//! it is kept: Spider's `tables.json` (human names), a Defog-style descriptions file
//! (`{"table_metadata": {table: [{"column_name", "column_description"}]}}`, sentences) and the
//! comments the database's catalog keeps on its columns.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use sqlgate_eval::exec::{ExecError, QueryRunner};

/// What a column's description is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Described {
    /// A name already (Spider's `column_names`: `stuid` → "student id").
    Name(String),
    /// A sentence about the column ("Unique identifier for each author").
    Sentence(String),
}

/// The descriptions of one database, keyed by lower-case table and column names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Descriptions {
    /// Human names of tables.
    pub tables: HashMap<String, String>,
    /// Names or sentences about columns, by (table, column).
    pub columns: HashMap<(String, String), Described>,
}

impl Descriptions {
    /// Adds what `other` describes and `self` does not: `self` is the preferred source.
    pub fn fill_from(&mut self, other: Descriptions) {
        for (table, name) in other.tables {
            self.tables.entry(table).or_insert(name);
        }
        for (key, described) in other.columns {
            self.columns.entry(key).or_insert(described);
        }
    }
}

/// A descriptions file, recognised by its shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DescriptionFile {
    /// Spider's `tables.json`: every database of a benchmark, by `db_id`.
    Databases(HashMap<String, Descriptions>),
    /// A Defog-style file: one database.
    OneDatabase(Descriptions),
}

#[derive(Deserialize)]
struct SpiderDatabase {
    db_id: String,
    table_names_original: Vec<String>,
    table_names: Vec<String>,
    column_names_original: Vec<(i64, String)>,
    column_names: Vec<(i64, String)>,
}

#[derive(Deserialize)]
struct DefogColumn {
    column_name: String,
    #[serde(default)]
    column_description: String,
}

#[derive(Deserialize)]
struct DefogFile {
    table_metadata: HashMap<String, Vec<DefogColumn>>,
}

/// Reads a descriptions file: a JSON list is Spider's `tables.json`, an object with
/// `table_metadata` a Defog-style file. The error says which shape failed and where.
pub fn parse(text: &str) -> Result<DescriptionFile, DescriptionsError> {
    match text.trim_start().chars().next() {
        Some('[') => {
            let databases: Vec<SpiderDatabase> =
                serde_json::from_str(text).map_err(DescriptionsError::NotSpider)?;
            databases
                .into_iter()
                .map(|db| Ok((db.db_id.clone(), spider(db)?)))
                .collect::<Result<_, DescriptionsError>>()
                .map(DescriptionFile::Databases)
        }
        Some('{') => {
            let file: DefogFile =
                serde_json::from_str(text).map_err(DescriptionsError::NotDescriptions)?;
            Ok(DescriptionFile::OneDatabase(defog(file)))
        }
        _ => Err(DescriptionsError::Neither),
    }
}

/// Why a descriptions file is refused ([`parse`]): which shape failed, and where.
#[derive(Debug, thiserror::Error)]
pub enum DescriptionsError {
    /// A JSON list that is not Spider's `tables.json`.
    #[error("not Spider's tables.json: {0}")]
    NotSpider(serde_json::Error),
    /// A JSON object that is not a Defog-style descriptions file.
    #[error(
        "not a descriptions file ({{\"table_metadata\": {{table: [{{\"column_name\", \
         \"column_description\"}}]}}}}): {0}"
    )]
    NotDescriptions(serde_json::Error),
    /// Neither a list nor an object.
    #[error("neither Spider's tables.json (a list) nor a descriptions file (an object)")]
    Neither,
    /// A database whose human names do not line up with its identifiers.
    #[error(
        "database `{0}`: `table_names`/`column_names` do not match their `_original` lists in \
         length"
    )]
    Misaligned(String),
}

fn spider(db: SpiderDatabase) -> Result<Descriptions, DescriptionsError> {
    if db.table_names.len() != db.table_names_original.len()
        || db.column_names.len() != db.column_names_original.len()
    {
        return Err(DescriptionsError::Misaligned(db.db_id));
    }
    let originals: Vec<String> = db
        .table_names_original
        .iter()
        .map(|t| t.to_lowercase())
        .collect();
    let mut out = Descriptions::default();
    for (original, name) in originals.iter().zip(&db.table_names) {
        out.tables.insert(original.clone(), name.clone());
    }
    for ((table, original), (_, name)) in db.column_names_original.iter().zip(&db.column_names) {
        // Index -1 is the `*` column of no table.
        let Some(table) = usize::try_from(*table).ok().and_then(|i| originals.get(i)) else {
            continue;
        };
        out.columns.insert(
            (table.clone(), original.to_lowercase()),
            Described::Name(name.clone()),
        );
    }
    Ok(out)
}

fn defog(file: DefogFile) -> Descriptions {
    let mut out = Descriptions::default();
    for (table, columns) in file.table_metadata {
        for column in columns {
            let sentence = column.column_description.trim();
            if !sentence.is_empty() {
                out.columns.insert(
                    (table.to_lowercase(), column.column_name.to_lowercase()),
                    Described::Sentence(sentence.to_string()),
                );
            }
        }
    }
    out
}

/// The column comments of database `db`, from its engine's catalog (read through `runner`).
pub fn catalog_comments(runner: &dyn QueryRunner, db: &Path) -> Result<Descriptions, ExecError> {
    let mut out = Descriptions::default();
    for (table, column, comment) in sqlgate_eval::exec::schema::column_comments(runner, db)? {
        out.columns.insert(
            (table.to_lowercase(), column.to_lowercase()),
            Described::Sentence(comment),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spider_tables_json_gives_names_by_database() {
        let text = r#"[{"db_id": "school", "table_names_original": ["Student"],
            "table_names": ["student"], "column_names_original": [[-1, "*"], [0, "StuID"]],
            "column_names": [[-1, "*"], [0, "student id"]], "primary_keys": [1],
            "foreign_keys": []}]"#;
        let DescriptionFile::Databases(dbs) = parse(text).unwrap() else {
            panic!("a list is Spider's tables.json");
        };
        let school = &dbs["school"];
        assert_eq!(
            school.columns[&("student".into(), "stuid".into())],
            Described::Name("student id".into())
        );
        assert_eq!(school.tables["student"], "student");
    }

    #[test]
    fn a_defog_file_gives_sentences() {
        let text = r#"{"table_metadata": {"author": [{"data_type": "bigint",
            "column_name": "aid", "column_description": "Unique identifier for each author"}]}}"#;
        let DescriptionFile::OneDatabase(db) = parse(text).unwrap() else {
            panic!("an object is a descriptions file");
        };
        assert_eq!(
            db.columns[&("author".into(), "aid".into())],
            Described::Sentence("Unique identifier for each author".into())
        );
    }

    #[test]
    fn a_file_of_another_shape_is_refused_with_its_reason() {
        let object = parse("{\"tables\": []}").unwrap_err().to_string();
        assert!(
            object.starts_with(
                "not a descriptions file ({\"table_metadata\": {table: [{\"column_name\", \
                 \"column_description\"}]}}): missing field `table_metadata`"
            ),
            "{object}"
        );
        assert!(parse("[{\"db_id\": 3}]")
            .unwrap_err()
            .to_string()
            .starts_with("not Spider's tables.json: "));
        assert!(parse("42").unwrap_err().to_string().contains("neither"));
    }
}
