//! `type = "kubernetes"`: every container's log on this node, each record
//! with its pod's metadata from the API server.
//!
//! - `config.rs`: settings;
//! - `path.rs`: what a log's path in the kubelet's layout tells;
//! - `records.rs`: a CRI or docker json-file line as a record;
//! - `select.rs`: label selectors;
//! - this file: the tail reader on `pods_root`, shaped per container.
//!
//! The files are read by the tail source's reader (discovery by inotify,
//! the kubelet's rotation by rename, checkpoints, acknowledgements), with
//! a [`Shape`] that picks each file's partial-line rules (CRI or docker,
//! from its first line, then a stack trace's rule set if asked for), tags
//! it by namespace, pod and container, and writes each joined line with
//! the pod's `kubernetes` map.
//!
//! Metadata comes from one list + watch of the node's pods (and of
//! namespaces) in [`crate::kube`]; a record never waits on a request. The
//! map of a file is encoded once and again only when some pod or
//! namespace changed (the cache's generation moved). A file whose pod the
//! cache does not know waits for it once, at most `metadata_wait` (only
//! while the cache is in step with the API server: one that is down
//! delays nothing), and goes on with what its path tells. The file waits
//! unread ([`Shape::hold`]), looked at again every `poll_interval`; the
//! reader goes on with every other file meanwhile.

mod config;
mod path;
mod records;
mod select;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use config::KubernetesSourceConfig;
pub use select::Selector;

use crate::component::SourceContext;
use crate::format::multiline::{Counters, Joined, MultilineConfig, Preset, Presets};
use crate::kube::fields;
use crate::kube::{Metadata, Namespace, Pod, WatchOptions};
use crate::metrics::Counter;
use crate::sources::tail::{Multiline, Shape, TailSource};
use path::LogPath;

/// The label or annotation that leaves a pod's (or a namespace's) logs out.
pub const EXCLUDE: &str = "logferry.io/exclude";

/// The annotation that chooses a pod's stack-trace rules
/// (`logferry.io/multiline.<container>` for one container).
pub const MULTILINE: &str = "logferry.io/multiline";

/// The annotation a static pod's mirror carries: the uid its logs are
/// filed under.
const MIRROR: &str = "kubernetes.io/config.mirror";

/// How often the wait for the first list looks at the cache.
const SYNC_LOOK: Duration = Duration::from_millis(20);

/// How soon a log waiting for its pod is looked at again (the reader
/// looks at its next poll after it: `poll_interval`, 250 ms).
const HOLD_LOOK: Duration = Duration::from_millis(50);

pub struct KubernetesSource {
    tail: TailSource,
    metadata: Metadata,
    wait: Duration,
    name: Arc<str>,
}

impl KubernetesSource {
    /// Starts the metadata watch (on the calling runtime) and prepares the
    /// reader; nothing waits for the API server here.
    pub fn new(config: KubernetesSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let node = config.node()?;
        let metadata = Metadata::start(
            &config.api(),
            WatchOptions {
                node_name: Some(node),
                // a namespace's logferry.io/exclude applies whatever else
                // is configured
                namespaces: true,
                delete_grace: config.delete_grace,
            },
            &cx.metrics,
            &cx.name,
            cx.shutdown.clone(),
            &tokio::runtime::Handle::current(),
        )?;
        let containers = Containers::new(&config, metadata.clone(), &cx);
        let wait = config.metadata_wait;
        let name = cx.name.clone();
        let tail = TailSource::with_shape(config.tail(), cx, Box::new(containers))?;
        Ok(KubernetesSource {
            tail,
            metadata,
            wait,
            name,
        })
    }

    /// Runs the reader once the first list is in (or `metadata_wait`
    /// passed): the node's existing logs then start with their metadata.
    pub async fn run(self) {
        let deadline = Instant::now() + self.wait;
        while !self.metadata.synced() && Instant::now() < deadline {
            tokio::time::sleep(SYNC_LOOK).await;
        }
        if !self.metadata.synced() {
            tracing::warn!(source = %self.name, wait = ?self.wait,
                "the API server has not listed this node's pods yet; reading logs meanwhile with the metadata their paths give");
        }
        self.tail.run().await
    }
}

/// What is known of one container log.
struct FileMeta {
    place: LogPath,
    tag: String,
    /// The cache generation `kubernetes` and `excluded` were made at.
    generation: Option<u64>,
    /// The `kubernetes` map, encoded.
    kubernetes: Vec<u8>,
    /// Whether the pod was known then.
    known: bool,
    excluded: bool,
    /// It waited for its pod already (once is enough).
    waited: bool,
    /// While it waits for its pod: until when.
    waiting_until: Option<Instant>,
}

/// The [`Shape`] of container logs.
struct Containers {
    metadata: Metadata,
    message_key: String,
    tag: String,
    options: fields::FieldOptions,
    pod_selector: Selector,
    namespace_selector: Selector,
    wait: Duration,
    default_multiline: Option<Preset>,
    files: HashMap<PathBuf, FileMeta>,
    /// Compiled rules by (runtime, stack trace) rule set.
    rules: HashMap<(Preset, Option<Preset>), Arc<Multiline>>,
    counters: Counters,
    metrics: Metrics,
    name: Arc<str>,
    warned: crate::telemetry::RateLimitedLog,
}

struct Metrics {
    without_metadata: Counter,
    excluded: Counter,
    unparsed: Counter,
}

impl Containers {
    fn new(config: &KubernetesSourceConfig, metadata: Metadata, cx: &SourceContext) -> Self {
        let c = |name, help| cx.metrics.counter(name, help, &[("component", &cx.name)]);
        Containers {
            metadata,
            message_key: config.message_key.clone(),
            tag: config.tag.clone(),
            options: config.fields(),
            pod_selector: config.pod_selector.clone(),
            namespace_selector: config.namespace_selector.clone(),
            wait: config.metadata_wait,
            default_multiline: config.multiline,
            files: HashMap::new(),
            rules: HashMap::new(),
            counters: Counters::new(&cx.metrics, &cx.name),
            metrics: Metrics {
                without_metadata: c(
                    "logferry_kubernetes_records_without_metadata_total",
                    "Records sent with only what their log's path tells: their pod was not known in time (metadata_wait).",
                ),
                excluded: c(
                    "logferry_kubernetes_excluded_records_total",
                    "Records left out: their pod or namespace is excluded (logferry.io/exclude, pod_selector, namespace_selector).",
                ),
                unparsed: c(
                    "logferry_kubernetes_unparsed_lines_total",
                    "Lines in neither the CRI nor the docker json-file format, sent whole.",
                ),
            },
            name: cx.name.clone(),
            warned: Default::default(),
        }
    }

    /// The pod whose logs are at `place`: by uid, or a static pod's
    /// mirror by name.
    fn find_pod(&self, place: &LogPath) -> Option<Arc<Pod>> {
        self.metadata.pod(&place.uid).or_else(|| {
            self.metadata
                .pod_named(&place.namespace, &place.pod)
                .filter(|p| p.annotations.get(MIRROR) == Some(&place.uid))
        })
    }

    /// What is known of `path` now (`None`: not a container log).
    fn file(&mut self, path: &Path) -> Option<&mut FileMeta> {
        if !self.files.contains_key(path) {
            let place = LogPath::parse(path)?;
            let tag = self
                .tag
                .replace("{namespace}", &place.namespace)
                .replace("{pod}", &place.pod)
                .replace("{container}", &place.container);
            self.files.insert(
                path.to_path_buf(),
                FileMeta {
                    place,
                    tag,
                    generation: None,
                    kubernetes: Vec::new(),
                    known: false,
                    excluded: false,
                    waited: false,
                    waiting_until: None,
                },
            );
        }
        let generation = self.metadata.generation();
        let f = self.files.get(path)?;
        if f.generation != Some(generation) {
            self.refresh(path, generation);
        }
        self.files.get_mut(path)
    }

    fn refresh(&mut self, path: &Path, generation: u64) {
        let Some(f) = self.files.get(path) else {
            return;
        };
        let place = f.place.clone();
        let pod = self.find_pod(&place);
        let namespace = self.metadata.namespace(&place.namespace);
        let mut kubernetes = Vec::with_capacity(512);
        let excluded = match &pod {
            Some(p) => {
                fields::encode(
                    &mut kubernetes,
                    p,
                    namespace.as_deref(),
                    &place.container,
                    &self.options,
                );
                self.excluded(p, namespace.as_deref())
            }
            None => {
                fields::encode_from_path(
                    &mut kubernetes,
                    &place.namespace,
                    &place.pod,
                    &place.uid,
                    &place.container,
                );
                namespace.as_deref().is_some_and(|ns| {
                    flagged(&ns.labels)
                        || flagged(&ns.annotations)
                        || !self.namespace_selector.matches(&ns.labels)
                })
            }
        };
        if let Some(f) = self.files.get_mut(path) {
            f.generation = Some(generation);
            f.known = pod.is_some();
            f.kubernetes = kubernetes;
            f.excluded = excluded;
        }
    }

    fn excluded(&self, pod: &Pod, namespace: Option<&Namespace>) -> bool {
        flagged(&pod.labels)
            || flagged(&pod.annotations)
            || !self.pod_selector.matches(&pod.labels)
            || namespace.is_some_and(|ns| {
                flagged(&ns.labels)
                    || flagged(&ns.annotations)
                    || !self.namespace_selector.matches(&ns.labels)
            })
    }

    /// The stack-trace rules of `place`'s container: its pod's annotation,
    /// else the source's `multiline`.
    fn trace_rules(&mut self, place: &LogPath) -> Option<Preset> {
        let pod = self.find_pod(place);
        let chosen = pod.as_ref().and_then(|p| {
            p.annotations
                .get(&format!("{MULTILINE}.{}", place.container))
                .or_else(|| p.annotations.get(MULTILINE))
        });
        let Some(name) = chosen else {
            return self.default_multiline;
        };
        match trace_preset(name) {
            Some(p) => Some(p),
            None => {
                if self.warned.allow("multiline").is_some() {
                    tracing::warn!(source = %self.name, pod = %place.pod, namespace = %place.namespace, value = %name,
                        "{MULTILINE}: not one of java, python, go, ruby; the source's multiline setting applies");
                }
                self.default_multiline
            }
        }
    }
}

/// `logferry.io/exclude: "true"`.
fn flagged(map: &std::collections::BTreeMap<String, String>) -> bool {
    map.get(EXCLUDE).is_some_and(|v| v == "true")
}

fn trace_preset(name: &str) -> Option<Preset> {
    match name.trim() {
        "java" => Some(Preset::Java),
        "python" => Some(Preset::Python),
        "go" => Some(Preset::Go),
        "ruby" => Some(Preset::Ruby),
        _ => None,
    }
}

impl Shape for Containers {
    /// A log whose pod the cache does not know waits for it, once, at most
    /// `metadata_wait`: a pod just started, whose event is usually a
    /// moment away. Only while the cache is in step with the API server
    /// (one that is down delays nothing).
    fn hold(&mut self, path: &Path) -> Option<Instant> {
        let wait = self.wait;
        let synced = self.metadata.synced();
        let f = self.file(path)?;
        if f.known || f.waited || !synced {
            f.waiting_until = None;
            return None;
        }
        let now = Instant::now();
        let until = *f.waiting_until.get_or_insert(now + wait);
        if now >= until {
            f.waited = true;
            f.waiting_until = None;
            return None;
        }
        // looked at again soon: the reader does at its next poll
        Some(until.min(now + HOLD_LOOK))
    }

    fn tag(&mut self, path: &Path) -> String {
        match self.files.get(path) {
            Some(f) => f.tag.clone(),
            None => LogPath::parse(path)
                .map(|p| {
                    self.tag
                        .replace("{namespace}", &p.namespace)
                        .replace("{pod}", &p.pod)
                        .replace("{container}", &p.container)
                })
                .unwrap_or_else(|| "kubernetes".into()),
        }
    }

    fn multiline(&mut self, path: &Path, first: &[u8]) -> Option<Arc<Multiline>> {
        let runtime = if first.first() == Some(&b'{') {
            Preset::Docker
        } else {
            Preset::Cri
        };
        // the pod (waited for once) decides the trace rules
        let place = self.file(path).map(|f| f.place.clone());
        let trace = place.and_then(|p| self.trace_rules(&p));
        if let Some(m) = self.rules.get(&(runtime, trace)) {
            return Some(Arc::clone(m));
        }
        let mut chain = vec![runtime];
        chain.extend(trace);
        let config = MultilineConfig {
            parser: Some(Presets(chain)),
            ..MultilineConfig::preset(runtime)
        };
        let (rules, limits) = config
            .compile()
            .expect("a runtime's rule set, with or without a trace's, always compiles");
        let m = Arc::new(Multiline {
            rules,
            limits,
            counters: self.counters.clone(),
        });
        self.rules.insert((runtime, trace), Arc::clone(&m));
        Some(m)
    }

    fn write(&mut self, path: &Path, joined: &[Joined], out: &mut Vec<u8>) -> usize {
        let key = self.message_key.clone();
        let Some(f) = self.file(path) else {
            // not in the layout (a stray file under pods_root): lines alone
            for j in joined {
                records::write_unparsed(out, &j.message, &key, &[]);
            }
            return joined.len();
        };
        if f.excluded {
            self.metrics.excluded.add(joined.len() as u64);
            return 0;
        }
        let known = f.known;
        let kubernetes = std::mem::take(&mut f.kubernetes);
        let mut unparsed = 0u64;
        for j in joined {
            match records::parse(&j.message) {
                Some(line) => records::write_entry(out, &line, &key, &kubernetes),
                None => {
                    unparsed += 1;
                    records::write_unparsed(out, &j.message, &key, &kubernetes)
                }
            }
        }
        if let Some(f) = self.files.get_mut(path) {
            f.kubernetes = kubernetes;
        }
        self.metrics.unparsed.add(unparsed);
        if !known {
            self.metrics.without_metadata.add(joined.len() as u64);
        }
        joined.len()
    }

    fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }
}
