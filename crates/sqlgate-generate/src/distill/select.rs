//! The greedy choice of databases: one by one, the candidate that tells apart the most
//! (gold, neighbour) pairs nothing kept so far tells apart; then, for every gold that returns
//! no row on any kept database, the candidate where it does (so a gold that returns rows
//! somewhere is never checked on empty results alone).

/// Which candidates to keep: `kills[c][p]` says candidate `c` kills pair `p`; pairs in
/// `covered` are already killed (by the original). At most `budget` by kill count, then the
/// ones `nonempty` (`nonempty[c][g]`: gold `g` returns rows on candidate `c`) asks for beside
/// `nonempty_already` (gold `g` returns rows on the original). Ties go to the lower index.
pub fn greedy(
    kills: &[Vec<bool>],
    covered: &[bool],
    budget: usize,
    nonempty: &[Vec<bool>],
    nonempty_already: &[bool],
) -> Vec<usize> {
    let mut covered = covered.to_vec();
    let mut kept = Vec::new();
    while kept.len() < budget {
        let gain = |c: usize| {
            kills[c]
                .iter()
                .zip(&covered)
                .filter(|(kill, done)| **kill && !**done)
                .count()
        };
        let best = (0..kills.len())
            .filter(|c| !kept.contains(c))
            .map(|c| (gain(c), c))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        match best {
            Some((gain, c)) if gain > 0 => {
                for (done, kill) in covered.iter_mut().zip(&kills[c]) {
                    *done |= *kill;
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
    fn greedy_takes_the_largest_new_cover_first_and_stops_when_nothing_is_new() {
        let kills = vec![
            vec![true, true, false, false, false],
            vec![false, true, true, true, false],
            vec![false, false, false, true, false],
            vec![true, false, false, false, false],
        ];
        // Pair 4 is killed by nothing; pair 0 by the original already.
        let covered = [true, false, false, false, false];
        let all_rows = vec![vec![true]; 4];
        assert_eq!(greedy(&kills, &covered, 10, &all_rows, &[true]), [1]);
        let covered = [false; 5];
        assert_eq!(greedy(&kills, &covered, 10, &all_rows, &[true]), [1, 0]);
        assert_eq!(greedy(&kills, &covered, 1, &all_rows, &[true]), [1]);
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
