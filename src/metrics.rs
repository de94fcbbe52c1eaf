//! Counters, gauges and histograms, and their exposition.
//!
//! Every component registers its metrics once at start-up and bumps them
//! on the hot path. A [`Counter`] is a `prometheus-client` counter: one
//! relaxed atomic add per increment, the same instructions as the plain
//! `Arc<AtomicU64>` it replaced (measured with a criterion bench of both;
//! see docs/operations.md). The registry renders every metric in the
//! OpenMetrics text format through `prometheus-client` for `/metrics`, and
//! a short form for the summary logged at shutdown.
//!
//! Series carry a `component` label (the name in the configuration);
//! [`Registry::register_component`] records each component's type, and
//! `/metrics` adds it as `component_type`.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// Number of servers a sink with a network downstream is connected to
/// (a gauge each such sink sets); `/ready` reads it, and a sink without
/// this series writes locally and is always ready.
pub const CONNECTED_METRIC: &str = "logferry_sink_connected_servers";

/// A monotonically increasing count.
#[derive(Debug, Clone, Default)]
pub struct Counter(prometheus_client::metrics::counter::Counter<u64, AtomicU64>);

impl Counter {
    /// A counter that belongs to no registry (tests, throwaway components).
    pub fn detached() -> Self {
        Counter::default()
    }

    #[inline]
    pub fn add(&self, n: u64) {
        self.0.inc_by(n);
    }

    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

/// A value that goes up and down (bytes in use, open connections).
#[derive(Debug, Clone, Default)]
pub struct Gauge(prometheus_client::metrics::gauge::Gauge<u64, AtomicU64>);

impl Gauge {
    #[inline]
    pub fn set(&self, v: u64) {
        self.0.set(v);
    }

    #[inline]
    pub fn inc(&self) {
        self.0.inc();
    }

    #[inline]
    pub fn dec(&self) {
        self.0.dec();
    }

    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

/// A distribution of durations in seconds (delivery latency, ack round
/// trip). Observing takes a short lock: use it per batch or per chunk,
/// not per record.
#[derive(Debug, Clone)]
pub struct Histogram(prometheus_client::metrics::histogram::Histogram);

impl Histogram {
    /// Buckets from 1 ms to about 33 s, doubling.
    fn seconds() -> Self {
        Histogram(prometheus_client::metrics::histogram::Histogram::new(
            prometheus_client::metrics::histogram::exponential_buckets(0.001, 2.0, 16),
        ))
    }

    /// A histogram that belongs to no registry.
    pub fn detached() -> Self {
        Histogram::seconds()
    }

    pub fn observe(&self, seconds: f64) {
        self.0.observe(seconds);
    }
}

/// A gauge computed when it is read (a queue's fill ratio, say).
pub type Computed = Arc<dyn Fn() -> f64 + Send + Sync>;

#[derive(Clone)]
enum Value {
    Counter(Counter),
    Gauge(Gauge),
    Histogram(Histogram),
    Computed(Computed),
}

impl Value {
    fn kind(&self) -> MetricType {
        match self {
            Value::Counter(_) => MetricType::Counter,
            Value::Gauge(_) | Value::Computed(_) => MetricType::Gauge,
            Value::Histogram(_) => MetricType::Histogram,
        }
    }

    /// The value as a number, for `value()` and the summary (a histogram
    /// has none).
    fn number(&self) -> Option<f64> {
        match self {
            Value::Counter(c) => Some(c.get() as f64),
            Value::Gauge(g) => Some(g.get() as f64),
            Value::Computed(f) => Some(f()),
            Value::Histogram(_) => None,
        }
    }
}

struct Entry {
    name: &'static str,
    help: &'static str,
    labels: Vec<(&'static str, String)>,
    value: Value,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    /// Component name → its `type` in the configuration.
    component_types: HashMap<String, &'static str>,
}

/// All metrics of one running pipeline.
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Registry")
    }
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the type of component `name` (`forward`, `file`, …), shown
    /// as the `component_type` label of its series.
    pub fn register_component(&self, name: &str, kind: &'static str) {
        self.lock().component_types.insert(name.to_string(), kind);
    }

    /// The type of component `name`, if registered.
    pub fn component_type(&self, name: &str) -> Option<&'static str> {
        self.lock().component_types.get(name).copied()
    }

    /// Registers (or finds) `name{labels}`; `make` builds a new one.
    fn find_or_add(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        make: impl FnOnce() -> Value,
    ) -> Value {
        let mut inner = self.lock();
        if let Some(e) = inner.entries.iter().find(|e| {
            e.name == name
                && e.labels.len() == labels.len()
                && e.labels
                    .iter()
                    .zip(labels)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
        }) {
            return e.value.clone();
        }
        let value = make();
        inner.entries.push(Entry {
            name,
            help,
            labels: labels.iter().map(|(k, v)| (*k, (*v).to_string())).collect(),
            value: value.clone(),
        });
        value
    }

    /// Registers (or finds) the counter `name{labels}`. `name` ends in
    /// `_total`.
    pub fn counter(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Counter {
        match self.find_or_add(name, help, labels, || Value::Counter(Counter::default())) {
            Value::Counter(c) => c,
            // a name registered as another kind: a detached counter keeps
            // the caller working (a programming error, seen in tests)
            _ => Counter::detached(),
        }
    }

    /// Registers (or finds) the gauge `name{labels}`.
    pub fn gauge(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Gauge {
        match self.find_or_add(name, help, labels, || Value::Gauge(Gauge::default())) {
            Value::Gauge(g) => g,
            _ => Gauge::default(),
        }
    }

    /// Registers (or finds) the histogram of seconds `name{labels}`.
    pub fn histogram(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Histogram {
        match self.find_or_add(
            name,
            help,
            labels,
            || Value::Histogram(Histogram::seconds()),
        ) {
            Value::Histogram(h) => h,
            _ => Histogram::detached(),
        }
    }

    /// Registers a gauge whose value `read` computes at each scrape.
    /// Registering `name{labels}` again replaces the function.
    pub fn computed(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        read: impl Fn() -> f64 + Send + Sync + 'static,
    ) {
        let read: Computed = Arc::new(read);
        let mut inner = self.lock();
        inner.entries.retain(|e| {
            !(e.name == name
                && e.labels.len() == labels.len()
                && e.labels
                    .iter()
                    .zip(labels)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1))
        });
        inner.entries.push(Entry {
            name,
            help,
            labels: labels.iter().map(|(k, v)| (*k, (*v).to_string())).collect(),
            value: Value::Computed(read),
        });
    }

    /// The value of `name{labels}` summed over entries whose labels include
    /// all of `labels` (used by tests, `/ready` and the shutdown summary).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.value_f64(name, labels) as u64
    }

    /// [`Registry::value`] as a float (for ratios); `None` if no series
    /// matches.
    pub fn value_if_any(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let values: Vec<f64> = self
            .matching(name, labels)
            .into_iter()
            .filter_map(|v| v.number())
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }

    fn value_f64(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value_if_any(name, labels).unwrap_or(0.0)
    }

    fn matching(&self, name: &str, labels: &[(&str, &str)]) -> Vec<Value> {
        let inner = self.lock();
        inner
            .entries
            .iter()
            .filter(|e| e.name == name)
            .filter(|e| {
                labels
                    .iter()
                    .all(|(k, v)| e.labels.iter().any(|(ek, ev)| ek == k && ev == v))
            })
            .map(|e| e.value.clone())
            .collect()
    }

    /// Every metric in the OpenMetrics text format (what `/metrics` serves),
    /// encoded by `prometheus-client`.
    pub fn render(&self) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(Snapshot(self.clone())));
        let mut out = String::new();
        // writing to a String cannot fail
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }

    /// Non-zero counters and gauges as `name{labels}=value` pairs, for the
    /// log line written at shutdown (without `component_type`, to stay
    /// short). A metric with many series (one per file, say) shows its
    /// largest few and how many more there are, so the line stays short
    /// whatever the number of files.
    pub fn summary(&self) -> String {
        const PER_NAME: usize = 12;
        let mut series: Vec<(&'static str, String, u64)> = {
            let inner = self.lock();
            inner
                .entries
                .iter()
                .filter_map(|e| {
                    let v = e.value.number()? as u64;
                    (v > 0).then(|| (e.name, series_name(e.name, &e.labels), v))
                })
                .collect()
        };
        series.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::new();
        for group in series.chunk_by_mut(|a, b| a.0 == b.0) {
            let name = group[0].0;
            let more = group.len().saturating_sub(PER_NAME);
            if more > 0 {
                group.sort_by_key(|s| std::cmp::Reverse(s.2));
            }
            out.extend(
                group
                    .iter()
                    .take(PER_NAME)
                    .map(|(_, s, v)| format!("{s}={v}")),
            );
            if more > 0 {
                out.push(format!("{name}{{…}}=+{more}_more_series"));
            }
        }
        out.join(" ")
    }
}

/// `name{k="v",…}` with label values escaped as in the text format.
fn series_name(name: &str, labels: &[(&'static str, String)]) -> String {
    let mut s = name.to_string();
    if !labels.is_empty() {
        s.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            s.push_str(&format!("{k}=\"{v}\""));
        }
        s.push('}');
    }
    s
}

/// One series as encoded: name, help, labels (with `component_type`), value.
type Sample = (&'static str, &'static str, Vec<(String, String)>, Value);

/// The registry as a `prometheus-client` collector: one descriptor per
/// metric name, one sample (or histogram) per label set.
#[derive(Debug)]
struct Snapshot(Registry);

impl prometheus_client::collector::Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut entries: Vec<Sample> = {
            let inner = self.0.lock();
            inner
                .entries
                .iter()
                .map(|e| {
                    let labels = with_type(&e.labels, &inner.component_types);
                    (e.name, e.help, labels, e.value.clone())
                })
                .collect()
        };
        entries.sort_by(|a, b| a.0.cmp(b.0));
        for group in entries.chunk_by(|a, b| a.0 == b.0) {
            let (name, help, _, first) = &group[0];
            // the encoder adds `_total` to counters itself
            let base = match first {
                Value::Counter(_) => name.strip_suffix("_total").unwrap_or(name),
                _ => name,
            };
            let mut metric = encoder.encode_descriptor(base, help, None, first.kind())?;
            for (_, _, labels, value) in group {
                let family = metric.encode_family(labels)?;
                match value {
                    Value::Counter(c) => c.0.encode(family)?,
                    Value::Gauge(g) => g.0.encode(family)?,
                    Value::Histogram(h) => h.0.encode(family)?,
                    Value::Computed(f) => ConstGauge::new(f()).encode(family)?,
                }
            }
        }
        Ok(())
    }
}

/// `labels` with `component_type` added after `component`, when known.
fn with_type(
    labels: &[(&'static str, String)],
    types: &HashMap<String, &'static str>,
) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(labels.len() + 1);
    for (k, v) in labels {
        out.push((k.to_string(), v.clone()));
        if *k == "component" {
            if let Some(t) = types.get(v) {
                out.push(("component_type".to_string(), t.to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_and_labels_share_a_counter() {
        let r = Registry::new();
        let a = r.counter("x_total", "x", &[("component", "a")]);
        let a2 = r.counter("x_total", "x", &[("component", "a")]);
        let b = r.counter("x_total", "x", &[("component", "b")]);
        a.add(2);
        a2.inc();
        b.inc();
        assert_eq!(r.value("x_total", &[("component", "a")]), 3);
        assert_eq!(r.value("x_total", &[]), 4);
        let text = r.render();
        assert!(text.contains("# TYPE x counter"), "{text}");
        assert!(text.contains("x_total{component=\"a\"} 3"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert_eq!(
            r.summary(),
            "x_total{component=\"a\"}=3 x_total{component=\"b\"}=1"
        );
    }

    #[test]
    fn series_name_their_component_type() {
        let r = Registry::new();
        r.register_component("in_fwd", "forward");
        r.counter("x_total", "x", &[("component", "in_fwd"), ("kind", "io")])
            .inc();
        r.gauge("y_bytes", "y", &[("component", "in_fwd")]).set(7);
        r.computed("z_ratio", "z", &[("component", "other")], || 0.5);
        let h = r.histogram("w_seconds", "w", &[("component", "in_fwd")]);
        h.observe(0.003);
        let text = r.render();
        assert!(
            text.contains("x_total{component=\"in_fwd\",component_type=\"forward\",kind=\"io\"} 1"),
            "{text}"
        );
        assert!(text.contains("# TYPE y_bytes gauge"), "{text}");
        assert!(
            text.contains("y_bytes{component=\"in_fwd\",component_type=\"forward\"} 7"),
            "{text}"
        );
        assert!(text.contains("z_ratio{component=\"other\"} 0.5"), "{text}");
        assert!(text.contains("# TYPE w_seconds histogram"), "{text}");
        assert!(
            text.contains("w_seconds_count{component=\"in_fwd\",component_type=\"forward\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "w_seconds_bucket{le=\"0.004\",component=\"in_fwd\",component_type=\"forward\"} 1"
            ) || text.contains(
                "w_seconds_bucket{component=\"in_fwd\",component_type=\"forward\",le=\"0.004\"} 1"
            ),
            "{text}"
        );
        // the shutdown summary stays short: no type, no histograms
        assert_eq!(
            r.summary(),
            "x_total{component=\"in_fwd\",kind=\"io\"}=1 y_bytes{component=\"in_fwd\"}=7"
        );
        assert_eq!(
            r.value_if_any("z_ratio", &[("component", "other")]),
            Some(0.5)
        );
        assert_eq!(r.value_if_any("z_ratio", &[("component", "none")]), None);
    }

    #[test]
    fn gauges_go_up_and_down() {
        let r = Registry::new();
        let g = r.gauge("open", "o", &[]);
        g.inc();
        g.inc();
        g.dec();
        assert_eq!(r.value("open", &[]), 1);
    }

    #[test]
    fn the_summary_stays_short_with_many_series() {
        let r = Registry::new();
        for i in 0..1000 {
            let path = format!("/var/log/app/file-{i}.log");
            r.counter("lines_total", "x", &[("path", path.as_str())])
                .add(i + 1);
        }
        let s = r.summary();
        assert!(s.len() < 800, "{s}");
        assert!(s.starts_with("lines_total{path=\"/var/log/app/file-999.log\"}=1000 "));
        assert!(s.ends_with("lines_total{…}=+988_more_series"), "{s}");
    }
}
