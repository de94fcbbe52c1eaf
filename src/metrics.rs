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

struct Entry {
    name: &'static str,
    help: &'static str,
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
            labels,
            counter: counter.clone(),
        });
        counter
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
                let _ = writeln!(out, "# TYPE {} counter", e.name);
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
    /// written at shutdown.
    pub fn summary(&self) -> String {
        self.render()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.ends_with(" 0"))
            .map(|l| l.replacen(' ', "=", 1))
            .collect::<Vec<_>>()
            .join(" ")
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
}
