//! PostgreSQL's catalog: `pg_catalog`, for the schemas on the search path.

use sqlgate_engine::catalog::{flag, text, ColRef, Column, ForeignKey};
use sqlgate_engine::{Schema, Value};

/// The schema from PostgreSQL's catalog (tables of the schemas on the search path), each
/// query's rows given by `rows`.
pub(crate) fn postgres_catalog<E>(
    mut rows: impl FnMut(&str) -> Result<Vec<Vec<Value>>, E>,
) -> Result<Schema, E> {
    let columns = rows(
        "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), \
                a.attnotnull, \
                EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid \
                        AND k.contype = 'p' AND a.attnum = ANY (k.conkey)) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false)) \
         ORDER BY c.relname, a.attnum",
    )?;
    let mut schema = Schema::default();
    for row in columns {
        schema.push_column(
            text(&row[0]),
            Column {
                name: text(&row[1]),
                decl_type: text(&row[2]),
                primary_key: flag(&row[4]),
                not_null: flag(&row[3]),
            },
        );
    }
    let keys = rows(
        "SELECT src.relname::text, sa.attname::text, dst.relname::text, da.attname::text \
         FROM pg_constraint k \
         JOIN pg_class src ON src.oid = k.conrelid JOIN pg_class dst ON dst.oid = k.confrelid \
         JOIN pg_namespace n ON n.oid = src.relnamespace \
         CROSS JOIN LATERAL unnest(k.conkey, k.confkey) AS pair(from_col, to_col) \
         JOIN pg_attribute sa ON sa.attrelid = src.oid AND sa.attnum = pair.from_col \
         JOIN pg_attribute da ON da.attrelid = dst.oid AND da.attnum = pair.to_col \
         WHERE k.contype = 'f' AND n.nspname = ANY (current_schemas(false)) \
         ORDER BY src.relname, k.conname, sa.attnum",
    )?;
    for row in keys {
        schema.foreign_keys.push(ForeignKey {
            from: ColRef::new(&text(&row[0]), &text(&row[1])),
            to: ColRef::new(&text(&row[2]), &text(&row[3])),
        });
    }
    Ok(schema)
}
