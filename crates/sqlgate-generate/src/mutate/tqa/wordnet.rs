//! A small reader of the WordNet 3.0 database files (Debian `wordnet-base`): lemma lookup,
//! morphy, synsets, hypernym paths and Wu–Palmer similarity computed as NLTK computes them
//! (`wup_similarity` with `simulate_root`), which is what the Riahi 2025 thesis (§4.2) used.
//!
//! The files are found at run time: `--wordnet DIR`, else `$SQLGATE_WORDNET`, else
//! `/usr/share/wordnet` (the Debian path).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sqlgate_eval::error::InputError;

/// The environment variable naming the WordNet folder.
pub const WORDNET_ENV: &str = "SQLGATE_WORDNET";
const DEFAULT_DIR: &str = "/usr/share/wordnet";

/// Parts of speech in NLTK's order (noun, verb, adjective, adverb).
pub const POS: [char; 4] = ['n', 'v', 'a', 'r'];

fn file_suffix(pos: char) -> &'static str {
    match pos {
        'n' => "noun",
        'v' => "verb",
        'a' => "adj",
        _ => "adv",
    }
}

/// Morphy's detachment rules per part of speech (WordNet's `morphy(7WN)`).
fn substitutions(pos: char) -> &'static [(&'static str, &'static str)] {
    match pos {
        'n' => &[
            ("s", ""),
            ("ses", "s"),
            ("ves", "f"),
            ("xes", "x"),
            ("zes", "z"),
            ("ches", "ch"),
            ("shes", "sh"),
            ("men", "man"),
            ("ies", "y"),
        ],
        'v' => &[
            ("s", ""),
            ("ies", "y"),
            ("es", "e"),
            ("es", ""),
            ("ed", "e"),
            ("ed", ""),
            ("ing", "e"),
            ("ing", ""),
        ],
        'a' => &[("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
        _ => &[],
    }
}

/// A synset: its part of speech (`a` also for satellites) and byte offset in `data.<pos>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SynsetId {
    /// Part of speech: `n`, `v`, `a` or `r`.
    pub pos: char,
    /// Byte offset of its line in `data.<pos>`.
    pub offset: u64,
}

/// What a synset's data line says.
#[derive(Debug, Clone)]
pub struct Synset {
    /// Where the synset is.
    pub id: SynsetId,
    /// Its words, as written (underscores for spaces).
    pub lemmas: Vec<String>,
    /// Hypernyms and instance hypernyms.
    pub hypernyms: Vec<SynsetId>,
}

/// Why a synset cannot be read ([`WordNet::synset`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SynsetError {
    /// The data file of its part of speech cannot be read.
    #[error("{}: {message}", .path.display())]
    Unreadable {
        /// The data file.
        path: PathBuf,
        /// The system's words.
        message: String,
    },
    /// The offset is past what this machine addresses.
    #[error(transparent)]
    Offset(#[from] std::num::TryFromIntError),
    /// The offset is past the end of the data file.
    #[error("no synset at offset {0}")]
    NoSynset(u64),
    /// The line at the offset is not a synset's.
    #[error("malformed synset line at offset {0}")]
    Malformed(u64),
}

/// A WordNet 3.0 dictionary folder, read on demand: lemmas, synsets and morphology.
pub struct WordNet {
    dir: PathBuf,
    /// lemma → (pos → synset offsets, most frequent sense first).
    index: HashMap<String, Vec<(char, Vec<u64>)>>,
    exceptions: HashMap<char, HashMap<String, Vec<String>>>,
    data: [OnceLock<Result<Vec<u8>, SynsetError>>; 4],
    synsets: std::sync::Mutex<HashMap<SynsetId, Synset>>,
}

impl WordNet {
    /// The folder to read: the explicit one, else the environment variable, else the default.
    pub fn locate(explicit: Option<&Path>) -> PathBuf {
        explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(WORDNET_ENV).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
    }

    /// Reads the index and exception files of `dir`; an error says how to install WordNet.
    pub fn open(dir: &Path) -> Result<WordNet, InputError> {
        if !dir.join("index.noun").is_file() {
            return Err(InputError::file(
                dir,
                format!(
                    "WordNet 3.0 not found (no index.noun): install it (`apt-get install wordnet-base`) \
                     or point --wordnet or ${WORDNET_ENV} at its dict folder"
                ),
            ));
        }
        let mut index: HashMap<String, Vec<(char, Vec<u64>)>> = HashMap::new();
        let mut exceptions = HashMap::new();
        for pos in POS {
            let path = dir.join(format!("index.{}", file_suffix(pos)));
            let text = std::fs::read_to_string(&path)
                .map_err(|e| InputError::file(&path, format!("cannot read: {e}")))?;
            for (number, line) in text.lines().enumerate() {
                if line.starts_with(' ') {
                    continue; // the licence header
                }
                let bad = || InputError::file(&path, "malformed index line").at_line(number + 1);
                let fields: Vec<&str> = line.split_whitespace().collect();
                let lemma = fields.first().ok_or_else(bad)?;
                let pointers: usize = fields.get(3).and_then(|p| p.parse().ok()).ok_or_else(bad)?;
                let senses: usize = fields.get(2).and_then(|p| p.parse().ok()).ok_or_else(bad)?;
                let start = 4 + pointers + 2;
                let offsets = fields
                    .get(start..start + senses)
                    .ok_or_else(bad)?
                    .iter()
                    .map(|o| o.parse::<u64>().map_err(|_| bad()))
                    .collect::<Result<Vec<_>, _>>()?;
                index
                    .entry((*lemma).to_string())
                    .or_default()
                    .push((pos, offsets));
            }
            let path = dir.join(format!("{}.exc", file_suffix(pos)));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let map: HashMap<String, Vec<String>> = text
                .lines()
                .filter_map(|line| {
                    let mut words = line.split_whitespace();
                    let form = words.next()?.to_string();
                    Some((form, words.map(str::to_string).collect()))
                })
                .collect();
            exceptions.insert(pos, map);
        }
        Ok(WordNet {
            dir: dir.to_path_buf(),
            index,
            exceptions,
            data: Default::default(),
            synsets: Default::default(),
        })
    }

    /// Whether `lemma` is a WordNet lemma of `pos` (any part of speech when `None`).
    pub fn has_lemma(&self, lemma: &str, pos: Option<char>) -> bool {
        self.index
            .get(lemma)
            .is_some_and(|entries| entries.iter().any(|(p, _)| pos.is_none_or(|q| q == *p)))
    }

    /// Whether `lemma` is, in WordNet, only a short form of longer words: every synset it
    /// belongs to has a longer lemma spelling it as a subsequence from the same initial
    /// (`atm` in {atmosphere, atm}, `nm` in {nanometer, nm}).
    pub fn is_short_form(&self, lemma: &str) -> bool {
        let lemma = lemma.to_lowercase();
        let Some(entries) = self.index.get(&lemma) else {
            return false;
        };
        let spells = |long: &str| {
            let long = long.to_lowercase();
            // `programme`, `catalogue`: a spelling of the same word, not a longer one.
            let variant = long.starts_with(&lemma) && long.len() <= lemma.len() + 2;
            !variant
                && long.len() > lemma.len()
                && long.chars().next() == lemma.chars().next()
                && is_subsequence(&lemma, &long)
        };
        entries.iter().all(|(pos, offsets)| {
            offsets.iter().all(|&offset| {
                self.synset(SynsetId { pos: *pos, offset })
                    .is_ok_and(|s| s.lemmas.iter().any(|l| spells(l)))
            })
        })
    }

    /// NLTK's `_morphy`: the base forms of `form` as `pos` that WordNet knows.
    pub fn morphy_pos(&self, form: &str, pos: char) -> Vec<String> {
        let form = form.to_lowercase().replace(' ', "_");
        let known = |forms: Vec<String>| -> Vec<String> {
            let mut seen = HashSet::new();
            forms
                .into_iter()
                .filter(|f| self.has_lemma(f, Some(pos)) && seen.insert(f.clone()))
                .collect()
        };
        let apply = |forms: &[String]| -> Vec<String> {
            forms
                .iter()
                .flat_map(|f| {
                    substitutions(pos).iter().filter_map(move |(old, new)| {
                        f.strip_suffix(old).map(|stem| format!("{stem}{new}"))
                    })
                })
                .collect()
        };
        if let Some(bases) = self.exceptions.get(&pos).and_then(|m| m.get(&form)) {
            let mut forms = vec![form.clone()];
            forms.extend(bases.iter().cloned());
            return known(forms);
        }
        let mut forms = apply(std::slice::from_ref(&form));
        let mut first = vec![form.clone()];
        first.extend(forms.iter().cloned());
        let found = known(first);
        if !found.is_empty() {
            return found;
        }
        while !forms.is_empty() {
            forms = apply(&forms);
            let found = known(forms.clone());
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }

    /// Whether `lemma` has an irregular form as `pos` (`tell` → "told"): its regular
    /// inflection would be wrong.
    /// (The exception lists also hold regular forms that morphy's rules miss, "tidied".)
    pub fn is_irregular(&self, lemma: &str, pos: char) -> bool {
        let regular = regular_forms(lemma);
        self.exceptions.get(&pos).is_some_and(|forms| {
            forms.iter().any(|(form, bases)| {
                bases.iter().any(|b| b == lemma) && form != lemma && !regular.contains(form)
            })
        })
    }

    /// NLTK's `morphy(form)`: the first base form over noun, verb, adjective, adverb.
    pub fn morphy(&self, form: &str) -> Option<String> {
        POS.iter()
            .flat_map(|&pos| self.morphy_pos(form, pos))
            .next()
    }

    /// The synsets of `word` (every part of speech, morphy applied), most frequent sense first
    /// within each part of speech, as NLTK's `wordnet.synsets(word)`.
    pub fn synsets(&self, word: &str) -> Vec<SynsetId> {
        let mut out = Vec::new();
        for pos in POS {
            for form in self.morphy_pos(word, pos) {
                for (p, offsets) in self.index.get(&form).into_iter().flatten() {
                    if *p == pos {
                        for &offset in offsets {
                            let id = SynsetId { pos, offset };
                            if !out.contains(&id) {
                                out.push(id);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// A synset's data line, parsed (cached).
    pub fn synset(&self, id: SynsetId) -> Result<Synset, SynsetError> {
        // A cache of parsed lines: one a panicking thread left behind is still whole.
        let synsets = || self.synsets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = synsets().get(&id) {
            return Ok(found.clone());
        }
        let slot = POS.iter().position(|&p| p == id.pos).unwrap_or(0);
        let data = self.data[slot]
            .get_or_init(|| {
                let path = self.dir.join(format!("data.{}", file_suffix(id.pos)));
                std::fs::read(&path).map_err(|e| SynsetError::Unreadable {
                    message: e.to_string(),
                    path,
                })
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let start = usize::try_from(id.offset)?;
        let line = data
            .get(start..)
            .and_then(|rest| rest.split(|&b| b == b'\n').next())
            .ok_or(SynsetError::NoSynset(id.offset))?;
        let line = String::from_utf8_lossy(line);
        let synset = parse_data_line(id, &line).ok_or(SynsetError::Malformed(id.offset))?;
        synsets().insert(id, synset.clone());
        Ok(synset)
    }

    fn hypernyms(&self, id: SynsetId) -> Vec<SynsetId> {
        self.synset(id).map(|s| s.hypernyms).unwrap_or_default()
    }

    /// Every hypernym path from a root down to `id` (NLTK's `hypernym_paths`).
    pub fn hypernym_paths(&self, id: SynsetId) -> Vec<Vec<SynsetId>> {
        let parents = self.hypernyms(id);
        if parents.is_empty() {
            return vec![vec![id]];
        }
        parents
            .into_iter()
            .flat_map(|parent| self.hypernym_paths(parent))
            .map(|mut path| {
                path.push(id);
                path
            })
            .collect()
    }

    /// The longest distance from `id` up to a root.
    pub fn max_depth(&self, id: SynsetId) -> usize {
        self.hypernyms(id)
            .into_iter()
            .map(|h| self.max_depth(h) + 1)
            .max()
            .unwrap_or(0)
    }

    fn min_depth(&self, id: SynsetId) -> usize {
        self.hypernyms(id)
            .into_iter()
            .map(|h| self.min_depth(h) + 1)
            .min()
            .unwrap_or(0)
    }

    /// Breadth-first distances from `id` to each of its ancestors (itself at 0).
    fn ancestor_distances(&self, id: SynsetId) -> HashMap<SynsetId, usize> {
        let mut distances = HashMap::new();
        let mut queue = VecDeque::from([(id, 0)]);
        while let Some((node, depth)) = queue.pop_front() {
            if distances.contains_key(&node) {
                continue;
            }
            distances.insert(node, depth);
            queue.extend(self.hypernyms(node).into_iter().map(|h| (h, depth + 1)));
        }
        distances
    }

    /// NLTK's `Synset.name()` (`lemma.pos.NN`), which orders tied common hypernyms.
    fn name(&self, id: SynsetId) -> String {
        let Ok(synset) = self.synset(id) else {
            return String::new();
        };
        let lemma = synset.lemmas.first().cloned().unwrap_or_default();
        let key = lemma.to_lowercase();
        let sense = self
            .index
            .get(&key)
            .into_iter()
            .flatten()
            .filter(|(p, _)| *p == id.pos)
            .find_map(|(_, offsets)| offsets.iter().position(|&o| o == id.offset))
            .map_or(0, |i| i + 1);
        format!("{lemma}.{}.{sense:02}", id.pos)
    }

    /// Wu–Palmer similarity as NLTK's `wup_similarity(simulate_root=True)`: depth of the
    /// deepest common hypernym (by min depth; ties by name) over the path lengths through it.
    /// A fake root joins verbs and other parts of speech; nouns share `entity.n.01`.
    pub fn wup(&self, a: SynsetId, b: SynsetId) -> Option<f64> {
        let need_root = a.pos != 'n' || b.pos != 'n';
        let da = self.ancestor_distances(a);
        let db = self.ancestor_distances(b);
        let common: Vec<SynsetId> = da.keys().filter(|k| db.contains_key(k)).copied().collect();
        if common.is_empty() {
            if !need_root {
                return None;
            }
            // Only the simulated root is shared: its depth is 1, and each side reaches it one
            // step past its own deepest ancestor.
            let len_a = da.values().max().copied().unwrap_or(0) + 1;
            let len_b = db.values().max().copied().unwrap_or(0) + 1;
            return Some(2.0 / (len_a + len_b + 2) as f64);
        }
        let deepest = common.iter().map(|&s| self.min_depth(s)).max()?;
        let mut tied: Vec<(String, SynsetId)> = common
            .into_iter()
            .filter(|&s| self.min_depth(s) == deepest)
            .map(|s| (self.name(s), s))
            .collect();
        tied.sort();
        let a_tied = tied.iter().any(|(_, s)| *s == a);
        if need_root && deepest == 0 && !a_tied {
            // The simulated root (depth 0, named `*ROOT*`) sorts first among the tied.
            let len_a = da.values().max().copied().unwrap_or(0) + 1;
            let len_b = db.values().max().copied().unwrap_or(0) + 1;
            return Some(2.0 / (len_a + len_b + 2) as f64);
        }
        let subsumer = if a_tied { a } else { tied[0].1 };
        let depth = self.max_depth(subsumer) + 1;
        // NLTK's shortest_path_distance: the shortest way through any ancestor of the subsumer.
        let through = self.ancestor_distances(subsumer);
        let distance = |from: &HashMap<SynsetId, usize>| {
            through
                .iter()
                .filter_map(|(s, up)| from.get(s).map(|d| d + up))
                .min()
                .unwrap_or(0)
        };
        let len_a = distance(&da) + depth;
        let len_b = distance(&db) + depth;
        Some(2.0 * depth as f64 / (len_a + len_b) as f64)
    }

    /// The highest Wu–Palmer similarity over every pair of synsets of two words (0 when
    /// either is unknown), the thesis's word-matching score (spec §3.5).
    pub fn wup_max(&self, a: &str, b: &str) -> f64 {
        let (sa, sb) = (self.synsets(a), self.synsets(b));
        let mut best: f64 = 0.0;
        for &x in &sa {
            for &y in &sb {
                if let Some(score) = self.wup(x, y) {
                    best = best.max(score);
                }
            }
        }
        best
    }
}

fn parse_data_line(id: SynsetId, line: &str) -> Option<Synset> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let words = usize::from_str_radix(fields.get(3)?, 16).ok()?;
    let lemmas = (0..words)
        .map(|i| fields.get(4 + 2 * i).map(|w| strip_marker(w).to_string()))
        .collect::<Option<Vec<_>>>()?;
    let at = 4 + 2 * words;
    let pointers: usize = fields.get(at)?.parse().ok()?;
    let mut hypernyms = Vec::new();
    for p in 0..pointers {
        let base = at + 1 + 4 * p;
        let symbol = *fields.get(base)?;
        if symbol == "@" || symbol == "@i" {
            let offset = fields.get(base + 1)?.parse().ok()?;
            let pos = match *fields.get(base + 2)? {
                "s" => 'a',
                other => other.chars().next()?,
            };
            hypernyms.push(SynsetId { pos, offset });
        }
    }
    Some(Synset {
        id,
        lemmas,
        hypernyms,
    })
}

/// The forms the regular rules spell for `lemma`: `-s`, `-es`, `-d`, `-ed`, `-ing`, a final
/// `e` or `y` changed, a final consonant doubled.
fn regular_forms(lemma: &str) -> Vec<String> {
    let mut chars = lemma.chars();
    let last = chars.next_back().map(String::from).unwrap_or_default();
    let stem = chars.as_str();
    let mut forms: Vec<String> = ["s", "es", "d", "ed", "ing", "er", "est"]
        .iter()
        .map(|end| format!("{lemma}{end}"))
        .collect();
    for end in ["ing", "ies", "ied", "ier", "iest"] {
        forms.push(format!("{stem}{end}"));
    }
    for end in ["ed", "ing", "er", "est"] {
        forms.push(format!("{lemma}{last}{end}"));
    }
    forms
}

fn is_subsequence(short: &str, long: &str) -> bool {
    let mut rest = long.chars();
    short.chars().all(|c| rest.any(|d| d == c))
}

/// Adjectives carry a syntactic marker such as `(p)` after the word.
fn strip_marker(word: &str) -> &str {
    word.split_once('(').map_or(word, |(w, _)| w)
}

/// The WordNet of this machine, for tests; `None` (after saying so) when it is not installed.
#[cfg(test)]
pub fn for_tests() -> Option<&'static WordNet> {
    static SHARED: OnceLock<Option<WordNet>> = OnceLock::new();
    SHARED
        .get_or_init(|| match WordNet::open(&WordNet::locate(None)) {
            Ok(wordnet) => Some(wordnet),
            Err(e) => {
                sqlgate_test_support::skip::without_tool(&format!(
                    "WordNet 3.0 (apt-get install wordnet-base): {e}"
                ));
                None
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morphy_follows_the_exception_lists_and_detachment_rules() {
        let Some(wn) = for_tests() else { return };
        assert_eq!(wn.morphy("atoms").as_deref(), Some("atom"));
        assert_eq!(wn.morphy("sold").as_deref(), Some("sell"));
        assert_eq!(wn.morphy_pos("sold", 'v'), vec!["sell"]);
        assert_eq!(wn.morphy_pos("churches", 'n'), vec!["church"]);
        assert_eq!(wn.morphy_pos("geese", 'n'), vec!["goose"]);
        assert!(wn.morphy("qzxv").is_none());
    }

    #[test]
    fn hypernym_paths_reach_entity() {
        let Some(wn) = for_tests() else { return };
        let atom = wn.synsets("atom")[0];
        let paths = wn.hypernym_paths(atom);
        assert!(!paths.is_empty());
        for path in &paths {
            assert_eq!(wn.synset(path[0]).unwrap().lemmas[0], "entity");
            assert_eq!(*path.last().unwrap(), atom);
        }
        assert_eq!(wn.name(atom), "atom.n.01");
    }

    /// The Wu–Palmer values of spec §3.5 (WordNet 3.0, max over synset pairs).
    #[test]
    fn wu_palmer_reproduces_the_thesis_values() {
        let Some(wn) = for_tests() else { return };
        let cases = [
            ("sale", "sell", 0.952),
            ("character", "role", 1.0),
            ("nation", "country", 1.0),
            ("client", "customer", 1.0),
            ("player", "actor", 1.0),
            ("connect", "link", 1.0),
            ("attribute", "feature", 0.941),
            ("standing", "ranking", 0.923),
            ("history", "past", 0.909),
            ("molecule", "compound", 0.80),
            ("character", "figure", 0.667),
            ("history", "historical", 0.25),
            ("hero", "superhero", 0.0),
        ];
        for (a, b, expected) in cases {
            let got = wn.wup_max(a, b);
            assert!(
                (got - expected).abs() < 0.0015,
                "wup({a}, {b}) = {got}, expected {expected}"
            );
        }
    }
}
