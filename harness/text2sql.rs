//! The project's own gate as `cargo test --test text2sql` / `cargo nextest run`.
sqlgate::harness!("sqlgate.toml");
