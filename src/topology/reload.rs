//! Hot reload (SIGHUP, `POST /reload`): the configuration is read again and
//! compared with the running one component by component (by name and whole
//! table).
//!
//! - Unchanged components keep running untouched: their listeners, open
//!   connections, queues and files stay.
//! - A changed or removed source stops reading and hands over what it has
//!   read, as at shutdown; a changed or added one starts once the new
//!   routes are in place.
//! - A changed or removed sink: routing pauses (batches being routed are
//!   queued first; sources wait, as under backpressure), its queue closes,
//!   it drains and flushes; then the new one starts (on the same disk
//!   buffer directory if that did not change, so it delivers what was left
//!   there) and the new routes take effect for every source at once.
//! - A replaced sink that has not drained within its `drain_timeout`
//!   (30 s for sinks without one; its destination is
//!   down, say) is stopped where it is: every batch it still holds, queued
//!   or in flight, is handed to the new sink of that name with its
//!   acknowledgement pending ([`crate::buffer::Handover`]), so the reload
//!   never waits on a dead destination and loses nothing.
//!
//! No record is lost or duplicated: every batch is in exactly one queue
//! (old or new) and every queue is drained, or handed over, before its
//! sink goes (a chunk in flight to a live server when its sink is stopped
//! may arrive twice, as after any connection failure; so may a Kafka
//! message sent whose delivery report had not come back). A new
//! configuration that would not start (or changes `[api]` or `[limits]`,
//! which take a restart) is refused whole, before anything is touched, and
//! the reason is logged and returned.

use std::collections::HashMap;
use std::path::PathBuf;

use tokio::sync::{mpsc, oneshot};

use super::Pipeline;
use crate::config::{Config, SinkConfig, DEFAULT_CONFIG};
use crate::router::Route;

/// Where a reload reads the configuration from.
#[derive(Debug, Clone, Default)]
pub enum ReloadFrom {
    /// Nowhere: reloads are refused (a pipeline built in code).
    #[default]
    Nothing,
    /// The file given to `logferry run --config`.
    File(PathBuf),
    /// The embedded default (`logferry run` without `--config`).
    Embedded,
}

/// One reload request, answered with a summary or the reason it failed.
pub(super) struct Request {
    pub reply: oneshot::Sender<Result<String, String>>,
}

/// Asks a running pipeline to reload; cheap to clone.
#[derive(Clone)]
pub struct ReloadHandle(mpsc::Sender<Request>);

pub(super) fn channel() -> (ReloadHandle, mpsc::Receiver<Request>) {
    let (tx, rx) = mpsc::channel(4);
    (ReloadHandle(tx), rx)
}

impl ReloadHandle {
    /// Reloads and waits for the outcome: a summary of what changed, or
    /// why the running configuration was kept.
    pub async fn reload(&self) -> Result<String, String> {
        let (reply, answer) = oneshot::channel();
        self.0
            .send(Request { reply })
            .await
            .map_err(|_| "the pipeline is stopping".to_string())?;
        answer
            .await
            .map_err(|_| "the pipeline stopped during the reload".to_string())?
    }
}

/// `POST /reload`: the HTTP status and body (200 with a summary, or 422
/// with every reason the new configuration was refused).
pub async fn http(handle: &ReloadHandle) -> (u16, String) {
    match handle.reload().await {
        Ok(summary) => (200, format!("{summary}\n")),
        Err(reason) => (422, format!("{reason}\n")),
    }
}

/// What a reload changes, by component name.
#[derive(Debug, Default)]
struct Plan {
    /// Running sources to stop (changed or removed).
    stop_sources: Vec<String>,
    /// Running sinks to drain and stop (changed or removed).
    stop_sinks: Vec<String>,
    summary: String,
}

fn same_sink(a: &SinkConfig, b: &SinkConfig) -> bool {
    a.pattern.as_str() == b.pattern.as_str()
        && a.buffer == b.buffer
        && a.settle == b.settle
        && a.kind == b.kind
}

impl Plan {
    fn new(old: &Config, new: &Config) -> Plan {
        let mut plan = Plan::default();
        let mut parts = Vec::new();
        let sources = diff(
            &old.sources,
            &new.sources,
            |s| &s.name,
            |a, b| a.kind == b.kind,
        );
        let sinks = diff(&old.sinks, &new.sinks, |s| &s.name, same_sink);
        for (what, d) in [("sources", &sources), ("sinks", &sinks)] {
            parts.push(format!(
                "{what}: {} kept, {} replaced, {} added, {} removed",
                d.kept,
                d.changed.len(),
                d.added,
                d.removed.len()
            ));
        }
        plan.stop_sources = sources.changed.into_iter().chain(sources.removed).collect();
        plan.stop_sinks = sinks.changed.into_iter().chain(sinks.removed).collect();
        plan.summary = parts.join("; ");
        plan
    }
}

struct Diff {
    kept: usize,
    added: usize,
    changed: Vec<String>,
    removed: Vec<String>,
}

fn diff<T>(old: &[T], new: &[T], name: fn(&T) -> &String, same: fn(&T, &T) -> bool) -> Diff {
    let mut d = Diff {
        kept: 0,
        added: 0,
        changed: Vec::new(),
        removed: Vec::new(),
    };
    for o in old {
        match new.iter().find(|n| name(n) == name(o)) {
            Some(n) if same(o, n) => d.kept += 1,
            Some(_) => d.changed.push(name(o).clone()),
            None => d.removed.push(name(o).clone()),
        }
    }
    d.added = new
        .iter()
        .filter(|n| !old.iter().any(|o| name(o) == name(n)))
        .count();
    d
}

/// How long a reload waits for a replaced sink without a `drain_timeout`
/// of its own to drain before stopping it.
const RELOAD_DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `logferry_reload_handed_over_records_total{component}`.
fn handed_over(metrics: &crate::metrics::Registry, sink: &str) -> crate::metrics::Counter {
    metrics.counter(
        "logferry_reload_handed_over_records_total",
        "Records a sink replaced by a reload had not delivered within its drain_timeout, handed over to its replacement (their acknowledgement waits for it).",
        &[("component", sink)],
    )
}

fn rejected_at_reload(metrics: &crate::metrics::Registry, sink: &str) -> crate::metrics::Counter {
    metrics.counter(
        "logferry_reload_rejected_records_total",
        "Records a sink removed by a reload had not delivered within its drain_timeout: rejected to their sources (not acknowledged), as no sink of that name remains.",
        &[("component", sink)],
    )
}

/// `logferry_reloads_total{result}`; `result` is `ok` or `rejected`.
pub(super) fn reloads(metrics: &crate::metrics::Registry, result: &str) -> crate::metrics::Counter {
    metrics.counter(
        "logferry_reloads_total",
        "Configuration reloads (SIGHUP, POST /reload) by result: ok, or rejected (the running configuration stays; the reason is logged).",
        &[("result", result)],
    )
}

impl Pipeline {
    /// Reloads, logs and counts the outcome.
    pub(super) async fn reload(&mut self) -> Result<String, String> {
        let outcome = self.try_reload().await;
        let result = if outcome.is_ok() { "ok" } else { "rejected" };
        reloads(&self.metrics, result).inc();
        match &outcome {
            Ok(summary) => tracing::info!(%summary, "configuration reloaded"),
            Err(reason) => tracing::error!(
                %reason,
                "configuration reload rejected; the running configuration stays"
            ),
        }
        outcome
    }

    async fn try_reload(&mut self) -> Result<String, String> {
        let (text, origin) = match &self.reload_from {
            ReloadFrom::Nothing => {
                return Err("this pipeline was not started from a configuration file".into())
            }
            ReloadFrom::File(path) => (
                std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: cannot read the file: {e}", path.display()))?,
                path.display().to_string(),
            ),
            ReloadFrom::Embedded => (DEFAULT_CONFIG.to_string(), "<embedded default>".into()),
        };
        // the running sources hold their addresses: binding them would fail
        let held: Vec<String> = self
            .config
            .sources
            .iter()
            .filter_map(|s| crate::validate::listen_address(&s.kind).map(String::from))
            .chain(self.config.api.iter().map(|a| a.address.clone()))
            .collect();
        let new =
            crate::validate::validate_text(&text, &origin, &held, false).map_err(|errors| {
                let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
                all.join("\n")
            })?;
        if new.api != self.config.api {
            return Err(format!(
                "{origin}: [api] changed: the API endpoint changes only with a restart"
            ));
        }
        if new.limits != self.config.limits {
            return Err(format!(
                "{origin}: [limits] changed: process-wide limits change only with a restart"
            ));
        }
        let plan = Plan::new(&self.config, &new);
        let mut failures = Vec::new();
        // sources that go hand over to the routes they were started with
        let mut stopped = HashMap::new();
        for name in &plan.stop_sources {
            if let Some(watcher) = self.stop_source(name).await {
                stopped.insert(name.clone(), watcher);
            }
        }
        let switch = self.switch.clone();
        let mut paused = switch.pause().await;
        let mut routes: HashMap<String, Route> = paused
            .take()
            .into_iter()
            .map(|r| (r.sink.to_string(), r))
            .collect();
        let mut handovers = HashMap::new();
        for name in &plan.stop_sinks {
            let Some(route) = routes.remove(name) else {
                continue;
            };
            // what the old sink does not deliver goes to its replacement,
            // or is rejected (and counted) if the sink was removed
            if let Some(h) = route.queue.handover() {
                handovers.insert(name.clone(), h.start());
            }
            // the last sender of its queue: the sink drains what is queued
            drop(route);
        }
        for name in &plan.stop_sinks {
            let bound = self
                .config
                .sinks
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| s.kind.drain_timeout())
                .unwrap_or(RELOAD_DRAIN_TIMEOUT);
            if !self.sink_finished(name, Some(bound)).await {
                tracing::warn!(sink = %name, drain_timeout = ?bound,
                    "replaced sink did not drain within its drain_timeout; stopped where it was");
            }
        }
        // every delivery of a finished sink is settled or handed over
        let mut handed: HashMap<String, Vec<crate::event::Batch>> = handovers
            .into_iter()
            .map(|(name, mut rx)| {
                let mut batches = Vec::new();
                while let Ok(b) = rx.try_recv() {
                    batches.push(b);
                }
                (name, batches)
            })
            .filter(|(_, b)| !b.is_empty())
            .collect();
        let mut table = Vec::new();
        let mut running = Vec::new();
        for s in &new.sinks {
            if let Some(route) = routes.remove(&s.name) {
                table.push(route);
                running.push(s.clone());
                continue;
            }
            match self.start_sink(s) {
                Ok(route) => {
                    table.push(route);
                    running.push(s.clone());
                }
                Err(e) => {
                    failures.push(e);
                    let old = self.config.sinks.iter().find(|o| o.name == s.name).cloned();
                    if let Some(old) = old {
                        match self.start_sink(&old) {
                            Ok(route) => {
                                table.push(route);
                                running.push(old);
                            }
                            Err(e) => failures.push(format!("the previous {e}")),
                        }
                    }
                }
            }
        }
        for (name, batches) in handed.drain() {
            let records: usize = batches.iter().map(|b| b.count).sum();
            match table.iter().find(|r| *r.sink == *name) {
                Some(route) => {
                    handed_over(&self.metrics, &name).add(records as u64);
                    tracing::warn!(sink = %name, records,
                        "undelivered records of the replaced sink handed over to its replacement");
                    let queue = route.queue.clone();
                    tokio::spawn(async move {
                        for b in batches {
                            // a failed send rejects the batch
                            let _ = queue.send(b).await;
                        }
                    });
                }
                None => {
                    for b in &batches {
                        b.ack.reject();
                    }
                    rejected_at_reload(&self.metrics, &name).add(records as u64);
                    tracing::error!(sink = %name, records,
                        "undelivered records of the replaced sink have no sink to go to; not acknowledged");
                }
            }
        }
        paused.set(table);
        drop(paused);
        self.config.sinks = running;
        let mut running = Vec::new();
        for s in &new.sources {
            if self.config.sources.iter().any(|o| o.name == s.name)
                && !plan.stop_sources.contains(&s.name)
            {
                running.push(s.clone());
                continue;
            }
            // the old one must have finished (a tail source its last
            // checkpoint, a forward connection its last acks: routing runs
            // again, so they come)
            if let Some(watcher) = stopped.remove(&s.name) {
                let _ = watcher.await;
            }
            match self.start_source(s).await {
                Ok(()) => running.push(s.clone()),
                Err(e) => {
                    failures.push(e);
                    let old = self.config.sources.iter().find(|o| o.name == s.name);
                    if let Some(old) = old.cloned() {
                        match self.start_source(&old).await {
                            Ok(()) => running.push(old),
                            Err(e) => failures.push(format!("the previous {e}")),
                        }
                    }
                }
            }
        }
        self.config.sources = running;
        self.stopping.retain(|w| !w.is_finished());
        self.stopping.extend(stopped.into_values());
        if failures.is_empty() {
            *self.config_text.lock().unwrap_or_else(|e| e.into_inner()) =
                crate::api::masked_config(&new.tree);
            Ok(plan.summary)
        } else {
            Err(format!(
                "{origin}: partly applied ({}); the previous configuration of these components is kept: {}",
                plan.summary,
                failures.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, "t.toml").unwrap()
    }

    #[test]
    fn components_are_compared_by_name_and_whole_table() {
        let old = config(
            "[sources.a]\ntype = \"generator\"\n[sources.b]\ntype = \"generator\"\n\
             [sinks.x]\ntype = \"null\"\nmatch = \"**\"\n[sinks.y]\ntype = \"null\"\nmatch = \"**\"\n\
             [sinks.z]\ntype = \"null\"\nmatch = \"**\"\n",
        );
        // a: a default written out (unchanged); b: removed; c: added;
        // x: unchanged; y: only `match` changed; z: only its buffer changed
        let new = config(
            "[sources.a]\ntype = \"generator\"\nrate = 0\n[sources.c]\ntype = \"generator\"\n\
             [sinks.x]\ntype = \"null\"\nmatch = \"**\"\n[sinks.y]\ntype = \"null\"\nmatch = \"a.**\"\n\
             [sinks.z]\ntype = \"null\"\nmatch = \"**\"\nbuffer = { max_bytes = \"1MiB\" }\n",
        );
        let plan = Plan::new(&old, &new);
        assert_eq!(plan.stop_sources, ["b"]);
        assert_eq!(plan.stop_sinks, ["y", "z"]);
        assert_eq!(
            plan.summary,
            "sources: 1 kept, 0 replaced, 1 added, 1 removed; sinks: 1 kept, 2 replaced, 0 added, 0 removed"
        );
    }
}
