//! Which server gets the next chunk.

use std::hash::{Hash, Hasher};

use super::config::{BalanceMode, ServerConfig};

/// Chooses servers for chunks. Only healthy servers are candidates; standby
/// servers only while every primary is down.
///
/// A choice is binding: if the chosen server is busy, the chunk waits for
/// it (the dispatcher asks again and gets the same answer until it
/// [`commit`](Balancer::commit)s), so round-robin shares and weights hold
/// exactly instead of drifting toward whichever server answers fastest.
pub struct Balancer {
    mode: BalanceMode,
    weights: Vec<i64>,
    standby: Vec<bool>,
    addresses: Vec<String>,
    state: Rotation,
    /// The state after the last pick, applied by `commit`.
    proposed: Option<Rotation>,
}

/// Round-robin position and smooth weighted round-robin counters (as in nginx).
#[derive(Clone)]
struct Rotation {
    next: usize,
    current: Vec<i64>,
}

impl Balancer {
    pub fn new(mode: BalanceMode, servers: &[ServerConfig]) -> Self {
        Balancer {
            mode,
            weights: servers.iter().map(|s| i64::from(s.weight.max(1))).collect(),
            standby: servers.iter().map(|s| s.standby).collect(),
            addresses: servers.iter().map(|s| s.address.clone()).collect(),
            state: Rotation {
                next: 0,
                current: vec![0; servers.len()],
            },
            proposed: None,
        }
    }

    /// The server for the next chunk of `tag`, or `None` while no eligible
    /// server is up. `healthy[i]` says whether server i is up.
    pub fn pick(&mut self, tag: &str, healthy: &[bool]) -> Option<usize> {
        let n = healthy.len();
        let primaries_up = (0..n).any(|i| healthy[i] && !self.standby[i]);
        let eligible: Vec<usize> = (0..n)
            .filter(|&i| healthy[i] && self.standby[i] != primaries_up)
            .collect();
        if eligible.is_empty() {
            return None;
        }
        let mut next = self.state.clone();
        let choice = match self.mode {
            BalanceMode::RoundRobin => {
                let c = eligible[next.next % eligible.len()];
                next.next = next.next.wrapping_add(1);
                c
            }
            BalanceMode::Weighted => {
                let total: i64 = eligible.iter().map(|&i| self.weights[i]).sum();
                for &i in &eligible {
                    next.current[i] += self.weights[i];
                }
                let best = *eligible
                    .iter()
                    .max_by_key(|&&i| (next.current[i], std::cmp::Reverse(i)))
                    .expect("non-empty");
                next.current[best] -= total;
                best
            }
            BalanceMode::Failover => eligible[0],
            // rendezvous hashing: the tag's highest-scoring healthy server
            BalanceMode::HashTag => *eligible
                .iter()
                .max_by_key(|&&i| score(tag, &self.addresses[i]))
                .expect("non-empty"),
        };
        self.proposed = Some(next);
        Some(choice)
    }

    /// The last pick was used: advance the rotation.
    pub fn commit(&mut self) {
        if let Some(s) = self.proposed.take() {
            self.state = s;
        }
    }
}

fn score(tag: &str, server: &str) -> u64 {
    // DefaultHasher::new() uses fixed keys: the same in every process
    let mut h = std::collections::hash_map::DefaultHasher::new();
    tag.hash(&mut h);
    server.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(spec: &[(u32, bool)]) -> Vec<ServerConfig> {
        spec.iter()
            .enumerate()
            .map(|(i, (weight, standby))| ServerConfig {
                address: format!("10.0.0.{i}:24224"),
                weight: *weight,
                standby: *standby,
            })
            .collect()
    }

    fn firsts(b: &mut Balancer, healthy: &[bool], n: usize) -> Vec<usize> {
        let mut counts = vec![0; healthy.len()];
        for i in 0..n {
            if let Some(s) = b.pick(&format!("tag{}", i % 7), healthy) {
                b.commit();
                counts[s] += 1;
            }
        }
        counts
    }

    #[test]
    fn round_robin_is_even_and_skips_the_dead() {
        let mut b = Balancer::new(BalanceMode::RoundRobin, &servers(&[(1, false); 3]));
        assert_eq!(
            firsts(&mut b, &[true, true, true], 300),
            vec![100, 100, 100]
        );
        assert_eq!(firsts(&mut b, &[true, false, true], 300), vec![150, 0, 150]);
    }

    #[test]
    fn an_uncommitted_pick_is_repeated() {
        let mut b = Balancer::new(BalanceMode::RoundRobin, &servers(&[(1, false); 3]));
        let all = [true, true, true];
        assert_eq!(b.pick("t", &all), Some(0));
        assert_eq!(
            b.pick("t", &all),
            Some(0),
            "server 0 was busy: ask again, same answer"
        );
        b.commit();
        assert_eq!(b.pick("t", &all), Some(1));
    }

    #[test]
    fn weights_are_respected() {
        let mut b = Balancer::new(BalanceMode::Weighted, &servers(&[(1, false), (3, false)]));
        assert_eq!(firsts(&mut b, &[true, true], 400), vec![100, 300]);
    }

    #[test]
    fn standby_only_when_all_primaries_are_down() {
        let mut b = Balancer::new(
            BalanceMode::Failover,
            &servers(&[(1, false), (1, false), (1, true)]),
        );
        assert_eq!(b.pick("t", &[true, true, true]), Some(0));
        assert_eq!(b.pick("t", &[false, true, true]), Some(1));
        assert_eq!(b.pick("t", &[false, false, true]), Some(2));
        assert_eq!(b.pick("t", &[false, false, false]), None);
        let mut rr = Balancer::new(BalanceMode::RoundRobin, &servers(&[(1, false), (1, true)]));
        assert_eq!(firsts(&mut rr, &[true, true], 10), vec![10, 0]);
    }

    #[test]
    fn hash_tag_sticks_and_moves_only_the_dead_servers_tags() {
        let mut b = Balancer::new(BalanceMode::HashTag, &servers(&[(1, false); 3]));
        let all = [true, true, true];
        let before: Vec<usize> = (0..100)
            .map(|t| b.pick(&format!("t{t}"), &all).unwrap())
            .collect();
        let again: Vec<usize> = (0..100)
            .map(|t| b.pick(&format!("t{t}"), &all).unwrap())
            .collect();
        assert_eq!(before, again);
        assert!(
            (0..3).all(|s| before.contains(&s)),
            "tags spread over every server"
        );
        let after: Vec<usize> = (0..100)
            .map(|t| b.pick(&format!("t{t}"), &[true, false, true]).unwrap())
            .collect();
        for (x, y) in before.iter().zip(&after) {
            if *x != 1 {
                assert_eq!(x, y, "a tag on a healthy server must not move");
            }
        }
    }
}
