//! The greedy choice of databases: one by one, the candidate that tells apart the most
//! (gold, neighbour) pairs fewer than [`COVER`] kept databases tell apart so far; then, for
//! every gold that returns no row on any kept database, the candidate where it does (so a gold
//! that returns rows somewhere is never checked on empty results alone).

/// How many databases should tell each pair apart. A wrong answer is rarely one of the
/// neighbours, only near one: a second database that kills the neighbour, with other rows, is
/// a second chance to tell the answer apart too (on Spider dev, half the wrong answers that
/// passed a once-covered suite fail a twice-covered one: docs/distill.md).
pub const COVER: usize = 2;

/// Which candidates to keep: `kills[c][p]` says candidate `c` kills pair `p`; pairs in
/// `covered` are already killed by the original, which counts as one of the [`COVER`]. At
/// most `budget` by kill count, then the ones `nonempty` (`nonempty[c][g]`: gold `g` returns
/// rows on candidate `c`) asks for beside `nonempty_already` (gold `g` returns rows on the
/// original). Ties go to the lower index.
pub fn greedy(
    kills: &[Vec<bool>],
    covered: &[bool],
    budget: usize,
    nonempty: &[Vec<bool>],
    nonempty_already: &[bool],
) -> Vec<usize> {
    // How many more databases each pair asks for: the original counts as one.
    let mut wanted: Vec<usize> = covered
        .iter()
        .map(|&done| COVER - usize::from(done))
        .collect();
    let mut kept = Vec::new();
    while kept.len() < budget {
        let gain = |c: usize| {
            kills[c]
                .iter()
                .zip(&wanted)
                .filter(|(kill, more)| **kill && **more > 0)
                .count()
        };
        let best = (0..kills.len())
            .filter(|c| !kept.contains(c))
            .map(|c| (gain(c), c))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        match best {
            Some((gain, c)) if gain > 0 => {
                for (more, kill) in wanted.iter_mut().zip(&kills[c]) {
                    if *kill {
                        *more = more.saturating_sub(1);
                    }
                }
                kept.push(c);
            }
            _ => break,
        }
    }
    let golds = nonempty_already.len();
    for g in 0..golds {
        let seen = nonempty_already[g] || kept.iter().any(|&c| nonempty[c][g]);
        if !seen {
            if let Some(c) = (0..nonempty.len()).find(|&c| nonempty[c][g]) {
                kept.push(c);
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_largest_new_cover_first_until_each_pair_is_told_apart_twice() {
        let kills = vec![
            vec![true, true, false, false, false],
            vec![false, true, true, true, false],
            vec![false, false, false, true, false],
            vec![true, false, false, false, false],
        ];
        // Pair 4 is killed by nothing; pair 0 by the original already.
        let covered = [true, false, false, false, false];
        let all_rows = vec![vec![true]; 4];
        // 1 first (pairs 1-3), then 0 (pairs 0-1 each a second time), then 2 (pair 3).
        assert_eq!(greedy(&kills, &covered, 10, &all_rows, &[true]), [1, 0, 2]);
        let covered = [false; 5];
        assert_eq!(
            greedy(&kills, &covered, 10, &all_rows, &[true]),
            [1, 0, 2, 3]
        );
        assert_eq!(greedy(&kills, &covered, 1, &all_rows, &[true]), [1]);
        // Pair 2 has only one database to tell it apart: that one is enough.
        assert_eq!(greedy(&kills[1..2], &covered, 10, &all_rows, &[true]), [0]);
    }

    #[test]
    fn a_gold_empty_on_every_kept_database_gets_one_where_it_returns_rows() {
        let kills = vec![vec![true], vec![false], vec![false]];
        let nonempty = vec![vec![false, true], vec![false, false], vec![true, true]];
        assert_eq!(
            greedy(&kills, &[false], 5, &nonempty, &[false, false]),
            [0, 2]
        );
        assert_eq!(greedy(&kills, &[false], 5, &nonempty, &[true, false]), [0]);
        let never = vec![vec![false]; 3];
        assert_eq!(greedy(&kills, &[false], 5, &never, &[false]), [0]);
    }
}
