//! The PostgreSQL engine of a build without the `postgres` feature: the same API, and a server
//! that cannot be named (`engine = "postgres"` is refused when the backend is built), so
//! nothing else needs to know which build it is in.

use std::convert::Infallible;

use super::sandbox::Limits;
use super::schema::Schema;
use super::{ExecError, Execution};

/// A PostgreSQL server; none can exist in this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    never: Infallible,
}

impl Server {
    /// Always refused: this build has no PostgreSQL client.
    pub fn new(_template: &str, _password_env: Option<&str>) -> Result<Server, String> {
        Err(
            "this build of sqlgate has no PostgreSQL support (the `postgres` feature is off)"
                .into(),
        )
    }

    /// The connection URL of database `db`.
    pub fn url(&self, _db: &str) -> String {
        match self.never {}
    }

    /// Runs one untrusted query on database `db`.
    pub fn execute(&self, _db: &str, _sql: &str, _limits: &Limits) -> Execution {
        match self.never {}
    }

    /// The planner's estimated total cost of a query on database `db`.
    pub fn planned_cost(&self, _db: &str, _sql: &str, _limits: &Limits) -> Result<f64, ExecError> {
        match self.never {}
    }

    /// What the connection's role can do beyond reading.
    pub fn check_reader(&self, _db: &str) -> Result<Vec<String>, String> {
        match self.never {}
    }

    /// The schema of database `db`.
    pub fn schema(&self, _db: &str) -> Result<Schema, String> {
        match self.never {}
    }
}
