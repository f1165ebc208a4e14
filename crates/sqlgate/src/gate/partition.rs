//! `--partition count:K/N | hash:K/N`: one CI runner's share of the cases, with nextest's
//! syntax and meaning. `count` deals the selected cases out round-robin in listing order (even
//! shards for one run); `hash` assigns each case by a stable hash of its name, so a case never
//! changes shard when other cases come or go.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// One shard of a run split across CI jobs (`--partition count:K/N` or `hash:K/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// Shard `shard` (1-based) of `total`, round-robin.
    Count {
        /// The shard's 1-based number.
        shard: u64,
        /// How many shards there are.
        total: u64,
    },
    /// Shard `shard` (1-based) of `total`, by the hash of the test name.
    Hash {
        /// The shard's 1-based number.
        shard: u64,
        /// How many shards there are.
        total: u64,
    },
}

impl Partition {
    /// Whether the case listed at `position` (0-based, among the selected cases) named `name`
    /// belongs to this shard.
    pub fn contains(&self, position: usize, name: &str) -> bool {
        match *self {
            Partition::Count { shard, total } => position as u64 % total == shard - 1,
            Partition::Hash { shard, total } => name_hash(name) % total == shard - 1,
        }
    }

    /// The shard's 1-based number and the number of shards.
    pub fn shard(&self) -> (u64, u64) {
        match *self {
            Partition::Count { shard, total } | Partition::Hash { shard, total } => (shard, total),
        }
    }
}

/// The first 8 bytes of the name's SHA-256: the same on every machine and version.
fn name_hash(name: &str) -> u64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

impl FromStr for Partition {
    type Err = PartitionError;

    fn from_str(text: &str) -> Result<Partition, PartitionError> {
        let expected = || PartitionError(text.to_string());
        let (kind, shares) = text.split_once(':').ok_or_else(expected)?;
        let (shard, total) = shares.split_once('/').ok_or_else(expected)?;
        let (Ok(shard), Ok(total)) = (shard.trim().parse::<u64>(), total.trim().parse::<u64>())
        else {
            return Err(expected());
        };
        if shard == 0 || shard > total {
            return Err(expected());
        }
        match kind.trim() {
            "count" => Ok(Partition::Count { shard, total }),
            "hash" => Ok(Partition::Hash { shard, total }),
            _ => Err(expected()),
        }
    }
}

/// A `--partition` that is not `count:K/N` or `hash:K/N` with 1 <= K <= N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected count:K/N or hash:K/N, with 1 <= K <= N")]
pub struct PartitionError(pub String);

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Count { shard, total } => write!(f, "count:{shard}/{total}"),
            Partition::Hash { shard, total } => write!(f, "hash:{shard}/{total}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Partition;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("demo::db::q{i:03}")).collect()
    }

    /// Which shard (1-based) each name falls in.
    fn shards_of(names: &[String], kind: &str, total: u64) -> Vec<u64> {
        names
            .iter()
            .enumerate()
            .map(|(position, name)| {
                let owners: Vec<u64> = (1..=total)
                    .filter(|shard| {
                        let partition: Partition =
                            format!("{kind}:{shard}/{total}").parse().unwrap();
                        partition.contains(position, name)
                    })
                    .collect();
                assert_eq!(
                    owners.len(),
                    1,
                    "{name} is in exactly one shard: {owners:?}"
                );
                owners[0]
            })
            .collect()
    }

    #[test]
    fn count_deals_round_robin_and_hash_covers_every_case_once() {
        let all = names(10);
        assert_eq!(shards_of(&all, "count", 3), [1, 2, 3, 1, 2, 3, 1, 2, 3, 1]);
        let by_hash = shards_of(&all, "hash", 3);
        assert!(by_hash.iter().all(|s| (1..=3).contains(s)));
        assert_eq!(shards_of(&all, "hash", 1), vec![1; 10]);
    }

    #[test]
    fn a_hashed_case_never_moves_when_others_are_added() {
        let before = names(200);
        let mut after = before.clone();
        after.insert(17, "demo::db::new_case".to_string());
        after.push("demo::db::another".to_string());
        let shard_before = shards_of(&before, "hash", 4);
        let shard_after = shards_of(&after, "hash", 4);
        for (name, shard) in before.iter().zip(&shard_before) {
            let at = after.iter().position(|n| n == name).unwrap();
            assert_eq!(shard_after[at], *shard, "{name} moved");
        }
        // And the hash spreads the cases: no shard is empty.
        for shard in 1..=4 {
            assert!(shard_before.contains(&shard), "shard {shard} is empty");
        }
    }

    #[test]
    fn bad_partitions_are_refused() {
        for bad in [
            "count:0/3",
            "count:4/3",
            "hash:1/0",
            "mod:1/2",
            "count:1",
            "count:a/b",
            "",
        ] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
        let good: Partition = "hash:2/5".parse().unwrap();
        assert_eq!(good.to_string(), "hash:2/5");
        assert_eq!(good.shard(), (2, 5));
    }

    mod properties {
        use proptest::prelude::*;

        use super::{shards_of, Partition};

        proptest! {
            #[test]
            fn every_case_is_in_exactly_one_shard(
                names in proptest::collection::vec("[a-z0-9:_]{1,16}", 0..40),
                total in 1u64..10,
                kind in prop_oneof![Just("count"), Just("hash")],
            ) {
                // `shards_of` panics on a case owned by no shard or by two.
                let shards = shards_of(&names, kind, total);
                prop_assert!(shards.iter().all(|shard| (1..=total).contains(shard)));
            }

            #[test]
            fn count_shards_are_even_and_earlier_ones_never_smaller(
                cases in 0usize..120,
                total in 1u64..16,
            ) {
                let names: Vec<String> = (0..cases).map(|i| format!("s::db::q{i}")).collect();
                let shards = shards_of(&names, "count", total);
                let sizes: Vec<usize> = (1..=total)
                    .map(|shard| shards.iter().filter(|s| **s == shard).count())
                    .collect();
                prop_assert_eq!(sizes.iter().sum::<usize>(), cases);
                prop_assert!(sizes.windows(2).all(|pair| pair[0] == pair[1] || pair[0] == pair[1] + 1), "{:?}", sizes);
            }

            #[test]
            fn a_hashed_case_keeps_its_shard_wherever_it_is_listed(
                name in "[a-z0-9:_]{1,16}",
                positions in (0usize..1000, 0usize..1000),
                total in 1u64..10,
            ) {
                let owner = |position: usize| {
                    (1..=total).find(|&shard| Partition::Hash { shard, total }.contains(position, &name))
                };
                prop_assert_eq!(owner(positions.0), owner(positions.1));
            }

            #[test]
            fn a_printed_partition_parses_back_to_itself(
                (shard, total) in (1u64..=u64::MAX).prop_flat_map(|total| (1..=total, Just(total))),
                hash in any::<bool>(),
            ) {
                let partition = if hash {
                    Partition::Hash { shard, total }
                } else {
                    Partition::Count { shard, total }
                };
                prop_assert_eq!(partition.to_string().parse::<Partition>(), Ok(partition));
            }
        }
    }
}
