//! List, then watch from the list's `resourceVersion`, for pods (of one
//! node, or all) and namespaces.
//!
//! - A list reads pages of [`PAGE`] objects with `continue`; the cache is
//!   replaced in place when the last page is in.
//! - A watch asks for bookmarks and ends after about five minutes
//!   (`timeoutSeconds`, jittered so that agents started together do not
//!   come back together); it resumes from the last version seen (events
//!   and bookmarks move it).
//! - `410 Gone` (an answer, or an ERROR event): the version is no longer
//!   in the server's history; a fresh list replaces the cache, which stays
//!   readable meanwhile.
//! - Errors (refused connections, 5xx, 429, a broken stream) back off from
//!   250 ms to 30 s with jitter; a streak of them is logged once, at its
//!   start, and once more when the server answers again; every one is
//!   counted. 401 reads the token again; 403 says which permission the
//!   account lacks, and is retried every 30 s.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::api::{Api, ApiError, Resource, ERROR_KINDS, PAGE};
use super::cache::Store;
use super::objects::MAX_LINE_BYTES;
use super::stream::{apply_line, Lines, Stored};
use super::{Namespace, Pod, WatchOptions};
use crate::backoff::backoff_with_jitter;
use crate::component::Shutdown;
use crate::metrics::{Counter, Histogram, Registry};
use crate::telemetry::ErrorKinds;

/// The fewest objects a list page is cut down to when pages are too large.
const MIN_PAGE: usize = 10;
/// How long a watch lasts, before jitter (±10 %).
const WATCH_SECONDS: u64 = 300;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The wait between attempts refused 403: a permission is missing, and
/// only an administrator can grant it.
const FORBIDDEN_RETRY: Duration = Duration::from_secs(30);

/// The metrics of one source's or filter's watches.
#[derive(Clone)]
struct Metrics {
    /// `logferry_kubernetes_api_errors_total{kind}`.
    errors: ErrorKinds,
    /// `logferry_kubernetes_watch_restarts_total{reason}`, one per reason.
    restarts_gone: Counter,
    restarts_ended: Counter,
    restarts_error: Counter,
    /// Watch lines that could not be applied.
    skipped_lines: Counter,
    /// How long each full list took.
    list_seconds: Histogram,
}

impl Metrics {
    fn new(r: &Registry, component: &str, resource: &str) -> Metrics {
        let restarts = |reason| {
            r.counter(
                "logferry_kubernetes_watch_restarts_total",
                "Watches of the Kubernetes API started again, by resource and reason (ended: its timeout; gone: 410, after a fresh list; error).",
                &[("component", component), ("resource", resource), ("reason", reason)],
            )
        };
        Metrics {
            errors: ErrorKinds::new(
                r,
                "logferry_kubernetes_api_errors_total",
                "Failed requests to the Kubernetes API and watch lines that could not be read, by kind.",
                component,
                ERROR_KINDS,
            ),
            restarts_gone: restarts("gone"),
            restarts_ended: restarts("ended"),
            restarts_error: restarts("error"),
            skipped_lines: r.counter(
                "logferry_kubernetes_watch_skipped_lines_total",
                "Watch lines skipped: unreadable, or longer than 4 MiB.",
                &[("component", component), ("resource", resource)],
            ),
            list_seconds: r.histogram(
                "logferry_kubernetes_list_seconds",
                "How long a full list of the Kubernetes API took.",
                &[("component", component), ("resource", resource)],
            ),
        }
    }
}

/// Spawns the watches `options` asks for and the evictor of deleted
/// objects, on `runtime`.
pub fn spawn(
    api: Arc<Api>,
    store: Arc<Store>,
    options: &WatchOptions,
    registry: &Registry,
    component: &str,
    shutdown: Shutdown,
    runtime: &tokio::runtime::Handle,
) {
    // read at each scrape; a cache gone (its source replaced by a reload)
    // reads 0
    let held = Arc::downgrade(&store);
    registry.computed(
        "logferry_kubernetes_pods_cached",
        "Pods in the metadata cache (deleted ones in their delete_grace included).",
        &[("component", component)],
        move || held.upgrade().map_or(0.0, |s| s.pods_held() as f64),
    );
    let held = Arc::downgrade(&store);
    registry.computed(
        "logferry_kubernetes_namespaces_cached",
        "Namespaces in the metadata cache (deleted ones in their delete_grace included).",
        &[("component", component)],
        move || held.upgrade().map_or(0.0, |s| s.namespaces_held() as f64),
    );
    let mut resources = vec![Resource::Pods(options.node_name.clone())];
    if options.namespaces {
        resources.push(Resource::Namespaces);
    }
    for resource in resources {
        let watcher = Watcher {
            api: api.clone(),
            store: store.clone(),
            metrics: Metrics::new(registry, component, resource.name()),
            component: component.to_string(),
            resource,
        };
        let shutdown = shutdown.clone();
        runtime.spawn(async move {
            match watcher.resource {
                Resource::Namespaces => watcher.run::<Namespace>(shutdown).await,
                Resource::Pods(_) => watcher.run::<Pod>(shutdown).await,
            }
        });
    }
    let evictor = store.clone();
    runtime.spawn(async move {
        evictor.run_evictions(shutdown).await;
    });
}

/// The list + watch of one resource.
struct Watcher {
    /// Shared by the watches of one source or filter.
    api: Arc<Api>,
    /// Where what is listed and watched goes.
    store: Arc<Store>,
    metrics: Metrics,
    /// The source's or filter's name, in logs.
    component: String,
    /// What this watcher lists and watches.
    resource: Resource,
}

/// Errors in a row: logged at the first, and when they end.
#[derive(Default)]
struct Streak {
    /// Failed attempts in a row: the backoff grows with them.
    failures: u32,
    /// When the first of them failed; `None`: no streak to report.
    since: Option<Instant>,
}

impl Watcher {
    async fn run<T: Stored>(self, mut shutdown: Shutdown) {
        let mut streak = Streak::default();
        let mut first = true;
        // smaller after a page too large to read
        let mut page = PAGE;
        'list: loop {
            let started = Instant::now();
            let listed = tokio::select! {
                r = self.api.list::<T>(&self.resource, page) => r,
                _ = shutdown.wait() => return,
            };
            let mut version = match listed {
                Ok((items, version)) => {
                    let count = items.len();
                    T::replace(&self.store, items, &version);
                    self.metrics
                        .list_seconds
                        .observe(started.elapsed().as_secs_f64());
                    self.recovered(&mut streak);
                    if first {
                        first = false;
                        tracing::info!(
                            component = %self.component,
                            resource = self.resource.name(),
                            count,
                            version = %version,
                            "kubernetes: first list in ({count} {})",
                            self.resource.name()
                        );
                    }
                    version
                }
                Err(e) => {
                    if e == ApiError::TooLarge {
                        page = (page / 2).max(MIN_PAGE);
                    }
                    if !self.failed(e, &mut streak, &mut shutdown).await {
                        return;
                    }
                    continue 'list;
                }
            };
            // watches in a row that the server ended within a second
            let mut quick = 0;
            loop {
                let started = Instant::now();
                let watched = tokio::select! {
                    r = self.watch::<T>(&mut version, &mut streak) => r,
                    _ = shutdown.wait() => return,
                };
                match watched {
                    Ok(()) => {
                        self.metrics.restarts_ended.inc();
                        // a server that ends every watch at once is not
                        // asked again in a tight loop
                        if started.elapsed() >= Duration::from_secs(1) {
                            quick = 0;
                            continue;
                        }
                        quick += 1;
                        let wait = backoff_with_jitter(FIRST_BACKOFF, MAX_BACKOFF, quick, 0.2);
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = shutdown.wait() => return,
                        }
                    }
                    Err(ApiError::Gone) => {
                        self.metrics.restarts_gone.inc();
                        self.metrics.errors.count("gone");
                        tracing::info!(
                            component = %self.component,
                            resource = self.resource.name(),
                            "kubernetes: watch version {version} is gone (410); listing again"
                        );
                        continue 'list;
                    }
                    Err(e) => {
                        self.metrics.restarts_error.inc();
                        if !self.failed(e, &mut streak, &mut shutdown).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// One watch from `version`, until it ends; events are applied as they
    /// come.
    async fn watch<T: Stored>(
        &self,
        version: &mut String,
        streak: &mut Streak,
    ) -> Result<(), ApiError> {
        let seconds = jittered(WATCH_SECONDS);
        let mut body = self.api.watch(&self.resource, version, seconds).await?;
        // the server answers: an error streak ends here, not when this
        // watch ends minutes later
        self.recovered(streak);
        let mut lines = Lines::default();
        loop {
            let Some(chunk) = body.chunk().await.map_err(ApiError::Send)? else {
                return Ok(());
            };
            let mut ended = None;
            lines.push(
                &chunk,
                |line| {
                    if ended.is_some() {
                        return;
                    }
                    match apply_line::<T>(&self.store, line, version) {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => ended = Some(e),
                        Err(e) => {
                            self.metrics.skipped_lines.inc();
                            crate::warn_counted!(
                                self.metrics.errors,
                                "decode",
                                component = %self.component,
                                error = %e,
                                "kubernetes: a watch line could not be read; skipped"
                            );
                        }
                    }
                },
                || {
                    self.metrics.skipped_lines.inc();
                    crate::warn_counted!(
                        self.metrics.errors,
                        "too_large",
                        component = %self.component,
                        "kubernetes: a watch line longer than {MAX_LINE_BYTES} bytes; skipped"
                    );
                },
            );
            if let Some(e) = ended {
                return Err(e);
            }
        }
    }

    fn recovered(&self, streak: &mut Streak) {
        if streak.failures > 0 {
            if let Some(since) = streak.since {
                tracing::info!(
                    component = %self.component,
                    resource = self.resource.name(),
                    failures = streak.failures,
                    "kubernetes: the API server answers again after {:.1} s",
                    since.elapsed().as_secs_f64()
                );
            }
        }
        *streak = Streak::default();
    }

    /// Counts `e`, logs it if it starts a streak, and waits before the
    /// next attempt; false when stopped meanwhile.
    async fn failed(&self, e: ApiError, streak: &mut Streak, shutdown: &mut Shutdown) -> bool {
        streak.failures += 1;
        let first = streak.since.is_none();
        streak.since.get_or_insert_with(Instant::now);
        self.metrics.errors.count(e.kind());
        let resource = self.resource.name();
        let mut wait = backoff_with_jitter(FIRST_BACKOFF, MAX_BACKOFF, streak.failures, 0.2);
        match &e {
            ApiError::Forbidden(_) => {
                wait = FORBIDDEN_RETRY;
                if first {
                    tracing::error!(
                        component = %self.component,
                        resource,
                        kind = "forbidden",
                        error = %e,
                        "kubernetes: {}; retrying every {} s",
                        self.resource.permission(),
                        FORBIDDEN_RETRY.as_secs()
                    );
                }
            }
            ApiError::Unauthorized => {
                self.api.token_refused();
                if first {
                    tracing::warn!(component = %self.component, resource, kind = "unauthorized", error = %e,
                        "kubernetes: the API server refused the token; reading it again and retrying");
                }
            }
            ApiError::Throttled(Some(after)) => {
                wait = wait.max(*after).min(MAX_BACKOFF);
            }
            _ => {}
        }
        if first && !matches!(e, ApiError::Forbidden(_) | ApiError::Unauthorized) {
            tracing::warn!(
                component = %self.component,
                resource,
                kind = e.kind(),
                error = %e,
                "kubernetes: the API server cannot be read; the metadata held stays in use, retrying with backoff"
            );
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = shutdown.wait() => false,
        }
    }
}

/// `seconds` ±10 %.
fn jittered(seconds: u64) -> u64 {
    backoff_with_jitter(
        Duration::from_secs(seconds),
        Duration::from_secs(seconds * 2),
        1,
        0.1,
    )
    .as_secs()
    .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::objects::tests::pod_json;

    #[test]
    fn watches_last_about_five_minutes_each() {
        for _ in 0..20 {
            let j = jittered(300);
            assert!((270..=330).contains(&j), "{j}");
        }
    }

    /// An API server that answers requests in the order given, one
    /// answer a connection, and records what was asked.
    async fn scripted(answers: Vec<(u16, String)>) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = asked.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            // the last connection, a watch, stays open
            for answer in answers.into_iter().map(Some).chain([None]) {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split(' ').nth(1).unwrap_or("").to_string();
                log.lock().unwrap().push(path);
                let Some((status, body)) = answer else {
                    held.push(s);
                    continue;
                };
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{body}"
                );
                let _ = s.write_all(answer.as_bytes()).await;
            }
            std::future::pending::<()>().await;
            drop(held);
        });
        (url, asked)
    }

    fn list(items: &[(&str, &str, u64)], version: u64, next: &str) -> String {
        let items: Vec<String> = items
            .iter()
            .map(|(name, uid, v)| pod_json(name, uid, *v))
            .collect();
        format!(
            r#"{{"kind":"PodList","metadata":{{"resourceVersion":"{version}","continue":"{next}"}},"items":[{}]}}"#,
            items.join(",")
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_resume_bookmarks_and_gone_lead_to_the_right_requests() {
        let modified_a = format!(
            "{{\"type\":\"MODIFIED\",\"object\":{}}}\n",
            pod_json("a", "ua", 21).replace(r#""tier":"frontend""#, r#""tier":"backend""#)
        );
        let answers = vec![
            (200, list(&[("a", "ua", 10)], 20, "c1+/=")),
            (200, list(&[("b", "ub", 11)], 20, "")),
            (
                200,
                modified_a
                    + "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"25\"}}}\n",
            ),
            (410, r#"{"kind":"Status","code":410,"reason":"Expired"}"#.into()),
            (200, list(&[("a", "ua", 21)], 31, "")),
            (
                200,
                "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old resource version\"}}\n".into(),
            ),
            (500, r#"{"kind":"Status","code":500,"message":"etcd down"}"#.into()),
            (200, list(&[("a", "ua", 21)], 40, "")),
        ];
        let (url, asked) = scripted(answers).await;
        let registry = Registry::new();
        let (stop, shutdown) = crate::component::shutdown_channel();
        let settings = crate::kube::ApiSettings {
            api_server: Some(url),
            ..Default::default()
        };
        let options = WatchOptions {
            node_name: Some("node-a".into()),
            namespaces: false,
            delete_grace: Duration::from_secs(60),
        };
        let m = crate::kube::Metadata::start(
            &settings,
            options,
            &registry,
            "k8s",
            shutdown,
            &tokio::runtime::Handle::current(),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while asked.lock().unwrap().len() < 9 {
            assert!(
                Instant::now() < deadline,
                "asked only {:?}",
                asked.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let asked = asked.lock().unwrap().clone();
        let selector = "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&";
        let watch = |v: &str| {
            format!(
                "{selector}watch=1&allowWatchBookmarks=true&resourceVersion={v}&timeoutSeconds="
            )
        };
        assert_eq!(asked[0], format!("{selector}limit=500"));
        assert_eq!(
            asked[1],
            format!("{selector}limit=500&continue=c1%2B%2F%3D")
        );
        assert!(asked[2].starts_with(&watch("20")), "{}", asked[2]);
        // the watch ended: resumed from its bookmark, not the list
        assert!(asked[3].starts_with(&watch("25")), "{}", asked[3]);
        // 410: listed again, and watched from that list
        assert_eq!(asked[4], format!("{selector}limit=500"));
        assert!(asked[5].starts_with(&watch("31")), "{}", asked[5]);
        // an ERROR 410 event: listed again; a 500: listed again after a wait
        assert_eq!(asked[6], format!("{selector}limit=500"));
        assert_eq!(asked[7], format!("{selector}limit=500"));
        assert!(asked[8].starts_with(&watch("40")), "{}", asked[8]);
        let a = m.pod("ua").unwrap();
        assert_eq!(a.labels["tier"], "backend");
        // b, gone from the fresh list, is kept (deleted) for its grace
        assert!(m.pod("ub").is_some());
        assert_eq!(m.pod_named("demo", "b").unwrap().uid, "ub");
        let value = |name, labels: &[(&str, &str)]| registry.value(name, labels);
        assert_eq!(
            value(
                "logferry_kubernetes_watch_restarts_total",
                &[("reason", "gone")]
            ),
            2
        );
        assert_eq!(
            value(
                "logferry_kubernetes_watch_restarts_total",
                &[("reason", "ended")]
            ),
            1
        );
        assert_eq!(
            value(
                "logferry_kubernetes_api_errors_total",
                &[("kind", "server")]
            ),
            1
        );
        stop.trigger();
    }
}
