//! Spider hardness of each case's gold query, as the `hardness` breakdown tag (`easy`, `medium`,
//! `hard`, `extra`, or `unparsed` where the reference parser would crash).

use std::collections::HashMap;

use rayon::prelude::*;

use super::{databases, Benchmark};
use crate::error::InputError;
use crate::spider::{self, Schema};

/// Tags every feasible case that has no `hardness` tag yet. Schemas come from `tables.json`
/// when the benchmark has one, else from each database file, as the reference parser reads them.
pub(super) fn tag(bench: &mut Benchmark) -> Result<(), InputError> {
    let schemas: HashMap<String, Schema> = match &bench.tables {
        Some(tables) => Schema::from_tables_json(tables)?,
        None => {
            let mut schemas = HashMap::new();
            for case in &bench.cases {
                if !schemas.contains_key(&case.db) {
                    let file = databases::resolve(&bench.db_dir, case, "sqlite")?;
                    schemas.insert(case.db.clone(), Schema::from_sqlite(&*bench.backend, file)?);
                }
            }
            schemas
        }
    };
    bench
        .cases
        .par_iter_mut()
        .filter(|case| case.feasible)
        .for_each(|case| {
            if case.tags.contains_key("hardness") {
                return;
            }
            let level = match (schemas.get(&case.db), case.gold.first()) {
                (Some(schema), Some(gold)) => match spider::classify(gold, schema) {
                    Ok(hardness) => hardness.to_string(),
                    Err(_) => "unparsed".to_string(),
                },
                _ => "unparsed".to_string(),
            };
            case.tags.insert("hardness".to_string(), level);
        });
    Ok(())
}
