//! Which server gets the next chunk.

use std::hash::{Hash, Hasher};

use super::config::{BalanceMode, ServerConfig};

/// Chooses servers for chunks. Only healthy servers are candidates; standby
/// servers only while every primary is down.
pub struct Balancer {
    mode: BalanceMode,
    weights: Vec<i64>,
    standby: Vec<bool>,
    addresses: Vec<String>,
    /// Round-robin position.
    next: usize,
    /// Smooth weighted round robin state (as in nginx).
    current: Vec<i64>,
}

impl Balancer {
    pub fn new(mode: BalanceMode, servers: &[ServerConfig]) -> Self {
        Balancer {
            mode,
            weights: servers.iter().map(|s| i64::from(s.weight.max(1))).collect(),
            standby: servers.iter().map(|s| s.standby).collect(),
            addresses: servers.iter().map(|s| s.address.clone()).collect(),
            next: 0,
            current: vec![0; servers.len()],
        }
    }

    /// Servers to try for a chunk of `tag`, best first. `healthy[i]` says
    /// whether server i is up. Empty if no server can take it now.
    pub fn candidates(&mut self, tag: &str, healthy: &[bool]) -> Vec<usize> {
        let n = healthy.len();
        let primaries_up = (0..n).any(|i| healthy[i] && !self.standby[i]);
        let eligible: Vec<usize> = (0..n)
            .filter(|&i| healthy[i] && self.standby[i] != primaries_up)
            .collect();
        if eligible.is_empty() {
            return eligible;
        }
        match self.mode {
            BalanceMode::RoundRobin => {
                let mut order = eligible;
                let k = self.next % order.len();
                self.next = self.next.wrapping_add(1);
                order.rotate_left(k);
                order
            }
            BalanceMode::Weighted => {
                let total: i64 = eligible.iter().map(|&i| self.weights[i]).sum();
                for &i in &eligible {
                    self.current[i] += self.weights[i];
                }
                let best = *eligible
                    .iter()
                    .max_by_key(|&&i| (self.current[i], std::cmp::Reverse(i)))
                    .expect("non-empty");
                self.current[best] -= total;
                let mut order = vec![best];
                order.extend(eligible.iter().copied().filter(|&i| i != best));
                order
            }
            // stick to the first (or the hashed) server: no spill-over while it is up
            BalanceMode::Failover => vec![eligible[0]],
            BalanceMode::HashTag => {
                // rendezvous hashing: the tag's highest-scoring healthy server
                let best = *eligible
                    .iter()
                    .max_by_key(|&&i| score(tag, &self.addresses[i]))
                    .expect("non-empty");
                vec![best]
            }
        }
    }

    /// True if a chunk may go to any candidate, not only the first.
    pub fn spills_over(&self) -> bool {
        matches!(self.mode, BalanceMode::RoundRobin | BalanceMode::Weighted)
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
            if let Some(&s) = b.candidates(&format!("tag{}", i % 7), healthy).first() {
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
        assert_eq!(b.candidates("t", &[true, true, true]), vec![0]);
        assert_eq!(b.candidates("t", &[false, true, true]), vec![1]);
        assert_eq!(b.candidates("t", &[false, false, true]), vec![2]);
        assert!(b.candidates("t", &[false, false, false]).is_empty());
        let mut rr = Balancer::new(BalanceMode::RoundRobin, &servers(&[(1, false), (1, true)]));
        assert_eq!(firsts(&mut rr, &[true, true], 10), vec![10, 0]);
    }

    #[test]
    fn hash_tag_sticks_and_moves_only_the_dead_servers_tags() {
        let mut b = Balancer::new(BalanceMode::HashTag, &servers(&[(1, false); 3]));
        let all = [true, true, true];
        let before: Vec<usize> = (0..100)
            .map(|t| b.candidates(&format!("t{t}"), &all)[0])
            .collect();
        let again: Vec<usize> = (0..100)
            .map(|t| b.candidates(&format!("t{t}"), &all)[0])
            .collect();
        assert_eq!(before, again);
        assert!(
            (0..3).all(|s| before.contains(&s)),
            "tags spread over every server"
        );
        let after: Vec<usize> = (0..100)
            .map(|t| b.candidates(&format!("t{t}"), &[true, false, true])[0])
            .collect();
        for (x, y) in before.iter().zip(&after) {
            if *x != 1 {
                assert_eq!(x, y, "a tag on a healthy server must not move");
            }
        }
    }
}
