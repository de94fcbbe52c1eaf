//! The objects being built: one per key group (tag and time), each the
//! encoded records of whole batches and the deliveries of those batches,
//! held until the object is stored.
//!
//! An object is closed when its encoded records reach `max_object_bytes`,
//! when it is `max_object_age` old, or (every one) when the batches held
//! reach half of what the sink's memory queue lets it hold unsettled, so
//! the senders never block on records waiting for an object to fill.
//!
//! A batch whose client waits for its acknowledgement (an HTTP or OTLP
//! request, a forward chunk that asks for an ack) makes its object due at
//! once: the client is answered once the object is stored, never
//! `max_object_age` later, when it would have given up (its
//! `request_timeout`) and sent the records again. The batches already
//! queued behind it go into the same object first, so under load the
//! objects still gather many requests.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use super::key::{object_key, KeyTemplate};
use crate::buffer::Delivery;
use crate::memory::MemoryCharge;
use crate::sinks::http::encode::Encoder;

/// An object being built.
pub struct OpenObject {
    /// Its key.
    pub key: String,
    /// When it must be closed at the latest.
    pub due: Instant,
    /// The encoded records, uncompressed.
    pub body: Vec<u8>,
    /// The batches in it, settled once it is stored.
    pub deliveries: Vec<Delivery>,
    /// Records in it.
    pub records: usize,
    /// The body counts in the memory budget: it is a copy of the records.
    charges: Vec<MemoryCharge>,
}

/// The open objects of a sink and when they roll.
pub struct Objects {
    template: KeyTemplate,
    /// By group key, in the order opened.
    open: Vec<(String, OpenObject)>,
    max_bytes: usize,
    max_age: Duration,
    /// Closes every object when the batches held reach this.
    max_held: usize,
    /// Bytes (as received) of the batches held.
    held: usize,
}

/// A batch whose records could not be read (rejected alone).
pub struct Unreadable {
    pub delivery: Delivery,
    pub error: String,
}

impl Objects {
    /// `held_limit`: the queue's limit on unsettled batches, if any.
    pub fn new(
        template: KeyTemplate,
        max_bytes: usize,
        max_age: Duration,
        held_limit: Option<usize>,
    ) -> Objects {
        Objects {
            template,
            open: Vec::new(),
            max_bytes,
            max_age,
            max_held: held_limit.map_or(usize::MAX, |l| (l / 2).max(1)),
            held: 0,
        }
    }

    /// `held_limit`: the queue's limit on unsettled batches, if any.
    pub fn set_held_limit(&mut self, held_limit: Option<usize>) {
        self.max_held = held_limit.map_or(usize::MAX, |l| (l / 2).max(1));
    }

    /// Adds `d` to its object; returns the objects to store now.
    pub fn add(
        &mut self,
        d: Delivery,
        enc: &mut Encoder,
        at: DateTime<Utc>,
    ) -> Result<Vec<OpenObject>, Box<Unreadable>> {
        let group = self.template.group(&d.batch().tag, &at);
        let i = match self.open.iter().position(|(g, _)| *g == group) {
            Some(i) => i,
            None => {
                let object = OpenObject {
                    key: object_key(&group, &at),
                    due: Instant::now() + self.max_age,
                    body: Vec::new(),
                    deliveries: Vec::new(),
                    records: 0,
                    charges: Vec::new(),
                };
                self.open.push((group, object));
                self.open.len() - 1
            }
        };
        let o = &mut self.open[i].1;
        let mark = o.body.len();
        if let Err(e) = enc.batch(d.batch(), &mut o.body, mark == 0) {
            o.body.truncate(mark);
            if o.deliveries.is_empty() {
                self.open.remove(i);
            }
            return Err(Box::new(Unreadable {
                delivery: d,
                error: e.to_string(),
            }));
        }
        o.charges
            .push(d.batch().memory.charge_apart(o.body.len() - mark));
        o.records += d.batch().count;
        if d.batch().is_waited_on() {
            o.due = o.due.min(Instant::now());
        }
        self.held += d.batch().byte_len();
        o.deliveries.push(d);
        let mut ready = Vec::new();
        if o.body.len() >= self.max_bytes {
            ready.push(self.close(i));
        }
        if self.held >= self.max_held {
            ready.extend(self.take_all());
        }
        Ok(ready)
    }

    fn close(&mut self, i: usize) -> OpenObject {
        let (_, o) = self.open.remove(i);
        self.held -= o
            .deliveries
            .iter()
            .map(|d| d.batch().byte_len())
            .sum::<usize>();
        o
    }

    /// When the oldest object is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.open.iter().map(|(_, o)| o.due).min()
    }

    /// The objects due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Vec<OpenObject> {
        let mut due = Vec::new();
        while let Some(i) = self.open.iter().position(|(_, o)| o.due <= now) {
            due.push(self.close(i));
        }
        due
    }

    /// Every open object.
    pub fn take_all(&mut self) -> Vec<OpenObject> {
        self.held = 0;
        self.open.drain(..).map(|(_, o)| o).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, EventTime, Records};
    use bytes::Bytes;

    fn delivery(tag: &str, from: usize, n: usize) -> Delivery {
        let mut data = Vec::new();
        for i in from..from + n {
            data.extend_from_slice(format!("line {i:06}\n").as_bytes());
        }
        Delivery::standalone(Batch::new(
            tag.into(),
            Records::Lines {
                data: Bytes::from(data),
                time: EventTime::new(1, 0),
            },
            n,
        ))
    }

    fn encoder() -> Encoder {
        let c: super::super::config::S3SinkConfig =
            toml::from_str("bucket = \"b\"\nencoding = \"text\"").unwrap();
        Encoder::new(&c.encoding()).unwrap()
    }

    fn objects(max_bytes: usize, held_limit: Option<usize>) -> Objects {
        Objects::new(
            KeyTemplate::parse("${tag}/{unique}").unwrap(),
            max_bytes,
            Duration::from_secs(60),
            held_limit,
        )
    }

    /// Every record of `objects`, as numbers, in order.
    fn numbers(objects: &[OpenObject]) -> Vec<usize> {
        objects
            .iter()
            .flat_map(|o| std::str::from_utf8(&o.body).unwrap().lines())
            .map(|l| l["line ".len()..].parse().unwrap())
            .collect()
    }

    #[test]
    fn objects_roll_by_size_and_hold_whole_batches() {
        let mut objs = objects(1000, None);
        let mut enc = encoder();
        let mut stored = Vec::new();
        // 12-byte lines, 10 a batch: an object closes after 9 batches
        for b in 0..100 {
            stored.extend(
                objs.add(delivery("t", b * 10, 10), &mut enc, Utc::now())
                    .ok()
                    .unwrap(),
            );
        }
        assert_eq!(stored.len(), 11);
        assert!(stored
            .iter()
            .all(|o| o.records == 90 && o.deliveries.len() == 9));
        stored.extend(objs.take_all());
        assert!(objs.is_empty());
        assert_eq!(numbers(&stored), (0..1000).collect::<Vec<_>>());
        let keys: std::collections::HashSet<_> = stored.iter().map(|o| &o.key).collect();
        assert_eq!(keys.len(), stored.len(), "every object has its own key");
    }

    #[test]
    fn tags_have_their_own_objects_and_age_closes_them() {
        let mut objs = objects(1 << 20, None);
        let mut enc = encoder();
        assert!(objs
            .add(delivery("a", 0, 1), &mut enc, Utc::now())
            .ok()
            .unwrap()
            .is_empty());
        assert!(objs
            .add(delivery("b", 1, 1), &mut enc, Utc::now())
            .ok()
            .unwrap()
            .is_empty());
        assert!(objs.take_due(Instant::now()).is_empty());
        let first_due = objs.next_due().unwrap();
        assert_eq!(objs.take_due(first_due).len(), 1);
        let closed = objs.take_due(first_due + Duration::from_secs(1));
        assert_eq!(closed.len(), 1);
        assert!(closed[0].key.starts_with("b/"));
        assert!(objs.next_due().is_none());
        // both again, due together
        objs.add(delivery("a", 2, 1), &mut enc, Utc::now())
            .ok()
            .unwrap();
        objs.add(delivery("b", 3, 1), &mut enc, Utc::now())
            .ok()
            .unwrap();
        let closed = objs.take_due(Instant::now() + Duration::from_secs(61));
        assert_eq!(closed.len(), 2);
        assert!(closed[0].key.starts_with("a/") && closed[1].key.starts_with("b/"));
        assert!(objs.next_due().is_none());
    }

    #[test]
    fn a_full_queue_closes_every_object() {
        // the queue lets the sink hold 2,400 bytes: at 1,200 all go
        let mut objs = objects(1 << 20, Some(2400));
        let mut enc = encoder();
        let mut stored = Vec::new();
        for b in 0..30 {
            let tag = if b % 2 == 0 { "a" } else { "b" };
            stored.extend(
                objs.add(delivery(tag, b * 10, 10), &mut enc, Utc::now())
                    .ok()
                    .unwrap(),
            );
        }
        // 120 bytes a batch: every 10 batches, both objects close
        assert_eq!(stored.len(), 6);
        assert!(objs.is_empty());
        let mut n = numbers(&stored);
        n.sort_unstable();
        assert_eq!(n, (0..300).collect::<Vec<_>>());
    }
}
