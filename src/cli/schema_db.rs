//! `sqlgate schema-db`: schema-only SQLite databases from a Spider `tables.json`.

use std::path::PathBuf;

use clap::Args;

use sqlgate::Error;
use sqlgate_eval::spider::schema_db::{build_databases, Outcome};

#[derive(Args)]
pub struct SchemaDbArgs {
    /// Spider `tables.json`.
    #[arg(long)]
    tables: PathBuf,
    /// Output folder: each database goes to `<out>/<db_id>/<db_id>.sqlite`.
    #[arg(long)]
    out: PathBuf,
    /// Build only this database (repeatable; default: every database of the file).
    #[arg(long = "db", value_name = "ID")]
    db_ids: Vec<String>,
    /// Replace databases that already exist (by default they are skipped).
    #[arg(long)]
    force: bool,
}

pub fn run(args: SchemaDbArgs) -> Result<(), Error> {
    let built = build_databases(
        &args.tables,
        &args.out,
        &args.db_ids,
        args.force,
        &*super::sqlite_files(),
    )?;
    for database in built {
        let path = database.path.display();
        match database.outcome {
            Outcome::Written => println!("wrote {path}"),
            Outcome::Skipped => println!("skipped {path} (exists; --force replaces it)"),
        }
    }
    Ok(())
}
