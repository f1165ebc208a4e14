//! `sqlgate copy`: the same databases on another engine (SQLite files into DuckDB files, a
//! PostgreSQL or MySQL server, and back), read through the source engine's sandbox and
//! written through the target engine's [`Writer`](sqlgate_eval::exec::Writer): the way one
//! benchmark is scored on several engines (`sqlgate audit --engines`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use sqlgate::Error;
use sqlgate_engines::EngineKind;
use sqlgate_eval::error::{is_plain_name, InputError, OutputError};
use sqlgate_eval::exec::{copy_database, Backend, Limits, Open, Settings, Source, Storage};

/// Rows read from the source per query.
const BATCH_ROWS: usize = 10_000;

#[derive(Args)]
pub struct CopyArgs {
    /// A database to copy (repeatable): its name, as a case's `db` names it.
    #[arg(long = "db", value_name = "NAME", required = true)]
    databases: Vec<String>,
    /// Folder holding the source's `<db>.<extension>` or `<db>/<db>.<extension>` files.
    #[arg(long, default_value = ".")]
    db_dir: PathBuf,
    /// Where the source databases are.
    #[command(flatten)]
    from: super::ServerArgs,
    /// The engine to copy into.
    #[arg(long)]
    to_engine: EngineKind,
    /// The folder the copies are written to (file engines): `<to-db-dir>/<db>.<extension>`.
    #[arg(long)]
    to_db_dir: Option<PathBuf>,
    /// The target server's connection URL template, `{db}` standing for each database name;
    /// its role must be able to create databases.
    #[arg(long)]
    to_dsn: Option<String>,
    /// The environment variable holding the target server's password.
    #[arg(long)]
    to_password_env: Option<String>,
}

pub fn run(args: CopyArgs) -> Result<(), Error> {
    for db in &args.databases {
        if !is_plain_name(db) {
            return Err(Error::Usage(format!(
                "--db `{}` is not a plain database name",
                db.escape_debug()
            )));
        }
    }
    let from = args.from.backend(&args.db_dir, None)?;
    let settings = Settings {
        dsn: args.to_dsn.as_deref(),
        password_env: args.to_password_env.as_deref(),
        ..Settings::default()
    };
    let to = sqlgate_eval::exec::connect(args.to_engine.driver(), &settings)
        .map_err(|message| Error::Usage(format!("--to-engine: {message}")))?;
    let to_dir = match (to.driver().storage(), &args.to_db_dir) {
        (Storage::Files { .. }, Some(dir)) => Some(dir.clone()),
        (Storage::Files { .. }, None) => {
            return Err(Error::Usage(format!(
                "--to-engine {}: copies are files, written to --to-db-dir",
                args.to_engine
            )))
        }
        (Storage::Server, Some(_)) => {
            return Err(Error::Usage(format!(
                "--to-engine {}: databases go to the server of --to-dsn, not to --to-db-dir",
                args.to_engine
            )))
        }
        (Storage::Server, None) => None,
    };
    for db in &args.databases {
        let source = source_database(&*from, &args.db_dir, db)?;
        let written = match &to_dir {
            Some(dir) => copy_to_file(&*from, &source, &to, dir, db)?,
            None => {
                copy_into(&*from, &source, &to, Path::new(db))?;
                to.driver().name().to_string()
            }
        };
        println!("copied {} to {written}", source.display());
    }
    Ok(())
}

/// The source database: a file of the source engine's layouts, or a server's database name.
fn source_database(from: &dyn Backend, db_dir: &Path, db: &str) -> Result<PathBuf, Error> {
    match from.driver().storage() {
        Storage::Files { extension, .. } => {
            sqlgate_eval::files::database_file(db_dir, db, extension)
                .map_err(|problem| InputError::file(db_dir, format!("--db {db}: {problem}")).into())
        }
        Storage::Server => Ok(PathBuf::from(db)),
    }
}

/// Copies into a new file `<dir>/<db>.<extension>`: written under a name no reader takes for a
/// database, then linked into place, so a copy cut short is never read as complete and no
/// existing file is replaced.
fn copy_to_file(
    from: &dyn Backend,
    source: &Path,
    to: &Arc<dyn Backend>,
    dir: &Path,
    db: &str,
) -> Result<String, Error> {
    let Storage::Files {
        extension,
        sidecars,
    } = to.driver().storage()
    else {
        unreachable!("a file engine")
    };
    let target = dir.join(format!("{db}.{extension}"));
    if std::fs::symlink_metadata(&target).is_ok() {
        return Err(InputError::file(
            &target,
            "exists: sqlgate copy never replaces a database (remove it first)",
        )
        .into());
    }
    std::fs::create_dir_all(dir).map_err(|e| OutputError::new(dir, e))?;
    // A name of this run's own: the engine creates it new (an existing file is refused, never
    // removed), so what is removed below is what this run wrote.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let staging = dir.join(format!(
        ".sqlgate-copy-{}-{nanos}.partial",
        std::process::id()
    ));
    if std::fs::symlink_metadata(&staging).is_ok() {
        return Err(InputError::file(&staging, "exists: sqlgate copy does not replace it").into());
    }
    let remove_staging = || {
        for path in std::iter::once(staging.clone()).chain(
            sidecars
                .iter()
                .map(|suffix| sqlgate_eval::files::sidecar(&staging, suffix)),
        ) {
            let _ = std::fs::remove_file(path);
        }
    };
    let copied = copy_into(from, source, to, &staging);
    let linked = copied.and_then(|()| {
        std::fs::hard_link(&staging, &target).map_err(|e| OutputError::new(&target, e).into())
    });
    remove_staging();
    linked?;
    Ok(target.display().to_string())
}

/// Copies every table of `source` into the new database `target` of `to`.
fn copy_into(
    from: &dyn Backend,
    source: &Path,
    to: &Arc<dyn Backend>,
    target: &Path,
) -> Result<(), Error> {
    let limits = Limits {
        timeout: None,
        ..Limits::default()
    };
    let input = |e: sqlgate_eval::exec::ExecError| InputError::file(source, e.message);
    let mut reader = from
        .open(source, Open::for_source(Source::Gold))
        .map_err(input)?;
    let mut writer = to.create(target).map_err(|e| {
        Error::from(InputError::file(
            target,
            format!("cannot create the copy: {}", e.message),
        ))
    })?;
    copy_database(
        from.driver(),
        &mut *reader,
        &mut *writer,
        &limits,
        BATCH_ROWS,
    )
    .map_err(|e| Error::from(InputError::file(source, format!("copying: {}", e.message))))?;
    writer.finish().map_err(|e| {
        Error::from(InputError::file(
            target,
            format!("cannot finish the copy: {}", e.message),
        ))
    })
}
