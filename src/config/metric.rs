//! The metrics a gate can hold to a threshold: `gate = { ex = ">= 0.7", etm = ">= 0.5" }`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A suite-level metric. An unknown name is a configuration error at load time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Execution accuracy under the suite's mode.
    Ex,
    /// SQLMorph fine-grained precision, recall and F1 (need the suite's `regime`).
    Exp,
    Exr,
    F1,
    /// Spider exact set match and Enhanced Tree Matching (need `structural`).
    Esm,
    Etm,
    /// TrustSQL's reliability score RS(c), with the profile's penalty.
    Rs,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Ex,
        Metric::Exp,
        Metric::Exr,
        Metric::F1,
        Metric::Esm,
        Metric::Etm,
        Metric::Rs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Ex => "ex",
            Metric::Exp => "exp",
            Metric::Exr => "exr",
            Metric::F1 => "f1",
            Metric::Esm => "esm",
            Metric::Etm => "etm",
            Metric::Rs => "rs",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Metric {
    type Err = String;

    fn from_str(name: &str) -> Result<Metric, String> {
        Metric::ALL
            .into_iter()
            .find(|metric| metric.name() == name)
            .ok_or_else(|| format!("unknown metric `{name}`"))
    }
}
