//! `type = "kubernetes"` as a filter: records that arrive from elsewhere
//! (a Fluent Bit agent tailing `/var/log/containers`, forwarding with tags
//! `kube.var.log.containers.<pod>_<namespace>_<container>-<id>.log`) get
//! the `kubernetes` map the kubernetes source attaches, with Fluent Bit's
//! field names, and Fluent Bit's `merge_log`.
//!
//! ```toml
//! [filters.k8s]
//! type = "kubernetes"
//! match = "kube.**"
//! merge_log = true
//! ```
//!
//! - `config.rs`: settings;
//! - `tag.rs`: what a tag tells (pod, namespace, container, container id);
//! - `merge.rs`: `merge_log`;
//! - `wait.rs`: the batches of a pod not known yet, held for it;
//! - this file: the filter, and its `kubernetes` maps.
//!
//! Metadata comes from one list + watch of every pod (and namespace) in
//! [`crate::kube`], started with the filter and stopped when it goes; a
//! record never costs a request, and no thread waits: the batches of a
//! container whose pod the cache does not know are held (at most
//! `metadata_wait`, once per container), then go on with what their tag
//! tells (`pod_name`, `namespace_name`, `container_name`, `docker_id`),
//! counted. A tag's map is encoded once and again only when some pod or
//! namespace changed (the cache's generation moved), so a batch costs
//! one look-up.

mod config;
mod merge;
mod tag;
mod wait;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use config::KubernetesFilterConfig;
pub use merge::MergeLog;
pub use tag::TagPlace;

use super::field::{map_fields, write_map, Field};
use super::records::rewrite;
use crate::component::ShutdownTrigger;
use crate::event::{map_field_raw, Batch, Tag};
use crate::kube::fields::{self, FieldOptions};
use crate::kube::{Metadata, WatchOptions};
use crate::metrics::{Counter, Registry};
use crate::protocol::msgpack::{write, Reader, Value};
use crate::router::{Filter, TagPattern};
use wait::Waiting;

/// The record key of the pod's metadata.
const KUBERNETES: &[u8] = b"kubernetes";

/// Most `kubernetes` maps kept at once, per kind of key. Tags come from
/// outside: past this many, the maps are dropped and made again as
/// records ask for them.
const MAX_MAPS: usize = 16_384;

/// A container's `kubernetes` map as of one cache generation.
struct PodMap {
    /// The cache generation it was made at.
    generation: u64,
    /// Whether the cache knew the pod (else: only what its tag tells).
    known: bool,
    /// Whether nothing more is due: the pod is known, and so is its
    /// namespace or the first list of namespaces is in (held batches wait
    /// for this).
    settled: bool,
    /// The map, encoded.
    map: Vec<u8>,
}

/// Where a record's pod is: from its tag, or from its own fields.
#[derive(Clone, Copy)]
struct Place<'a> {
    namespace: &'a str,
    pod: &'a str,
    container: &'a str,
    /// The container's id, when the tag names it.
    container_id: Option<&'a str>,
}

/// A running kubernetes filter.
pub struct KubernetesFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    /// The pods and namespaces the API server told about.
    metadata: Metadata,
    /// Stops the watch when the filter goes (a reload replaced it, or the
    /// pipeline stopped): dropped with it.
    _stop: ShutdownTrigger,
    /// What comes before a container log's name in a tag.
    prefix: String,
    /// Read the pod from a record's `kubernetes` fields when its tag does
    /// not name one.
    use_record_fields: bool,
    /// `merge_log`, when on.
    merge: Option<MergeLog>,
    /// Which parts of the metadata go in the map.
    options: FieldOptions,
    /// The map of each container-log tag seen.
    by_tag: Mutex<Maps>,
    /// The map of each (namespace, pod, container) records named.
    by_record: Mutex<Maps>,
    /// Records that reached the filter.
    records: Counter,
    /// Records sent on with only what their tag (or their fields) tells.
    without_metadata: Counter,
    /// How long a container's batches wait for a pod not known yet (0:
    /// never held).
    wait: Duration,
    /// The batches waiting.
    waiting: Mutex<Waiting>,
    /// A reload replaced the filter: nothing is held any more.
    retired: AtomicBool,
}

impl KubernetesFilter {
    /// Starts the watch (on the calling runtime, which a pipeline's
    /// filters are built on); nothing waits for the API server here.
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &KubernetesFilterConfig,
        metrics: &Registry,
    ) -> Result<KubernetesFilter, String> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            "the kubernetes filter's watch needs the pipeline's runtime".to_string()
        })?;
        let (stop, shutdown) = crate::component::shutdown_channel();
        let metadata = Metadata::start(
            &config.api(),
            WatchOptions {
                // records come from any node
                node_name: None,
                namespaces: config.include_namespace_labels,
                delete_grace: config.delete_grace,
            },
            metrics,
            name,
            shutdown,
            &runtime,
        )?;
        Ok(Self::with_metadata(
            name, pattern, config, metrics, metadata, stop,
        ))
    }

    /// The filter on `metadata`, whose watch `stop` ends.
    fn with_metadata(
        name: &str,
        pattern: TagPattern,
        config: &KubernetesFilterConfig,
        metrics: &Registry,
        metadata: Metadata,
        stop: ShutdownTrigger,
    ) -> KubernetesFilter {
        KubernetesFilter {
            name: name.to_string(),
            pattern,
            metadata,
            _stop: stop,
            prefix: config.kube_tag_prefix.clone(),
            use_record_fields: config.use_record_fields,
            merge: config.merge(),
            options: config.fields(),
            by_tag: Mutex::new(HashMap::new()),
            by_record: Mutex::new(HashMap::new()),
            records: super::records_counter(metrics, name, "kubernetes"),
            without_metadata: metrics.counter(
                "logferry_filter_kubernetes_records_without_metadata_total",
                "Records sent on with only what their tag tells: the API server had not told about their pod.",
                &[("component", name), ("component_type", "kubernetes")],
            ),
            wait: config.metadata_wait,
            waiting: Mutex::new(Waiting::default()),
            retired: AtomicBool::new(false),
        }
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The map of `place`, from `maps` under `key` while the cache has not
    /// changed since it was made.
    fn map_of(&self, maps: &Mutex<Maps>, key: &str, place: Place<'_>) -> Arc<PodMap> {
        // read before the cache is: a change meanwhile makes it again
        let generation = self.metadata.generation();
        let mut maps = maps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = maps.get(key).filter(|m| m.generation == generation) {
            return m.clone();
        }
        let made = Arc::new(self.make(place, generation));
        if maps.len() >= MAX_MAPS {
            maps.clear();
        }
        maps.insert(Arc::from(key), made.clone());
        made
    }

    /// Encodes the `kubernetes` map of `place` from the cache as it is.
    fn make(&self, place: Place<'_>, generation: u64) -> PodMap {
        let pod = self.metadata.pod_named(place.namespace, place.pod);
        let namespace = self.metadata.namespace(place.namespace);
        let mut map = Vec::with_capacity(512);
        match &pod {
            Some(p) => fields::encode(
                &mut map,
                p,
                namespace.as_deref(),
                place.container,
                &self.options,
            ),
            // the tag gives no uid
            None => {
                fields::encode_from_path(&mut map, place.namespace, place.pod, "", place.container)
            }
        }
        // while the first list of namespaces is on its way, a namespace
        // not in yet may still bring labels
        let namespace_due = self.options.namespace_labels
            && namespace.is_none()
            && !self.metadata.namespaces_synced();
        PodMap {
            generation,
            known: pod.is_some(),
            settled: pod.is_some() && !namespace_due,
            map: completed(map, place.container_id),
        }
    }

    /// The map of the container a tag names.
    fn tag_map(&self, tag: &str, place: TagPlace<'_>) -> Arc<PodMap> {
        let place = Place {
            namespace: place.namespace,
            pod: place.pod,
            container: place.container,
            container_id: Some(place.container_id),
        };
        self.map_of(&self.by_tag, tag, place)
    }

    /// The map of the container a record's own `kubernetes` fields name.
    fn record_map(&self, fields: &[Field<'_>]) -> Option<Arc<PodMap>> {
        let (_, own) = fields.iter().find(|(k, _)| k.as_ref() == KUBERNETES)?;
        let text = |key: &[u8]| match Reader::new(map_field_raw(own, key)?).read().ok()? {
            Value::Str(s) => std::str::from_utf8(s).ok().filter(|s| !s.is_empty()),
            _ => None,
        };
        let place = Place {
            namespace: text(b"namespace_name")?,
            pod: text(b"pod_name")?,
            container: text(b"container_name").unwrap_or_default(),
            container_id: None,
        };
        // lengths first: no name can make another's key
        let key = format!(
            "{}:{}:{}{}{}",
            place.namespace.len(),
            place.pod.len(),
            place.namespace,
            place.pod,
            place.container
        );
        Some(self.map_of(&self.by_record, &key, place))
    }

    /// Writes the record `fields` with `kubernetes` (none: the record's
    /// own is kept) and `log` merged; false (nothing written) when nothing
    /// changes.
    fn write(
        &self,
        fields: Vec<Field<'_>>,
        kubernetes: Option<&[u8]>,
        scratch: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> bool {
        let merge = self.merge.as_ref().filter(|m| m.read(&fields, scratch));
        let merged = merge.is_some();
        let mut fields = match merge {
            Some(m) => m.merge(fields, &scratch[..]),
            None => fields,
        };
        if let Some(k) = kubernetes {
            fields.retain(|(key, _)| key.as_ref() != KUBERNETES);
            fields.push((KUBERNETES.into(), k.into()));
        } else if !merged {
            return false;
        }
        write_map(out, &fields);
        true
    }
}

/// Maps by a key made of text: a tag, or a record's names.
type Maps = HashMap<Arc<str>, Arc<PodMap>>;

/// `map` with the container id a tag names as `docker_id`, after
/// `container_name` (Fluent Bit takes it from the tag), when the cache
/// gave none.
fn completed(map: Vec<u8>, container_id: Option<&str>) -> Vec<u8> {
    let Some(text) = container_id.filter(|_| map_field_raw(&map, b"docker_id").is_none()) else {
        return map;
    };
    let mut id = Vec::with_capacity(text.len() + 2);
    write::str(&mut id, text.as_bytes());
    let Some(mut fields) = map_fields(&map) else {
        return map;
    };
    let at = fields
        .iter()
        .position(|(k, _)| k.as_ref() == b"container_name")
        .map_or(fields.len(), |i| i + 1);
    fields.insert(at, (b"docker_id".as_slice().into(), id.as_slice().into()));
    let mut out = Vec::with_capacity(map.len() + id.len() + 10);
    write_map(&mut out, &fields);
    out
}

impl Filter for KubernetesFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        self.records.add(batch.count as u64);
        // a batch has one tag: one map for all its records
        let tagged =
            TagPlace::parse(&batch.tag, &self.prefix).map(|place| self.tag_map(&batch.tag, place));
        match tagged {
            Some(m) if self.holds() && !self.retired.load(Ordering::Acquire) => {
                let generation = self.metadata.generation();
                let go = self
                    .waiting()
                    .admit(batch, m.settled, self.wait, generation);
                out.extend(go.into_iter().map(|b| self.enriched(b, Some(&m))));
            }
            m => out.push(self.enriched(batch, m.as_deref())),
        }
    }

    fn holds(&self) -> bool {
        !self.wait.is_zero()
    }

    fn deadline(&self) -> Option<Instant> {
        self.waiting().deadline(self.metadata.generation())
    }

    fn flush(&self, now: Instant, all: bool, out: &mut Vec<Batch>) {
        let retired = self.retired.load(Ordering::Acquire);
        let generation = self.metadata.generation();
        let mut maps: HashMap<Tag, Arc<PodMap>> = HashMap::new();
        let released = self.waiting().release(now, all, generation, |tag| {
            let Some(place) = TagPlace::parse(tag, &self.prefix) else {
                return false;
            };
            let m = self.tag_map(tag, place);
            let settled = m.settled;
            maps.insert(tag.clone(), m);
            settled
        });
        for (tag, batches) in released {
            if retired {
                // they go through the filters in place now, this one's
                // successor included
                out.extend(batches);
                continue;
            }
            let m = maps.get(&tag);
            out.extend(
                batches
                    .into_iter()
                    .map(|b| self.enriched(b, m.map(|m| &**m))),
            );
        }
    }

    fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }
}

impl KubernetesFilter {
    /// `batch` with its records given `tagged` (the map its tag names) or,
    /// with `use_record_fields`, the map their own fields name, and `log`
    /// merged.
    fn enriched(&self, batch: Batch, tagged: Option<&PodMap>) -> Batch {
        if tagged.is_none() && !self.use_record_fields {
            // not a container log's tag: as Fluent Bit, left untouched
            return batch;
        }
        if tagged.is_some_and(|m| !m.known) {
            self.without_metadata.add(batch.count as u64);
        }
        let mut scratch = Vec::new();
        rewrite(batch, |fields, record| match tagged {
            Some(m) => self.write(fields, Some(&m.map), &mut scratch, record),
            None => {
                let found = self.record_map(&fields);
                let known = found.as_ref().filter(|m| m.known);
                if found.is_some() && known.is_none() {
                    self.without_metadata.inc();
                }
                // a pod the cache does not know keeps the record's own map
                let map = known.map(|m| m.map.as_slice());
                self.write(fields, map, &mut scratch, record)
            }
        })
    }
}

#[cfg(test)]
mod tests;
