//! Tag patterns and the fan-out of batches to sink queues.
//!
//! Patterns follow Fluentd's `<match>` semantics:
//! - `*` matches one tag part (`a.*` matches `a.b`, not `a` or `a.b.c`);
//!   inside a part it matches any characters but `.` (`a.b*` matches `a.bc`);
//! - `**` matches zero or more parts (`a.**` matches `a`, `a.b`, `a.b.c`;
//!   `**.z` matches `z` and `x.y.z`);
//! - `{x,y}` matches either alternative, each itself a pattern;
//! - several patterns separated by spaces match if any does.

mod feeds;
pub mod tap;
mod transit;

pub use feeds::SinkFeeds;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use regex::Regex;
use tokio::sync::mpsc;

use crate::buffer::{QueueSender, SendError};
use crate::event::{Batch, Tag};
use crate::metrics::Counter;
use transit::InTransit;

/// A compiled `match` expression: space-separated alternatives; one
/// written `!PATTERN` is negative, and excludes the tags it matches (what
/// Fluentd's first-match routing needs: a `<match **>` after a
/// `<match app.**>` is `** !app.**`).
///
/// ```
/// use logferry::router::TagPattern;
///
/// let p = TagPattern::new("app.** {db,cache}.*").unwrap();
/// assert!(p.matches("app"));
/// assert!(p.matches("app.web.access"));
/// assert!(p.matches("db.slow"));
/// assert!(!p.matches("db"));
/// assert!(!p.matches("other.x"));
///
/// let rest = TagPattern::new("** !app.** !debug").unwrap();
/// assert!(rest.matches("db.slow"));
/// assert!(!rest.matches("app.web"));
/// assert!(!rest.matches("debug"));
/// ```
#[derive(Debug, Clone)]
pub struct TagPattern {
    source: String,
    regex: Regex,
    /// The negative alternatives (`!app.**`), if any: a tag they match is
    /// not matched, whatever the positive ones say.
    exclude: Option<Regex>,
}

impl TagPattern {
    pub fn new(expr: &str) -> Result<Self, String> {
        let parts: Vec<&str> = expr.split_whitespace().collect();
        if parts.is_empty() {
            return Err("empty match pattern".into());
        }
        let (negative, positive): (Vec<&str>, Vec<&str>) =
            parts.iter().partition(|p| p.starts_with('!'));
        if positive.is_empty() {
            return Err(format!(
                "pattern {expr:?}: only `!` alternatives, which match nothing; add what to match (`** !debug.**`)"
            ));
        }
        let compile = |globs: &[&str]| -> Result<Regex, String> {
            let alternatives: Vec<String> = globs
                .iter()
                .map(|p| glob_to_regex(p))
                .collect::<Result<_, _>>()?;
            // `s`: `.` matches any character, `\n` included; a tag is text
            // from outside, and no character may change what a pattern means
            let re = format!("^(?s:{})$", alternatives.join("|"));
            Regex::new(&re).map_err(|e| format!("pattern {expr:?}: {e}"))
        };
        let regex = compile(&positive)?;
        let negative: Vec<&str> = negative.iter().map(|p| &p[1..]).collect();
        if negative.iter().any(|p| p.is_empty()) {
            return Err(format!("pattern {expr:?}: `!` without a pattern after it"));
        }
        let exclude = if negative.is_empty() {
            None
        } else {
            Some(compile(&negative)?)
        };
        Ok(TagPattern {
            source: expr.to_string(),
            regex,
            exclude,
        })
    }

    pub fn matches(&self, tag: &str) -> bool {
        self.regex.is_match(tag) && !self.exclude.as_ref().is_some_and(|e| e.is_match(tag))
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

/// Translates one glob (no spaces) into a regex body.
fn glob_to_regex(glob: &str) -> Result<String, String> {
    let b = glob.as_bytes();
    // a stack of alternative lists for nested `{…}`
    let mut out = vec![String::new()];
    let mut alts: Vec<Vec<String>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let cur = out.last_mut().expect("stack never empty");
        if rest.starts_with(b".**") {
            cur.push_str(r"(?:\..*)?");
            i += 3;
        } else if rest.starts_with(b"**.") && cur.is_empty() {
            // `**.` opening a pattern or an alternative: zero or more parts
            cur.push_str(r"(?:.*\.)?");
            i += 3;
        } else if rest.starts_with(b"**") {
            cur.push_str(".*");
            i += 2;
        } else {
            match b[i] {
                b'*' => cur.push_str(r"[^.]*"),
                b'{' => {
                    alts.push(Vec::new());
                    out.push(String::new());
                }
                b',' if !alts.is_empty() => {
                    let done = out.pop().expect("pushed at '{'");
                    alts.last_mut().expect("checked").push(done);
                    out.push(String::new());
                }
                b'}' if !alts.is_empty() => {
                    let done = out.pop().expect("pushed at '{'");
                    let mut list = alts.pop().expect("checked");
                    list.push(done);
                    let joined = format!("(?:{})", list.join("|"));
                    out.last_mut().expect("outer level").push_str(&joined);
                }
                c => {
                    let ch = glob[i..].chars().next().unwrap_or(c as char);
                    cur.push_str(&regex::escape(ch.encode_utf8(&mut [0; 4])));
                    i += ch.len_utf8();
                    continue;
                }
            }
            i += 1;
        }
    }
    if !alts.is_empty() {
        return Err(format!("pattern {glob:?}: '{{' without matching '}}'"));
    }
    Ok(out.pop().unwrap_or_default())
}

/// A filter of the pipeline, applied by every router to the batches whose
/// tag matches its pattern, in the order of the configuration file, before
/// the batch goes to the sinks. A batch a filter gives a new tag goes on
/// from the next filter with that tag, and the sinks match its final tag. A filter keeps the batch's acknowledgement
/// and memory charge on what it returns: a record it drops settles with
/// the rest of its batch, and a batch it drops whole settles at once (as
/// filtered, never early: it goes to no sink).
pub trait Filter: Send + Sync {
    /// The filter's name (`[filters.NAME]`), for logs and counters.
    fn name(&self) -> &str;
    /// Which tags the filter applies to.
    fn pattern(&self) -> &TagPattern;
    /// Puts in `out` what the next filters (or the sinks) should see of
    /// `batch`: usually one batch, none when no record is left, several
    /// when records go on under other tags. Every batch put out shares
    /// `batch`'s acknowledgement, so the source's batch settles once all
    /// of them have.
    fn apply(&self, batch: Batch, out: &mut Vec<Batch>);
    /// Whether the filter may hold records across batches (multiline):
    /// then the pipeline asks it for [`Filter::deadline`] and calls
    /// [`Filter::flush`] whether or not a batch comes.
    fn holds(&self) -> bool {
        false
    }
    /// When the filter next has held records due, if it holds any.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    /// Puts in `out` the held records due at `now` (every one with
    /// `all`, at shutdown). They go on from the next filter, as if `apply`
    /// had given them; each batch carries the acknowledgement of the
    /// batches its records came from.
    fn flush(&self, _now: Instant, _all: bool, _out: &mut Vec<Batch>) {}
    /// A reload replaced the filter: from now on it holds nothing, and
    /// `apply` passes batches on as they came (a router still routing on
    /// the replaced filters may give it one more). What it holds is then
    /// taken with [`Filter::flush`].
    fn retire(&self) {}
}

/// One route: a pattern and the queue of the sink that wants it.
#[derive(Clone)]
pub struct Route {
    pub sink: Arc<str>,
    pub pattern: TagPattern,
    pub queue: QueueSender,
}

/// Hands batches to every sink whose pattern matches their tag. Each source
/// owns a clone; the per-tag route cache is local to it. The routes
/// themselves are shared and can be swapped whole by a reload
/// ([`RouteSwitch`]). Routing takes a snapshot of the table (a lock held
/// for one pointer copy) and sends without any lock, so a batch waiting for
/// room in a full queue never holds up a swap, nor any other source.
#[derive(Clone)]
pub struct Router {
    table: Arc<RwLock<Arc<RouteTable>>>,
    cache: HashMap<Tag, Arc<[usize]>>,
    /// The filters that apply to a tag, as indices into the table's
    /// filters, cached per tag like the routes.
    filter_cache: HashMap<Tag, Arc<[usize]>>,
    /// The table generation `cache` was computed for.
    cache_generation: u64,
    /// Batches whose tag matched no sink.
    unrouted: Counter,
    /// The live views on components (`GET /tap`, `logferry test`),
    /// shared by every clone.
    taps: tap::Taps,
    /// The source this clone routes for, as its taps name it.
    source_name: Option<Arc<str>>,
    /// Held by every clone given to one source (see [`Router::for_source`]).
    _source: Option<mpsc::Sender<()>>,
}

/// Resolves once every clone of one source's router is gone: that source
/// routes nothing more (its connections may still be waiting for acks).
pub struct Released(mpsc::Receiver<()>);

impl Released {
    pub async fn wait(&mut self) {
        // nothing is ever sent: `None` once every sender is dropped
        let _ = self.0.recv().await;
    }
}

/// The routes every router of a pipeline reads.
struct RouteTable {
    routes: Vec<Route>,
    /// Applied in order before the routes; empty costs nothing.
    filters: Arc<[Arc<dyn Filter>]>,
    /// Bumped at each swap, so that routers drop their tag caches.
    generation: u64,
    /// The process is stopping and every queue is closed: a batch routed
    /// now is rejected (its source sends it again after a restart), never
    /// taken for one that no sink matches.
    closed: bool,
    /// Some route's queue is a disk buffer.
    disk_buffered: bool,
}

impl RouteTable {
    fn new(
        routes: Vec<Route>,
        filters: Arc<[Arc<dyn Filter>]>,
        generation: u64,
        closed: bool,
    ) -> Self {
        let disk_buffered = routes.iter().any(|r| r.queue.is_disk());
        RouteTable {
            routes,
            filters,
            generation,
            closed,
            disk_buffered,
        }
    }
}

/// Changes the routes of every router at once (a reload).
#[derive(Clone)]
pub struct RouteSwitch(Arc<RwLock<Arc<RouteTable>>>);

impl RouteSwitch {
    /// The routes now in place.
    pub fn routes(&self) -> Vec<Route> {
        read(&self.0).routes.clone()
    }

    /// Puts `routes` in place of the current ones, at once for every
    /// router, and returns the ones replaced. Never waits: a batch being
    /// routed finishes on the table it started with (a queue that must not
    /// take it any more is closed with [`crate::buffer::QueueSender::close`]).
    pub fn replace(&self, routes: Vec<Route>) -> Vec<Route> {
        self.swap(routes, false)
    }

    /// At the stop, once the queues are closed: takes every route away
    /// (returned), and from now on a batch that is routed is rejected.
    pub fn close(&self) -> Vec<Route> {
        self.swap(Vec::new(), true)
    }

    fn swap(&self, routes: Vec<Route>, closed: bool) -> Vec<Route> {
        let mut table = self.0.write().unwrap_or_else(|e| e.into_inner());
        let generation = table.generation + 1;
        let filters = table.filters.clone();
        let old = std::mem::replace(
            &mut *table,
            Arc::new(RouteTable::new(routes, filters, generation, closed)),
        );
        drop(table);
        // a router routing right now may still hold `old`
        Arc::try_unwrap(old)
            .map(|t| t.routes)
            .unwrap_or_else(|shared| shared.routes.clone())
    }
}

impl RouteSwitch {
    /// Puts `filters` in place of the current ones, at once for every
    /// router; a batch being routed finishes with the filters it started
    /// with.
    /// Returns the filters replaced.
    pub fn set_filters(&self, filters: Vec<Arc<dyn Filter>>) -> Arc<[Arc<dyn Filter>]> {
        let mut table = self.0.write().unwrap_or_else(|e| e.into_inner());
        let next = RouteTable::new(
            table.routes.clone(),
            filters.into(),
            table.generation + 1,
            table.closed,
        );
        std::mem::replace(&mut *table, Arc::new(next))
            .filters
            .clone()
    }
}

fn read(table: &RwLock<Arc<RouteTable>>) -> Arc<RouteTable> {
    table.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Most distinct tags a router remembers; past it the cache starts over
/// (tags come from outside, so the cache must not grow without bound).
const MAX_CACHED_TAGS: usize = 4096;

impl Router {
    pub fn new(routes: Vec<Route>, unrouted: Counter) -> Self {
        Router {
            table: Arc::new(RwLock::new(Arc::new(RouteTable::new(
                routes,
                Arc::new([]),
                0,
                false,
            )))),
            cache: HashMap::new(),
            filter_cache: HashMap::new(),
            cache_generation: 0,
            unrouted,
            taps: tap::Taps::default(),
            source_name: None,
            _source: None,
        }
    }

    /// A router for source `name`, and what tells when that source and
    /// every clone it made have let go of it.
    pub fn for_source(&self, name: &str) -> (Router, Released) {
        let (tx, rx) = mpsc::channel(1);
        let router = Router {
            cache: HashMap::new(),
            filter_cache: HashMap::new(),
            source_name: Some(Arc::from(name)),
            _source: Some(tx),
            ..self.clone()
        };
        (router, Released(rx))
    }

    /// Whether some sink keeps its records in a disk buffer, where a batch
    /// is safe from a kill -9 once routed (so a socket source reads as
    /// data arrives: `crate::sources::linger::SocketLinger`).
    pub fn disk_buffered(&self) -> bool {
        self.table
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .disk_buffered
    }

    /// The taps on this router's components (and every clone's).
    pub fn taps(&self) -> tap::Taps {
        self.taps.clone()
    }

    /// This clone routes nothing more for its source: once every clone of
    /// a source's router is released (or dropped), [`Released`] resolves.
    /// A stopping source that still waits for acknowledgements lets go of
    /// its routes first, so the queues can close and drain meanwhile.
    pub fn release(&mut self) {
        self._source = None;
    }

    /// The switch that changes this router's routes and those of its clones.
    pub fn switch(&self) -> RouteSwitch {
        RouteSwitch(self.table.clone())
    }

    /// Routes `batch` to every matching sink queue. Waits while a queue with
    /// `when_full = "block"` is full: this is how backpressure reaches the
    /// source. A batch that matches no sink is counted and acknowledged (no
    /// resend could ever deliver it). The filters whose pattern matches its
    /// tag apply first, in order.
    pub async fn route(&mut self, batch: Batch) -> Result<(), SendError> {
        if let Some(name) = &self.source_name {
            self.taps.offer(name, &batch);
        }
        self.route_from(0, batch).await
    }

    /// Routes `batch` as if filter `filter` had just put it out: it goes
    /// on from the next filter in the file (`logferry test`'s inputs
    /// inserted after a filter). `false` if there is no such filter.
    pub async fn route_after(&mut self, filter: &str, batch: Batch) -> Result<bool, SendError> {
        let table = read(&self.table);
        let Some(i) = table.filters.iter().position(|f| f.name() == filter) else {
            return Ok(false);
        };
        self.route_from(i + 1, batch).await.map(|()| true)
    }

    /// Routes `batch` through the filters from index `start` on, then to
    /// the sinks.
    async fn route_from(&mut self, start: usize, batch: Batch) -> Result<(), SendError> {
        let table = self.current();
        if table.filters.len() <= start {
            return self.send(&table, batch).await;
        }
        let filters = &table.filters;
        let first = cached(&mut self.filter_cache, &batch.tag, |tag| {
            filters
                .iter()
                .enumerate()
                .filter(|(_, f)| f.pattern().matches(tag))
                .map(|(i, _)| i)
                .collect()
        });
        if first.is_empty() {
            return self.send(&table, batch).await;
        }
        let tag = batch.tag.clone();
        self.filter_and_send(&table, vec![(start, batch)], Some((&tag, &first)))
            .await
    }

    /// Runs each `(next filter, batch)` of `work` through the filters from
    /// that one on, then sends what is left. `first`: a tag and the
    /// filters that match it (cached), to skip the pattern matching for
    /// batches that keep that tag.
    async fn filter_and_send(
        &mut self,
        table: &RouteTable,
        work: Vec<(usize, Batch)>,
        first: Option<(&Tag, &[usize])>,
    ) -> Result<(), SendError> {
        let transit = self.apply_filters(table, work, first);
        self.send_all(table, transit).await
    }

    /// Runs each `(next filter, batch)` of `work` through the filters from
    /// that one on; what comes out of the last one is left in the
    /// returned list's `done`.
    fn apply_filters(
        &mut self,
        table: &RouteTable,
        mut work: Vec<(usize, Batch)>,
        first: Option<(&Tag, &[usize])>,
    ) -> InTransit {
        let filters = &table.filters;
        // (the index of the next filter to consider, a batch): a filter's
        // output goes on from the filter after it, so no batch ever meets
        // a filter twice, whatever its tags become
        work.reverse();
        let mut transit = InTransit {
            work,
            done: Default::default(),
        };
        let mut out = Vec::new();
        while let Some((from, b)) = transit.work.pop() {
            let next = match first {
                Some((tag, first)) if b.tag == *tag => first.iter().copied().find(|&i| i >= from),
                _ => (from..filters.len()).find(|&i| filters[i].pattern().matches(&b.tag)),
            };
            match next {
                None => transit.done.push_back(b),
                Some(i) => {
                    filters[i].apply(b, &mut out);
                    if self.taps.active() {
                        for o in &out {
                            self.taps.offer(filters[i].name(), o);
                        }
                    }
                    // popped in the order the filter gave them
                    transit.work.extend(out.drain(..).rev().map(|o| (i + 1, o)));
                }
            }
        }
        // a batch every record of which was filtered out is not here: it
        // was dropped, which settles it (the filter counted its records)
        transit
    }

    /// Sends each batch of `transit.done` in turn; one refused by a closed
    /// queue does not keep the others from theirs (the first error is
    /// returned). A batch not sent yet when this is dropped is rejected.
    async fn send_all(
        &mut self,
        table: &RouteTable,
        mut transit: InTransit,
    ) -> Result<(), SendError> {
        let mut failed = None;
        while let Some(b) = transit.done.pop_front() {
            if let Err(e) = self.send(table, b).await {
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// The table now in place, with the caches made to follow it.
    fn current(&mut self) -> Arc<RouteTable> {
        let table = read(&self.table);
        if table.generation != self.cache_generation {
            self.cache.clear();
            self.filter_cache.clear();
            self.cache_generation = table.generation;
        }
        table
    }

    /// What the filters that hold records put out at `now` (every held
    /// record with `all`), each batch with the index of the filter after
    /// the one that held it. A tap on a holding filter sees these too.
    fn flushed(&mut self, table: &RouteTable, now: Instant, all: bool) -> Vec<(usize, Batch)> {
        let mut work = Vec::new();
        let mut out = Vec::new();
        for (i, f) in table.filters.iter().enumerate() {
            if !f.holds() {
                continue;
            }
            if all || f.deadline().is_some_and(|d| d <= now) {
                f.flush(now, all, &mut out);
                if self.taps.active() {
                    for o in &out {
                        self.taps.offer(f.name(), o);
                    }
                }
                work.extend(out.drain(..).map(|b| (i + 1, b)));
            }
        }
        work
    }

    /// Hands on what filters hold (multiline records) that is due at
    /// `now`, or all of it with `all`: through the filters after the one
    /// that held it, then to the sinks, one batch after another. Returns
    /// when a filter next has something due. A batch not handed to its
    /// sinks yet when this is dropped is rejected (see `transit`).
    pub async fn flush_filters(
        &mut self,
        now: Instant,
        all: bool,
    ) -> Result<Option<Instant>, SendError> {
        let table = self.current();
        let work = self.flushed(&table, now, all);
        if !work.is_empty() {
            let transit = self.apply_filters(&table, work, None);
            self.send_all(&table, transit).await?;
        }
        Ok(table.filters.iter().filter_map(|f| f.deadline()).min())
    }

    /// [`Router::flush_filters`] without waiting for any sink: each batch
    /// goes into the [`SinkFeeds`] of the sinks it is routed to, so a sink
    /// whose queue is full holds up only its own records.
    pub fn flush_filters_to(
        &mut self,
        now: Instant,
        all: bool,
        feeds: &mut SinkFeeds,
    ) -> Option<Instant> {
        let table = self.current();
        feeds.follow(&table);
        let work = self.flushed(&table, now, all);
        self.feed_all(&table, work, feeds);
        table.filters.iter().filter_map(|f| f.deadline()).min()
    }

    /// Retires `replaced` filters (a reload) and sends every record they
    /// hold on through the filters now in place, from the first, as if its
    /// sources sent it again, into `feeds`: a record answered once held is
    /// not lost to a reload, and one nobody was answered for settles with
    /// its sources as it would have.
    pub fn flush_replaced(&mut self, replaced: &[Arc<dyn Filter>], feeds: &mut SinkFeeds) {
        let table = self.current();
        feeds.follow(&table);
        let now = Instant::now();
        let mut work = Vec::new();
        let mut out = Vec::new();
        for f in replaced.iter().filter(|f| f.holds()) {
            f.retire();
            f.flush(now, true, &mut out);
            if self.taps.active() {
                for o in &out {
                    self.taps.offer(f.name(), o);
                }
            }
            work.extend(out.drain(..).map(|b| (0, b)));
        }
        self.feed_all(&table, work, feeds);
    }

    /// Runs `work` through the filters, then puts each batch in the
    /// `feeds` of the sinks it is routed to.
    fn feed_all(&mut self, table: &RouteTable, work: Vec<(usize, Batch)>, feeds: &mut SinkFeeds) {
        if work.is_empty() {
            return;
        }
        let mut transit = self.apply_filters(table, work, None);
        while let Some(b) = transit.done.pop_front() {
            if let Some(targets) = self.targets_of(table, &b) {
                feeds.push(table, &targets, b);
            }
        }
    }

    /// The routes `batch` goes to, shown to their sinks' taps; `None` (the
    /// records counted as unrouted) if no sink's pattern matches its tag.
    fn targets_of(&mut self, table: &RouteTable, batch: &Batch) -> Option<Arc<[usize]>> {
        let routes = &table.routes;
        let targets = targets(&mut self.cache, routes, &batch.tag);
        if self.taps.active() {
            for &i in targets.iter() {
                self.taps.offer(&routes[i].sink, batch);
            }
        }
        if targets.is_empty() {
            self.unrouted.add(batch.count as u64);
            tracing::debug!(tag = %batch.tag, "no sink matches the tag; records dropped");
            return None;
        }
        Some(targets)
    }

    /// Sends `batch` to every sink queue whose pattern matches its tag.
    async fn send(&mut self, table: &RouteTable, batch: Batch) -> Result<(), SendError> {
        if table.closed {
            batch.ack.reject();
            return Err(SendError("*".into()));
        }
        let routes = &table.routes;
        let Some(targets) = self.targets_of(table, &batch) else {
            return Ok(());
        };
        match targets.len() {
            1 => routes[targets[0]].queue.send(batch).await,
            _ => {
                for &i in &targets[..targets.len() - 1] {
                    routes[i].queue.send(batch.clone()).await?;
                }
                routes[targets[targets.len() - 1]].queue.send(batch).await
            }
        }
    }
}

/// The indices of the routes whose pattern matches `tag`, cached per tag.
fn targets(cache: &mut HashMap<Tag, Arc<[usize]>>, routes: &[Route], tag: &Tag) -> Arc<[usize]> {
    cached(cache, tag, |tag| {
        routes
            .iter()
            .enumerate()
            .filter(|(_, r)| r.pattern.matches(tag))
            .map(|(i, _)| i)
            .collect()
    })
}

/// `compute(tag)`, remembered per tag (up to [`MAX_CACHED_TAGS`]).
fn cached(
    cache: &mut HashMap<Tag, Arc<[usize]>>,
    tag: &Tag,
    compute: impl FnOnce(&str) -> Arc<[usize]>,
) -> Arc<[usize]> {
    if let Some(t) = cache.get(tag) {
        return t.clone();
    }
    let t = compute(tag);
    if cache.len() >= MAX_CACHED_TAGS {
        cache.clear();
    }
    cache.insert(tag.clone(), t.clone());
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, tag: &str) -> bool {
        TagPattern::new(p).unwrap().matches(tag)
    }

    #[test]
    fn fluentd_documented_semantics() {
        // from Fluentd's "Config File Syntax: How do the match patterns work?"
        assert!(m("a.*", "a.b"));
        assert!(!m("a.*", "a"));
        assert!(!m("a.*", "a.b.c"));
        assert!(m("a.**", "a"));
        assert!(m("a.**", "a.b"));
        assert!(m("a.**", "a.b.c"));
        assert!(m("{a,b}", "a"));
        assert!(m("{a,b}", "b"));
        assert!(!m("{a,b}", "c"));
        assert!(m("a.{b,c}.**", "a.b"));
        assert!(m("a.{b,c}.**", "a.c.d"));
        assert!(!m("a.{b,c}.**", "a.d"));
        assert!(m("a b", "a"));
        assert!(m("a b", "b"));
        assert!(!m("a b", "c"));
        assert!(m("a.* b.*", "b.x"));
    }

    #[test]
    fn wildcards_inside_parts_and_prefix_double_star() {
        assert!(m("a*", "a"));
        assert!(m("a*", "abc"));
        assert!(!m("a*", "a.b"));
        assert!(m("*a", "cba"));
        assert!(m("**.z", "z"));
        assert!(m("**.z", "x.y.z"));
        assert!(!m("**.z", "xz"));
        assert!(m("a.**.z", "a.z"));
        assert!(m("a.**.z", "a.b.c.z"));
        assert!(!m("a.**.z", "a.bz"));
        assert!(m("**", ""));
        assert!(m("**", "anything.at.all"));
        assert!(m("{a.**,b}", "a.x.y"));
    }

    #[test]
    fn literal_characters_are_not_regex() {
        assert!(m("a+b", "a+b"));
        assert!(!m("a+b", "aab"));
        assert!(!m("a.b", "aab"));
        assert!(m("app-1.(x)", "app-1.(x)"));
    }

    #[test]
    fn any_character_in_a_tag_matches_like_any_other() {
        // tags come from outside: control characters, NUL, non-ASCII and
        // very long tags follow the same rules as letters
        let long = "x".repeat(100_000);
        let odd_parts = [
            "\n", "\r", "\r\n", "\0", "\t", " ", "\u{7f}", "é", "\u{2028}", "a\nb", &long,
        ];
        for odd in odd_parts {
            let show = format!("{odd:?}");
            let show = &show[..show.len().min(40)];
            assert!(m("**", odd), "** vs {show}");
            assert!(m("**", &format!("a.{odd}.b")), "** vs a.{show}.b");
            assert!(m("*", odd), "* vs {show}");
            assert!(!m("*", &format!("{odd}.b")), "* vs {show}.b");
            assert!(m("a.*", &format!("a.{odd}")), "a.* vs a.{show}");
            assert!(!m("a.*", &format!("a.{odd}.c")), "a.* vs a.{show}.c");
            assert!(m("a.**", &format!("a.{odd}")), "a.** vs a.{show}");
            assert!(m("a.**", &format!("a.{odd}.c.d")), "a.** vs a.{show}.c.d");
            assert!(!m("a.**", &format!("b.{odd}")), "a.** vs b.{show}");
            assert!(m("**.b", &format!("{odd}.b")), "**.b vs {show}.b");
            assert!(m("**.b", &format!("x.{odd}.b")), "**.b vs x.{show}.b");
            assert!(!m("**.b", &format!("{odd}b")), "**.b vs {show}b");
            assert!(m("a.**.z", &format!("a.{odd}.z")), "a.**.z vs a.{show}.z");
            assert!(m("{a,b}.*", &format!("b.{odd}")), "{{a,b}}.* vs b.{show}");
            assert!(
                m("a.{b,c}.**", &format!("a.c.{odd}")),
                "a.{{b,c}}.** vs a.c.{show}"
            );
            assert!(m("a*", &format!("a{odd}")), "a* vs a{show}");
            assert!(!m("a", &format!("a{odd}")), "a vs a{show}");
            assert!(!m("a.b", &format!("a.b{odd}")), "a.b vs a.b{show}");
        }
        // NUL is an ordinary character in a pattern too (whitespace is not:
        // it separates alternatives)
        assert!(m("a\0b", "a\0b"));
        assert!(!m("a\0b", "a\nb"));
        assert!(m(&format!("a.{long}"), &format!("a.{long}")));
        // empty parts
        for tag in ["", ".", "..", "a..b", ".a", "a.", "a..", "..a.."] {
            assert!(m("**", tag), "** vs {tag:?}");
        }
        assert!(m("a.**", "a."));
        assert!(m("a.**", "a..b"));
        assert!(m("a.*", "a."));
        assert!(!m("a.*", "a.."));
        assert!(m("**.b", ".b"));
        assert!(m("**.b", "..b"));
    }

    #[test]
    fn a_pattern_means_the_same_whatever_its_literal_characters() {
        // `**.` after a literal character is the same rule for every character
        for c in ["x", "(", "[", "$", "\\", "\0"] {
            let p = format!("{c}**.z");
            assert!(m(&p, &format!("{c}.z")), "{p}");
            assert!(m(&p, &format!("{c}y.z")), "{p}");
            assert!(!m(&p, &format!("{c}z")), "{p}");
        }
        assert_eq!(m("(**.z", "(z"), m("x**.z", "xz"));
    }

    fn route_to(sink: &str, pattern: &str) -> (Route, crate::buffer::QueueReceiver) {
        let (queue, rx) = crate::buffer::queue(
            sink,
            crate::buffer::BufferConfig::default(),
            &crate::metrics::Registry::new(),
        );
        let route = Route {
            sink: Arc::from(sink),
            pattern: TagPattern::new(pattern).unwrap(),
            queue,
        };
        (route, rx)
    }

    fn batch(tag: &str) -> Batch {
        Batch::new(
            tag.into(),
            crate::event::Records::Lines {
                data: bytes::Bytes::from_static(b"x\n"),
                time: crate::event::EventTime::default(),
            },
            1,
        )
    }

    #[tokio::test]
    async fn a_swap_reaches_every_clone_and_its_cached_tags() {
        let (a, mut rx_a) = route_to("a", "**");
        let (b, mut rx_b) = route_to("b", "app.**");
        let mut router = Router::new(vec![a], Counter::detached());
        let mut clone = router.clone();
        router.route(batch("app.x")).await.unwrap();
        clone.route(batch("app.x")).await.unwrap();
        assert!(rx_a.try_recv().is_some() && rx_a.try_recv().is_some());
        drop(router.switch().replace(vec![b]));
        // the old queue closes with its last route gone
        assert!(rx_a.recv().await.is_none());
        // both routers had `app.x` cached for the old table
        router.route(batch("app.x")).await.unwrap();
        clone.route(batch("app.x")).await.unwrap();
        assert!(rx_b.try_recv().is_some() && rx_b.try_recv().is_some());
    }

    #[tokio::test]
    async fn a_router_knows_whether_a_sink_keeps_a_disk_buffer_across_a_swap() {
        let (mem, _mem_rx) = route_to("mem", "**");
        let router = Router::new(vec![mem.clone()], Counter::detached());
        assert!(!router.disk_buffered());
        let dir = tempfile::tempdir().unwrap();
        let config = crate::buffer::BufferConfig {
            kind: crate::buffer::BufferKind::Disk,
            dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let (queue, _disk_rx) =
            crate::buffer::open("disk", config, &crate::metrics::Registry::new()).unwrap();
        let disk = Route {
            sink: Arc::from("disk"),
            pattern: TagPattern::new("only.this").unwrap(),
            queue,
        };
        // a clone made before the reload (an open connection) sees it too
        let (clone, _released) = router.for_source("in");
        drop(router.switch().replace(vec![mem.clone(), disk]));
        assert!(router.disk_buffered() && clone.disk_buffered());
        // filters swapped in keep it
        drop(router.switch().set_filters(Vec::new()));
        assert!(clone.disk_buffered());
        drop(router.switch().replace(vec![mem]));
        assert!(!clone.disk_buffered());
    }

    #[tokio::test]
    async fn after_the_stop_closes_the_routes_a_batch_is_rejected_not_unrouted() {
        use crate::ack::AckOutcome;
        let (a, mut rx_a) = route_to("a", "**");
        let router = Router::new(vec![a], Counter::detached());
        let mut late = router.clone();
        drop(router.switch().close());
        assert!(rx_a.recv().await.is_none(), "the queue ends with its route");
        let (tx, rx) = std::sync::mpsc::channel();
        let b = batch("app.x").with_ack(crate::ack::AckHandle::new(move |o| {
            let _ = tx.send(o);
        }));
        assert!(late.route(b).await.is_err());
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    }

    #[tokio::test]
    async fn a_swap_never_waits_for_a_batch_blocked_on_a_full_queue() {
        tokio::time::pause();
        let full = |name: &str| {
            crate::buffer::queue(
                name,
                crate::buffer::BufferConfig {
                    max_bytes: 1,
                    ..Default::default()
                },
                &crate::metrics::Registry::new(),
            )
        };
        let (dead, mut dead_rx) = full("dead");
        let (healthy, mut healthy_rx) = route_to("healthy", "ok.**");
        let route = Route {
            sink: Arc::from("dead"),
            pattern: TagPattern::new("dead.**").unwrap(),
            queue: dead,
        };
        let mut router = Router::new(vec![route, healthy.clone()], Counter::detached());
        let mut other = router.clone();
        // the first batch fills the dead sink's queue; the second waits
        router.route(batch("dead.x")).await.unwrap();
        let waiting = tokio::spawn(async move { router.route(batch("dead.x")).await });
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        assert!(!waiting.is_finished());
        // the other source keeps routing, and a swap goes through at once
        other.route(batch("ok.x")).await.unwrap();
        assert!(healthy_rx.try_recv().is_some());
        let old = other.switch().replace(vec![healthy]);
        assert_eq!(old.len(), 2);
        other.route(batch("ok.y")).await.unwrap();
        assert!(healthy_rx.try_recv().is_some());
        // closing the replaced queue ends the wait (the batch is refused,
        // not queued: with a handover it would go to the replacement)
        for r in &old {
            r.queue.close();
        }
        drop(old);
        assert!(waiting.await.unwrap().is_err());
        drop(dead_rx.recv().await.unwrap());
        assert!(dead_rx.recv().await.is_none(), "the dead queue closed");
    }

    /// Gives every batch it sees tag `to`, and notes the tags it saw.
    struct Retag {
        pattern: TagPattern,
        to: &'static str,
        seen: std::sync::Mutex<Vec<String>>,
    }

    impl Filter for Retag {
        fn name(&self) -> &str {
            self.to
        }
        fn pattern(&self) -> &TagPattern {
            &self.pattern
        }
        fn apply(&self, mut batch: Batch, out: &mut Vec<Batch>) {
            self.seen.lock().unwrap().push(batch.tag.to_string());
            batch.tag = self.to.into();
            out.push(batch);
        }
    }

    fn retag(pattern: &str, to: &'static str) -> Arc<Retag> {
        Arc::new(Retag {
            pattern: TagPattern::new(pattern).unwrap(),
            to,
            seen: Default::default(),
        })
    }

    #[tokio::test]
    async fn a_new_tag_goes_on_from_the_next_filter_and_never_back() {
        // b.* comes first in the file: a batch that becomes b.x after it
        // does not meet it; c.* comes after and sees it
        let to_a = retag("b.*", "a.y");
        let to_b = retag("a.*", "b.x");
        let to_c = retag("b.*", "c.z");
        let (sink, mut rx) = route_to("out", "**");
        let mut router = Router::new(vec![sink], Counter::detached());
        let filters: Vec<Arc<dyn Filter>> = vec![to_a.clone(), to_b.clone(), to_c.clone()];
        router.switch().set_filters(filters);
        router.route(batch("a.1")).await.unwrap();
        router.route(batch("other")).await.unwrap();
        assert_eq!(&*to_a.seen.lock().unwrap(), &[] as &[String]);
        assert_eq!(&*to_b.seen.lock().unwrap(), &["a.1"]);
        assert_eq!(&*to_c.seen.lock().unwrap(), &["b.x"]);
        assert_eq!(&*rx.try_recv().unwrap().batch().tag, "c.z");
        assert_eq!(&*rx.try_recv().unwrap().batch().tag, "other");
        // the same tag again, from the cache, the same way
        router.route(batch("a.1")).await.unwrap();
        assert_eq!(&*rx.try_recv().unwrap().batch().tag, "c.z");
        assert_eq!(to_c.seen.lock().unwrap().len(), 2);
    }

    /// Holds every batch it is given until it is flushed.
    struct Holder {
        pattern: TagPattern,
        held: std::sync::Mutex<Vec<Batch>>,
    }

    impl Filter for Holder {
        fn name(&self) -> &str {
            "holder"
        }
        fn pattern(&self) -> &TagPattern {
            &self.pattern
        }
        fn apply(&self, batch: Batch, _out: &mut Vec<Batch>) {
            self.held.lock().unwrap().push(batch);
        }
        fn holds(&self) -> bool {
            true
        }
        fn deadline(&self) -> Option<Instant> {
            let held = !self.held.lock().unwrap().is_empty();
            held.then(Instant::now)
        }
        fn flush(&self, _now: Instant, _all: bool, out: &mut Vec<Batch>) {
            out.append(&mut self.held.lock().unwrap());
        }
    }

    /// A router whose `holder` filter holds everything, with a sink
    /// `dead` (`dead.**`) whose queue one batch fills and a sink `ok`
    /// (`ok.**`); and a batch maker whose acknowledgements report to `rx`.
    #[allow(clippy::type_complexity)]
    fn holding_router() -> (
        Router,
        crate::buffer::QueueReceiver,
        crate::buffer::QueueReceiver,
        impl Fn(&str) -> Batch,
        std::sync::mpsc::Receiver<(String, crate::ack::AckOutcome)>,
    ) {
        let (dead, dead_rx) = crate::buffer::queue(
            "dead",
            crate::buffer::BufferConfig {
                max_bytes: 1,
                ..Default::default()
            },
            &crate::metrics::Registry::new(),
        );
        let dead = Route {
            sink: Arc::from("dead"),
            pattern: TagPattern::new("dead.**").unwrap(),
            queue: dead,
        };
        let (ok, ok_rx) = route_to("ok", "ok.**");
        let router = Router::new(vec![dead, ok], Counter::detached());
        let holder: Arc<dyn Filter> = Arc::new(Holder {
            pattern: TagPattern::new("**").unwrap(),
            held: Default::default(),
        });
        router.switch().set_filters(vec![holder]);
        let (tx, rx) = std::sync::mpsc::channel();
        let make = move |tag: &str| {
            let (tx, name) = (tx.clone(), tag.to_string());
            batch(tag).with_ack(crate::ack::AckHandle::new(move |o| {
                let _ = tx.send((name, o));
            }))
        };
        (router, dead_rx, ok_rx, make, rx)
    }

    #[tokio::test]
    async fn flushed_batches_dropped_before_their_queue_took_them_are_rejected() {
        use crate::ack::AckOutcome;
        let (mut router, mut dead_rx, _ok_rx, make, acks) = holding_router();
        // the first fills the dead queue; the next two wait behind it
        for tag in ["dead.1", "dead.2", "dead.3"] {
            router.route(make(tag)).await.unwrap();
        }
        let flush = router.flush_filters(Instant::now(), true);
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(100), flush).await;
        assert!(gave_up.is_err(), "the dead queue has no room");
        let mut got: Vec<_> = acks.try_iter().collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            [
                ("dead.2".to_string(), AckOutcome::Rejected),
                ("dead.3".to_string(), AckOutcome::Rejected)
            ],
            "the batch being queued and the one after it"
        );
        dead_rx.try_recv().unwrap().accept();
        assert_eq!(
            acks.try_recv(),
            Ok(("dead.1".to_string(), AckOutcome::Accepted))
        );
    }

    #[tokio::test]
    async fn a_full_queue_holds_up_only_its_own_flushed_batches() {
        use crate::ack::AckOutcome;
        let (mut router, mut dead_rx, mut ok_rx, make, acks) = holding_router();
        let mut feeds = SinkFeeds::default();
        for tag in ["dead.1", "dead.2"] {
            router.route(make(tag)).await.unwrap();
        }
        // each flush reaches the healthy sink, the dead one's queue full
        for tag in ["ok.1", "ok.2"] {
            router.route(make(tag)).await.unwrap();
            router.flush_filters_to(Instant::now(), true, &mut feeds);
            let ok = tokio::time::timeout(std::time::Duration::from_secs(10), ok_rx.recv())
                .await
                .expect("the healthy sink is fed")
                .unwrap();
            assert_eq!(&*ok.batch().tag, tag);
            ok.accept();
            assert_eq!(acks.recv(), Ok((tag.to_string(), AckOutcome::Accepted)));
        }
        // what the dead sink's feed could not queue is rejected when it gives up
        assert!(!feeds.finish(std::time::Duration::from_millis(100)).await);
        let mut waited = 0;
        let rejected = loop {
            // the aborted feed lets go of its batches on the runtime
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            if let Ok(a) = acks.try_recv() {
                break a;
            }
            waited += 1;
            assert!(waited < 1000, "dead.2 never settled");
        };
        assert_eq!(rejected, ("dead.2".to_string(), AckOutcome::Rejected));
        let dead = dead_rx.try_recv().unwrap();
        assert_eq!(&*dead.batch().tag, "dead.1");
        dead.accept();
        assert_eq!(
            acks.try_recv(),
            Ok(("dead.1".to_string(), AckOutcome::Accepted))
        );
    }

    #[test]
    fn negative_alternatives_exclude_what_they_match() {
        // Fluentd's first match: `<match app.**>` then `<match **>`
        assert!(m("** !app.**", "db.slow"));
        assert!(!m("** !app.**", "app"));
        assert!(!m("** !app.**", "app.web.access"));
        assert!(m("** !app.**", "apps"));
        assert!(m("{a,b}.* !a.x !b.y", "a.y"));
        assert!(!m("{a,b}.* !a.x !b.y", "b.y"));
        // the order of the alternatives does not matter
        assert!(!m("!app.** **", "app.web"));
        assert!(m("!app.** **", "web"));
        assert!(!m("a.** !**", "a.b"));
        assert!(TagPattern::new("!app.**").is_err());
        assert!(TagPattern::new("** !").is_err());
        assert!(TagPattern::new("** !{a").is_err());
    }

    #[test]
    fn unbalanced_braces_are_an_error() {
        assert!(TagPattern::new("{a,b").is_err());
        assert!(TagPattern::new("   ").is_err());
    }
}
