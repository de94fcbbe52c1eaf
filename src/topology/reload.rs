//! Hot reload (SIGHUP, `POST /reload`): the configuration is read again and
//! compared with the running one component by component (by name and whole
//! table).
//!
//! - Unchanged components keep running untouched: their listeners, open
//!   connections, queues and files stay.
//! - A changed or removed source stops reading and hands over what it has
//!   read, as at shutdown; a changed or added one starts once the new
//!   routes are in place.
//! - The routes are swapped for every source at once, without waiting
//!   for anything: no lock is held while a batch waits for queue room, so
//!   unchanged sinks and the sources feeding them never pause.
//! - A changed or removed sink: its queue is closed at once (a source
//!   waiting for room in it hands its batch to the replacement), it drains
//!   and flushes; meanwhile what its new `match` takes waits in an interim
//!   memory queue. Then the new one starts (on the same disk buffer
//!   directory if that did not change, so it delivers what was left there)
//!   and takes over what was handed over and the interim queue.
//! - A replaced sink that has not drained within its `drain_timeout`
//!   (30 s for sinks without one; its destination is
//!   down, say) is stopped where it is: every batch it still holds, queued
//!   or in flight, is handed to the new sink of that name with its
//!   acknowledgement pending ([`crate::buffer::Handover`]), so the reload
//!   never waits on a dead destination and loses nothing. Replaced sinks
//!   drain at the same time; a stop signal cuts the wait short.
//! - A configuration in which nothing changed is a no-op.
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
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::config::{Config, FilterConfig, SinkConfig, DEFAULT_CONFIG};
use super::{bounded, Pipeline};
use crate::component::Shutdown;
use crate::event::Batch;
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

impl ReloadFrom {
    /// What a message about this configuration must not quote, read now
    /// ([`crate::config::redact`]): for what a reload or a start reports
    /// once the configuration has parsed (a component that would not
    /// start).
    pub fn redactions(&self) -> crate::config::redact::Redactions {
        let text = match self {
            ReloadFrom::File(path) => std::fs::read_to_string(path).unwrap_or_default(),
            ReloadFrom::Embedded => DEFAULT_CONFIG.to_string(),
            ReloadFrom::Nothing => String::new(),
        };
        crate::config::redact::Redactions::from_env(&text)
    }
}

/// What a reload changes, by component name.
#[derive(Debug, Default)]
struct Plan {
    /// Running sources to stop (changed or removed).
    stop_sources: Vec<String>,
    /// Running sinks to drain and stop (changed or removed).
    stop_sinks: Vec<String>,
    /// The `[filters]` differ (they are replaced together, at once).
    filters_changed: bool,
    /// Nothing to do: every component is as it runs.
    unchanged: bool,
    summary: String,
}

fn same_sink(a: &SinkConfig, b: &SinkConfig) -> bool {
    a.pattern.as_str() == b.pattern.as_str()
        && a.buffer == b.buffer
        && a.settle == b.settle
        && a.kind == b.kind
}

/// The same filters, in the same order.
fn same_filters(a: &[FilterConfig], b: &[FilterConfig]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            a.name == b.name && a.pattern.as_str() == b.pattern.as_str() && a.kind == b.kind
        })
}

impl Plan {
    fn new(old: &Config, new: &Config) -> Plan {
        let mut plan = Plan::default();
        let mut parts = Vec::new();
        plan.filters_changed = !same_filters(&old.filters, &new.filters);
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
        if plan.filters_changed {
            parts.push(format!("filters: {} in place", new.filters.len()));
        }
        plan.unchanged = !plan.filters_changed
            && sources.added == 0
            && sinks.added == 0
            && sources.changed.is_empty()
            && sources.removed.is_empty()
            && sinks.changed.is_empty()
            && sinks.removed.is_empty();
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
const RELOAD_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

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

/// Longest a reload waits for a replaced source to let go of its router
/// and to finish (its last acknowledgements) before starting the new one.
const SOURCE_BOUND: Duration = Duration::from_secs(10);

impl Pipeline {
    /// Reloads, logs and counts the outcome. `stopping` resolves when a
    /// stop signal comes during the reload: waits end at once then.
    pub(super) async fn reload(&mut self, stopping: Shutdown) -> Result<String, String> {
        let outcome = self.try_reload(stopping).await;
        let result = if outcome.is_ok() { "ok" } else { "rejected" };
        reloads(&self.metrics, result).inc();
        match &outcome {
            Ok(summary) => {
                tracing::info!(%summary, "configuration reloaded");
                if self.release_code {
                    crate::memory::code::release_soon();
                }
            }
            Err(reason) => tracing::error!(
                %reason,
                "configuration reload rejected; the running configuration stays"
            ),
        }
        outcome
    }

    /// Reads and validates the new configuration.
    fn read_new(&self) -> Result<(Config, String), String> {
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
            .filter_map(|s| super::kinds::listen_address(&s.kind).map(String::from))
            .chain(self.config.api.iter().map(|a| a.address.clone()))
            .collect();
        let new =
            super::validate::validate_text(&text, &origin, &held, false).map_err(|errors| {
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
        Ok((new, origin))
    }

    async fn try_reload(&mut self, mut stopping: Shutdown) -> Result<String, String> {
        let (new, origin) = self.read_new()?;
        let plan = Plan::new(&self.config, &new);
        if plan.unchanged {
            *self.config_text.lock().unwrap_or_else(|e| e.into_inner()) = new.shown.clone();
            return Ok(format!("nothing changed ({})", plan.summary));
        }
        let mut failures = Vec::new();
        self.forward_placement = super::forward_placement(&new.sources);
        // sources that go stop reading first; they route nothing more
        let mut stopped = HashMap::new();
        for name in &plan.stop_sources {
            if let Some(s) = self.sources.remove(name) {
                s.trigger.trigger();
                stopped.insert(name.clone(), s);
            }
        }
        for (name, s) in &mut stopped {
            if !bounded(SOURCE_BOUND, &mut stopping, s.released.wait()).await {
                tracing::warn!(source = %name, bound = ?SOURCE_BOUND,
                    "replaced source still routing; its replacement starts anyway");
            }
        }
        // The new table, in place at once: kept sinks keep their queues, a
        // replaced one gets an interim queue that its new sink takes over
        // once the old one has gone, an added one starts now. Nothing waits
        // on a queue, so the other flows keep moving throughout.
        let mut current: HashMap<String, Route> = self
            .switch
            .routes()
            .into_iter()
            .map(|r| (r.sink.to_string(), r))
            .collect();
        let mut table = Vec::new();
        let mut interims = HashMap::new();
        for s in &new.sinks {
            if plan.stop_sinks.contains(&s.name) {
                let (queue, rx) = crate::buffer::queue(
                    &s.name,
                    s.buffer.memory_stand_in(),
                    // counted once, by the queue of the sink that takes them
                    &crate::metrics::Registry::new(),
                );
                table.push(Route {
                    sink: Arc::from(s.name.as_str()),
                    pattern: s.pattern.clone(),
                    queue: queue.clone(),
                });
                interims.insert(s.name.clone(), Interim { queue, rx });
            } else if let Some(route) = current.remove(&s.name) {
                table.push(route);
            } else {
                match self.start_sink(s) {
                    Ok(route) => table.push(route),
                    Err(e) => failures.push(e),
                }
            }
        }
        drop(self.switch.replace(table));
        if plan.filters_changed {
            if let Err(e) = self.set_filters(new.filters.clone()) {
                failures.push(e);
            }
        }
        // what the replaced sinks hold and do not deliver goes to their
        // replacements; a send waiting on one of their queues goes at once
        let mut handovers = HashMap::new();
        let mut replaced = Vec::new();
        for (name, route) in current.drain() {
            // a replacement that opens the same disk buffer directory
            // delivers what the old sink leaves there
            let new_dir = disk_dir(&new.sinks, &name);
            let replacement_reads_it =
                new_dir.is_some() && new_dir == disk_dir(&self.config.sinks, &name);
            if let Some(h) = route.queue.handover() {
                handovers.insert(name, h.start());
            }
            if replacement_reads_it {
                route.queue.close_replaced();
            } else {
                // removed, or its replacement uses another directory: its
                // disk buffer keeps what is left for a start that opens it
                route.queue.close();
            }
            replaced.extend(route.queue.dir_release());
        }
        let mut draining = tokio::task::JoinSet::new();
        for name in &plan.stop_sinks {
            let bound = self
                .config
                .sinks
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| s.kind.drain_timeout())
                .unwrap_or(RELOAD_DRAIN_TIMEOUT);
            if let Some(sink) = self.forget_sink(name) {
                let (name, mut stopping) = (name.clone(), stopping.clone());
                draining.spawn(async move {
                    if !sink.finish(bound, &mut stopping).await {
                        tracing::warn!(sink = %name, drain_timeout = ?bound,
                            "replaced sink did not drain within its drain_timeout; stopped where it was");
                    }
                    name
                });
            }
        }
        while let Some(name) = draining.join_next().await {
            if let Err(e) = name {
                tracing::error!(error = %e, "a replaced sink's stop failed");
            }
        }
        // a router routing on the old table may still hold a clone of a
        // replaced queue: its disk buffer's directory is let go of anyway
        for dir in replaced {
            dir.release();
        }
        let mut running = Vec::new();
        for s in &new.sinks {
            let Some(interim) = interims.remove(&s.name) else {
                if self.sinks.contains_key(&s.name) {
                    running.push(s.clone());
                }
                continue;
            };
            let (route, config) = match self.start_sink(s) {
                Ok(route) => (route, s.clone()),
                Err(e) => {
                    failures.push(e);
                    let old = self.config.sinks.iter().find(|o| o.name == s.name).cloned();
                    let restarted = match old.as_ref().map(|old| self.start_sink(old)) {
                        Some(Ok(route)) => Some(route),
                        Some(Err(e)) => {
                            failures.push(format!("the previous {e}"));
                            None
                        }
                        None => None,
                    };
                    // neither runs: its records wait, not acknowledged, and
                    // the next reload tries again
                    let route = restarted.unwrap_or_else(|| self.start_holding(s));
                    (route, old.unwrap_or_else(|| s.clone()))
                }
            };
            let handed = handovers.remove(&s.name);
            let counter = handed_over(&self.metrics, &s.name);
            interim.forward_to(route.queue.clone(), handed, counter, &s.name);
            let mut routes = self.switch.routes();
            for r in &mut routes {
                if *r.sink == *s.name {
                    *r = route.clone();
                }
            }
            drop(self.switch.replace(routes));
            running.push(config);
        }
        // removed sinks: what they did not deliver has no sink to go to
        for (name, rx) in handovers {
            reject_left_over(rx, rejected_at_reload(&self.metrics, &name), name);
        }
        self.config.sinks = running;
        let mut running = Vec::new();
        for s in &new.sources {
            if self.config.sources.iter().any(|o| o.name == s.name)
                && !plan.stop_sources.contains(&s.name)
            {
                running.push(s.clone());
                continue;
            }
            // the old one finishes first (a tail source its last
            // checkpoint, a forward connection its last acks)
            if let Some(mut old) = stopped.remove(&s.name) {
                if !bounded(SOURCE_BOUND, &mut stopping, &mut old.watcher).await {
                    tracing::warn!(source = %s.name, bound = ?SOURCE_BOUND,
                        "replaced source still finishing; its replacement starts anyway");
                    self.stopping.push(old.watcher);
                }
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
        self.stopping
            .extend(stopped.into_values().map(|s| s.watcher));
        if failures.is_empty() {
            *self.config_text.lock().unwrap_or_else(|e| e.into_inner()) = new.shown.clone();
            Ok(plan.summary)
        } else {
            Err(self.reload_from.redactions().apply(&format!(
                "{origin}: partly applied ({}); the previous configuration of these components is kept: {}",
                plan.summary,
                failures.join("; ")
            )))
        }
    }
}

/// The disk buffer directory of sink `name` in `sinks`, if it has one.
fn disk_dir<'a>(sinks: &'a [SinkConfig], name: &str) -> Option<&'a std::path::Path> {
    sinks
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.buffer.disk_dir())
}

/// The queue a replaced sink's records go to between the swap of the
/// routes and the start of its new sink.
struct Interim {
    queue: crate::buffer::QueueSender,
    rx: crate::buffer::QueueReceiver,
}

impl Interim {
    /// Moves what the old sink handed over, then what the interim queue
    /// took, to `to`, each batch with its acknowledgement still pending.
    /// The task ends once the old sink's deliveries and every sender of
    /// the interim queue are gone (routers that were routing on the old
    /// table finish first).
    fn forward_to(
        self,
        to: crate::buffer::QueueSender,
        mut handed: Option<mpsc::UnboundedReceiver<Batch>>,
        counter: crate::metrics::Counter,
        name: &str,
    ) {
        let Interim { queue, mut rx } = self;
        let mut late = queue.handover().map(|h| h.start());
        queue.close();
        drop(queue);
        let name = name.to_string();
        tokio::spawn(async move {
            let mut records = 0u64;
            loop {
                tokio::select! {
                    biased;
                    Some(b) = recv_opt(&mut handed) => {
                        records += b.count as u64;
                        counter.add(b.count as u64);
                        // a failed send rejects the batch
                        let _ = to.send(b).await;
                    }
                    Some(d) = rx.recv() => {
                        // the clone keeps the acknowledgement pending
                        let _ = to.send(d.batch().clone()).await;
                        d.accept();
                    }
                    Some(b) = recv_opt(&mut late) => {
                        let _ = to.send(b).await;
                    }
                    else => break,
                }
            }
            if records > 0 {
                tracing::warn!(sink = %name, records,
                    "undelivered records of the replaced sink handed over to its replacement");
            }
        });
    }
}

async fn recv_opt(rx: &mut Option<mpsc::UnboundedReceiver<Batch>>) -> Option<Batch> {
    match rx {
        Some(rx) => rx.recv().await,
        None => None,
    }
}

/// Rejects (not acknowledged: the source sends them again) what a removed
/// sink did not deliver, as it arrives.
fn reject_left_over(
    mut rx: mpsc::UnboundedReceiver<Batch>,
    counter: crate::metrics::Counter,
    name: String,
) {
    tokio::spawn(async move {
        let mut records = 0u64;
        while let Some(b) = rx.recv().await {
            records += b.count as u64;
            counter.add(b.count as u64);
            b.ack.reject();
        }
        if records > 0 {
            tracing::error!(sink = %name, records,
                "undelivered records of the removed sink have no sink to go to; not acknowledged");
        }
    });
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
