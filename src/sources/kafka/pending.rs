//! Records read from Kafka and not handed to the sinks yet, per partition.
//!
//! The read loop fills them and hands each partition's records over as a
//! batch; the rebalance callback empties a revoked partition's before its
//! offsets are committed, so no record of it is handed over (or tracked)
//! once it belongs to another member, which reads them again.

use std::collections::HashMap;

use super::offsets::PartitionId;

/// Records of one partition waiting to be handed to the sinks.
pub struct Pending {
    /// The records, encoded one after another.
    pub entries: Vec<u8>,
    /// Records in `entries` (undecodable messages are not among them).
    pub count: usize,
    /// Offset of the first message read into this batch.
    pub first: i64,
    /// The offset after the last message read into it.
    pub next: i64,
}

/// Every partition's [`Pending`] records.
#[derive(Default)]
pub struct PendingRecords {
    partitions: HashMap<PartitionId, Pending>,
}

impl PendingRecords {
    /// The records of `partition` waiting, started at `offset` if none are.
    pub fn at(&mut self, partition: &PartitionId, offset: i64) -> &mut Pending {
        if !self.partitions.contains_key(partition) {
            self.partitions.insert(
                partition.clone(),
                Pending {
                    entries: Vec::new(),
                    count: 0,
                    first: offset,
                    next: offset,
                },
            );
        }
        self.partitions
            .get_mut(partition)
            .expect("inserted just above")
    }

    /// Takes the records of `partition`, to hand them over.
    pub fn take(&mut self, partition: &PartitionId) -> Option<(PartitionId, Pending)> {
        self.partitions.remove_entry(partition)
    }

    /// Takes every partition's records, to hand them over.
    pub fn take_all(&mut self) -> Vec<(PartitionId, Pending)> {
        self.partitions.drain().collect()
    }

    /// Drops the records of `revoked` partitions; returns how many.
    pub fn drop_partitions(&mut self, revoked: &[PartitionId]) -> usize {
        revoked
            .iter()
            .filter_map(|id| self.partitions.remove(id))
            .map(|p| p.count)
            .sum()
    }

    /// Drops every partition's records; returns how many.
    pub fn clear(&mut self) -> usize {
        self.partitions.drain().map(|(_, p)| p.count).sum()
    }
}
