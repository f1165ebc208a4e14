//! Text embeddings for semantic column matching (SC).

use crate::error::AskError;

pub use sqlgate_base::embed::Embedder;

/// The built-in offline embedder: hashed character n-grams, L2-normalised.
///
/// Each text is lowercased, the fixed labels of the SC descriptor template (`column name:`,
/// `data type:`, `sample values:`) are dropped, and every character n-gram is hashed (FNV-1a)
/// into one of `dims` buckets. Dropping the labels matters: they are the same in every
/// descriptor and would otherwise make unrelated columns look alike.
///
/// Deterministic, needs no network or model files. It is not comparable to the paper's
/// numbers, which use OpenAI `text-embedding-3-small`.
#[derive(Debug, Clone)]
pub struct NgramEmbedder {
    n: usize,
    dims: usize,
    model_id: String,
}

impl NgramEmbedder {
    /// Character `n`-grams hashed into `dims` buckets (both at least 1).
    pub fn new(n: usize, dims: usize) -> Self {
        let (n, dims) = (n.max(1), dims.max(1));
        NgramEmbedder {
            n,
            dims,
            model_id: format!("ngram{n}-fnv1a-{dims}"),
        }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut cleaned = text.to_lowercase();
        for label in ["column name:", "data type:", "sample values:"] {
            cleaned = cleaned.replace(label, " ");
        }
        let chars: Vec<char> = cleaned
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .collect();
        let mut vector = vec![0f32; self.dims];
        // A text shorter than n is one gram on its own.
        for gram in chars.windows(self.n.min(chars.len().max(1))) {
            let bucket = fnv1a(gram) % self.dims as u64;
            vector[bucket as usize] += 1.0;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

impl Default for NgramEmbedder {
    /// Trigrams into 2048 buckets.
    fn default() -> Self {
        NgramEmbedder::new(3, 2048)
    }
}

impl Embedder for NgramEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, AskError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

fn fnv1a(chars: &[char]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buffer = [0u8; 4];
    for c in chars {
        for byte in c.encode_utf8(&mut buffer).as_bytes() {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// Cosine similarity (`1 − cosine distance`); 0 when either vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator > 0.0 {
        dot / denominator
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(e: &NgramEmbedder, a: &str, b: &str) -> f64 {
        let v = e.embed(&[a.to_string(), b.to_string()]).unwrap();
        cosine(&v[0], &v[1])
    }

    #[test]
    fn deterministic_and_normalised() {
        let e = NgramEmbedder::default();
        let a = e
            .embed(&["Column name: id. Data type: int64. ".to_string()])
            .unwrap();
        let b = e
            .embed(&["Column name: id. Data type: int64. ".to_string()])
            .unwrap();
        assert_eq!(a, b);
        let norm: f32 = a[0].iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
        assert_eq!(e.model_id(), "ngram3-fnv1a-2048");
    }

    #[test]
    fn similar_texts_score_higher_than_unrelated_ones() {
        let e = NgramEmbedder::default();
        let close = sim(&e, "student_name Alice, Bob", "name Alice, Bob");
        let far = sim(&e, "student_name Alice, Bob", "price 9.5, 12.25");
        assert!(close > 0.7 && far < 0.3, "close {close} far {far}");
        assert!((sim(&e, "AbC", "abc") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn short_and_empty_texts_do_not_fail() {
        let e = NgramEmbedder::default();
        let v = e.embed(&["".to_string(), "a".to_string()]).unwrap();
        assert!(v[0].iter().all(|x| *x == 0.0));
        assert_eq!(cosine(&v[0], &v[1]), 0.0);
        assert!((cosine(&v[1], &v[1]) - 1.0).abs() < 1e-9);
    }
}
