//! The engines this build of sqlgate has: a new engine is a crate implementing
//! [`sqlgate_engine::Driver`] plus one line in [`ENGINES`] (and its cargo feature).

use sqlgate_engine::Driver;

/// Every engine sqlgate knows, by name, and the driver when this build has it (its cargo
/// feature is on).
pub const ENGINES: &[(&str, Option<&'static dyn Driver>)] = &[
    ("sqlite", Some(&sqlgate_engine_sqlite::DRIVER)),
    #[cfg(feature = "postgres")]
    ("postgres", Some(&sqlgate_engine_postgres::DRIVER)),
    #[cfg(not(feature = "postgres"))]
    ("postgres", None),
    #[cfg(feature = "mysql")]
    ("mysql", Some(&sqlgate_engine_mysql::DRIVER)),
    #[cfg(not(feature = "mysql"))]
    ("mysql", None),
    #[cfg(feature = "duckdb")]
    ("duckdb", Some(&sqlgate_engine_duckdb::DRIVER)),
    #[cfg(not(feature = "duckdb"))]
    ("duckdb", None),
];

/// The engine named `name`, or why there is none.
pub fn driver(name: &str) -> Result<&'static dyn Driver, EngineNameError> {
    match ENGINES.iter().find(|(known, _)| *known == name) {
        Some((_, Some(driver))) => Ok(*driver),
        Some((known, None)) => Err(EngineNameError::NotBuilt(known)),
        None => Err(EngineNameError::Unknown(name.to_string())),
    }
}

/// Why a name (`engine = "..."`, `--engine`) selects no engine of this build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineNameError {
    /// An engine sqlgate knows, left out of this build (its cargo feature is off).
    #[error("engine `{0}` is not in this build of sqlgate: build it with the cargo feature `{0}`")]
    NotBuilt(&'static str),
    /// No engine has this name; the message lists those that do.
    #[error("unknown engine `{}`; sqlgate knows {}", .0.escape_debug(), names().join(", "))]
    Unknown(String),
}

/// The names of every engine, built in or not.
pub fn names() -> Vec<&'static str> {
    ENGINES.iter().map(|(name, _)| *name).collect()
}

/// The SQLite engine, in every build.
pub fn sqlite() -> &'static dyn Driver {
    &sqlgate_engine_sqlite::DRIVER
}

/// An engine as `engine = "..."` (`sqlgate.toml`) or `--engine` names it: one this build has.
#[derive(Clone, Copy)]
pub struct EngineKind(pub &'static dyn Driver);

impl EngineKind {
    /// The engine's driver.
    pub fn driver(self) -> &'static dyn Driver {
        self.0
    }

    /// The engine's name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl Default for EngineKind {
    fn default() -> Self {
        EngineKind(sqlite())
    }
}

impl PartialEq for EngineKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for EngineKind {}

impl std::fmt::Debug for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for EngineKind {
    type Err = EngineNameError;

    fn from_str(name: &str) -> Result<Self, EngineNameError> {
        driver(name).map(EngineKind)
    }
}

impl<'de> serde::Deserialize<'de> for EngineKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for EngineKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_answers_to_its_own_name() {
        for (name, driver) in ENGINES {
            if let Some(driver) = driver {
                assert_eq!(driver.name(), *name);
            }
        }
        assert!(driver("oracle").unwrap_err().to_string().contains("sqlite"));
        assert_eq!(
            driver("sqlite\n").unwrap_err().to_string(),
            format!(
                "unknown engine `sqlite\\n`; sqlgate knows {}",
                names().join(", ")
            )
        );
    }

    #[test]
    fn an_engine_left_out_of_the_build_is_refused_naming_its_feature() {
        for (name, built) in ENGINES {
            match built {
                Some(_) => assert!(driver(name).is_ok()),
                None => {
                    let error = driver(name).unwrap_err().to_string();
                    assert!(
                        error.contains(&format!("cargo feature `{name}`")),
                        "{error}"
                    );
                }
            }
        }
    }

    #[test]
    fn sqlite_files_take_no_server_settings() {
        let settings = sqlgate_engine::Settings {
            dsn: Some("postgres://r@h/{db}"),
            ..Default::default()
        };
        let error = sqlite()
            .connect(&settings)
            .expect_err("refused")
            .to_string();
        assert!(error.contains("server engine"), "{error}");
        assert!(!sqlite().connect(&Default::default()).unwrap().on_server());
    }
}
