//! Counters and their Prometheus text exposition.
//!
//! Every component registers its counters once at start-up and bumps them
//! with a relaxed atomic add on the hot path. The registry renders them for
//! the `/metrics` endpoint and for the summary logged at shutdown.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A monotonically increasing count.
#[derive(Debug, Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// A counter that belongs to no registry (tests, throwaway components).
    pub fn detached() -> Self {
        Counter::default()
    }

    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (bytes in use, say).
#[derive(Debug, Clone, Default)]
pub struct Gauge(Arc<AtomicU64>);

impl Gauge {
    #[inline]
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

struct Entry {
    name: &'static str,
    help: &'static str,
    /// Prometheus type: `counter` or `gauge`.
    kind: &'static str,
    labels: Vec<(&'static str, String)>,
    counter: Counter,
}

/// All counters of one running pipeline.
#[derive(Clone, Default)]
pub struct Registry {
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers (or finds) the counter `name{labels}`.
    pub fn counter(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Counter {
        let labels: Vec<(&'static str, String)> =
            labels.iter().map(|(k, v)| (*k, (*v).to_string())).collect();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries
            .iter()
            .find(|e| e.name == name && e.labels == labels)
        {
            return e.counter.clone();
        }
        let counter = Counter::default();
        entries.push(Entry {
            name,
            help,
            kind: "counter",
            labels,
            counter: counter.clone(),
        });
        counter
    }

    /// Registers (or finds) the gauge `name{labels}`.
    pub fn gauge(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Gauge {
        let counter = self.counter(name, help, labels);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        for e in entries.iter_mut().filter(|e| e.name == name) {
            e.kind = "gauge";
        }
        Gauge(counter.0)
    }

    /// The value of `name{labels}` summed over entries whose labels include
    /// all of `labels` (used by tests and the shutdown summary).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .filter(|e| e.name == name)
            .filter(|e| {
                labels
                    .iter()
                    .all(|(k, v)| e.labels.iter().any(|(ek, ev)| ek == k && ev == v))
            })
            .map(|e| e.counter.get())
            .sum()
    }

    /// Prometheus text exposition format, version 0.0.4.
    pub fn render(&self) -> String {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        // group each metric's samples under one HELP/TYPE header
        let mut sorted: Vec<&Entry> = entries.iter().collect();
        sorted.sort_by_key(|e| e.name);
        let mut last_name = "";
        for e in sorted {
            if e.name != last_name {
                let _ = writeln!(out, "# HELP {} {}", e.name, e.help);
                let _ = writeln!(out, "# TYPE {} {}", e.name, e.kind);
                last_name = e.name;
            }
            out.push_str(e.name);
            if !e.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in e.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let v = v
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    let _ = write!(out, "{k}=\"{v}\"");
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", e.counter.get());
        }
        out
    }

    /// Non-zero counters as `name{labels}=value` pairs, for the log line
    /// written at shutdown. A metric with many series (one per file, say)
    /// shows its largest few and how many more there are, so the line stays
    /// short whatever the number of files.
    pub fn summary(&self) -> String {
        const PER_NAME: usize = 12;
        let text = self.render();
        let mut groups: Vec<(&str, Vec<(&str, u64)>)> = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let value: u64 = value.parse().unwrap_or(0);
            if value == 0 {
                continue;
            }
            let name = series.split('{').next().unwrap_or(series);
            match groups.last_mut() {
                Some((n, v)) if *n == name => v.push((series, value)),
                _ => groups.push((name, vec![(series, value)])),
            }
        }
        let mut out = Vec::new();
        for (name, mut series) in groups {
            let more = series.len().saturating_sub(PER_NAME);
            if more > 0 {
                series.sort_by_key(|s| std::cmp::Reverse(s.1));
                series.truncate(PER_NAME);
            }
            out.extend(series.iter().map(|(s, v)| format!("{s}={v}")));
            if more > 0 {
                out.push(format!("{name}{{…}}=+{more}_more_series"));
            }
        }
        out.join(" ")
    }
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
        assert!(text.contains("# TYPE x_total counter"));
        assert!(text.contains("x_total{component=\"a\"} 3"));
        assert_eq!(
            r.summary(),
            "x_total{component=\"a\"}=3 x_total{component=\"b\"}=1"
        );
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
