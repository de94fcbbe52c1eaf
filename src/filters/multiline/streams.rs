//! The streams a filter holds, and which of them waited longest for a
//! line: the one `max_streams` sends on when a new stream comes.

use std::collections::{BTreeMap, HashMap};

use super::held::Stream;

/// Streams by id (tag and `stream_key` values), with the order in which
/// they were last given a line.
#[derive(Default)]
pub(super) struct Streams {
    /// The streams.
    map: HashMap<Vec<u8>, (u64, Stream)>,
    /// Stream ids by when they were last given a line (a counter, not a
    /// clock: two lines of one batch are told apart), oldest first.
    by_last_line: BTreeMap<u64, Vec<u8>>,
    /// The next value of that counter.
    clock: u64,
}

impl Streams {
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(super) fn contains(&self, id: &[u8]) -> bool {
        self.map.contains_key(id)
    }

    /// Stream `id`, made by `make` if there is none, marked as the one
    /// given a line last.
    pub(super) fn touch(&mut self, id: &[u8], make: impl FnOnce() -> Stream) -> &mut Stream {
        let now = self.clock;
        self.clock += 1;
        self.by_last_line.insert(now, id.to_vec());
        let entry = self.map.entry(id.to_vec()).or_insert_with(|| (now, make()));
        if entry.0 != now {
            self.by_last_line.remove(&entry.0);
            entry.0 = now;
        }
        &mut entry.1
    }

    pub(super) fn get_mut(&mut self, id: &[u8]) -> Option<&mut Stream> {
        self.map.get_mut(id).map(|(_, s)| s)
    }

    pub(super) fn remove(&mut self, id: &[u8]) -> Option<Stream> {
        let (at, stream) = self.map.remove(id)?;
        self.by_last_line.remove(&at);
        Some(stream)
    }

    /// Takes out the stream that was given a line longest ago, with its id.
    pub(super) fn remove_oldest(&mut self) -> Option<(Vec<u8>, Stream)> {
        let (_, id) = self.by_last_line.pop_first()?;
        let (_, stream) = self.map.remove(&id)?;
        Some((id, stream))
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Stream> {
        self.map.values().map(|(_, s)| s)
    }

    /// Calls `f` on each stream, the one given a line longest ago first:
    /// what a flush sends comes out in the order its lines came, not in
    /// the map's (random) order.
    pub(super) fn each_oldest_first(&mut self, mut f: impl FnMut(&[u8], &mut Stream)) {
        for id in self.by_last_line.values() {
            if let Some((_, s)) = self.map.get_mut(id) {
                f(id, s);
            }
        }
    }
}
