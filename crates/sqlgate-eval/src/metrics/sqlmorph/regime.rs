//! Regime names as the paper writes them: `<columns>-<cells>[-<extras>]`.

use std::fmt;
use std::str::FromStr;

/// How output columns are paired before cells are compared (paper §VI-B a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnMatching {
    /// `EC`: exact, case-sensitive column names.
    Exact,
    /// `SC`: embedded column descriptors, maximum-weight assignment above a threshold.
    Semantic,
    /// `NC`: no column matching; rows are compared through their values only.
    NoColumn,
}

/// How rows and cells are matched (paper §VI-B b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellMatching {
    /// `EC`: whole projected rows must be equal.
    Exact,
    /// `PC`: exact rows first, then greedy partial credit for equal cells.
    Partial,
}

/// Whether predicted columns outside the matched set count against precision (paper §VI-B c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extras {
    /// `PE`: every predicted column counts.
    Penalize,
    /// `IE`: only matched columns count. Not defined under NC except in compat mode.
    Ignore,
}

/// One metric regime, e.g. `EC-EC-IE`, `SC-PC-PE` or `NC-PC`.
///
/// The default is `EC-EC-IE`: the regime of the first column of the paper's Tables X and XI,
/// the strictest relaxed regime (names must agree, whole rows must agree), and the only one
/// that needs neither an embedding model nor partial matching, so it is cheap and reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Regime {
    /// How columns are paired.
    pub columns: ColumnMatching,
    /// How rows and cells are matched.
    pub cells: CellMatching,
    /// Under NC, `Penalize` is implied and not printed; `Ignore` exists only for compat mode.
    pub extras: Extras,
}

impl Default for Regime {
    fn default() -> Self {
        Regime {
            columns: ColumnMatching::Exact,
            cells: CellMatching::Exact,
            extras: Extras::Ignore,
        }
    }
}

impl Regime {
    /// Every regime the paper defines, in a stable order (NC without extras: PE is implied).
    pub fn all() -> Vec<Regime> {
        let mut all = Vec::new();
        for columns in [ColumnMatching::Exact, ColumnMatching::Semantic] {
            for cells in [CellMatching::Exact, CellMatching::Partial] {
                for extras in [Extras::Ignore, Extras::Penalize] {
                    all.push(Regime {
                        columns,
                        cells,
                        extras,
                    });
                }
            }
        }
        for cells in [CellMatching::Exact, CellMatching::Partial] {
            all.push(Regime {
                columns: ColumnMatching::NoColumn,
                cells,
                extras: Extras::Penalize,
            });
        }
        all
    }
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns = match self.columns {
            ColumnMatching::Exact => "EC",
            ColumnMatching::Semantic => "SC",
            ColumnMatching::NoColumn => "NC",
        };
        let cells = match self.cells {
            CellMatching::Exact => "EC",
            CellMatching::Partial => "PC",
        };
        let extras = match (self.columns, self.extras) {
            (ColumnMatching::NoColumn, Extras::Penalize) => "",
            (_, Extras::Penalize) => "-PE",
            (_, Extras::Ignore) => "-IE",
        };
        write!(f, "{columns}-{cells}{extras}")
    }
}

/// A regime name that is not one of the paper's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown SQLMorph regime `{0}`: expected <EC|SC>-<EC|PC>-<IE|PE> or NC-<EC|PC>")]
pub struct ParseRegimeError(pub String);

impl FromStr for Regime {
    type Err = ParseRegimeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ParseRegimeError(text.to_string());
        let upper = text.trim().to_ascii_uppercase();
        let parts: Vec<&str> = upper.split('-').collect();
        let columns = match parts.first().copied() {
            Some("EC") => ColumnMatching::Exact,
            Some("SC") => ColumnMatching::Semantic,
            Some("NC") => ColumnMatching::NoColumn,
            _ => return Err(error()),
        };
        let cells = match parts.get(1).copied() {
            Some("EC") => CellMatching::Exact,
            Some("PC") => CellMatching::Partial,
            _ => return Err(error()),
        };
        let extras = match (columns, parts.get(2).copied(), parts.len()) {
            (_, Some("PE"), 3) => Extras::Penalize,
            (_, Some("IE"), 3) => Extras::Ignore,
            (ColumnMatching::NoColumn, None, 2) => Extras::Penalize,
            _ => return Err(error()),
        };
        Ok(Regime {
            columns,
            cells,
            extras,
        })
    }
}

impl serde::Serialize for Regime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Regime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let names: Vec<String> = Regime::all().iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "EC-EC-IE", "EC-EC-PE", "EC-PC-IE", "EC-PC-PE", "SC-EC-IE", "SC-EC-PE", "SC-PC-IE",
                "SC-PC-PE", "NC-EC", "NC-PC"
            ]
        );
        for regime in Regime::all() {
            assert_eq!(regime.to_string().parse::<Regime>(), Ok(regime));
        }
    }

    #[test]
    fn nc_accepts_explicit_extras() {
        let pe: Regime = "NC-PC-PE".parse().unwrap();
        assert_eq!(pe.to_string(), "NC-PC");
        let ie: Regime = "nc-pc-ie".parse().unwrap();
        assert_eq!(ie.extras, Extras::Ignore);
        assert_eq!(ie.to_string(), "NC-PC-IE");
    }

    #[test]
    fn rejects_malformed_names() {
        for bad in [
            "",
            "EC",
            "EC-EC",
            "XC-EC-IE",
            "EC-XC-IE",
            "EC-EC-XE",
            "EC-EC-IE-PE",
            "NC",
        ] {
            assert!(bad.parse::<Regime>().is_err(), "{bad}");
        }
    }

    #[test]
    fn default_is_ec_ec_ie_and_serde_uses_the_name() {
        assert_eq!(Regime::default().to_string(), "EC-EC-IE");
        let json = serde_json::to_string(&Regime::default()).unwrap();
        assert_eq!(json, "\"EC-EC-IE\"");
        let back: Regime = serde_json::from_str("\"SC-PC-PE\"").unwrap();
        assert_eq!(back.to_string(), "SC-PC-PE");
        assert!(serde_json::from_str::<Regime>("\"EC-PC\"").is_err());
    }
}
