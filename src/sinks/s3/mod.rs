//! `type = "s3"`: records into objects of an S3 bucket (or an
//! S3-compatible store: MinIO, Ceph, s3s), acknowledged to their sources
//! only once the object holding them is stored.
//!
//! - `config.rs`: the settings and credentials;
//! - `key.rs`: object keys (`${tag}/%Y/%m/%d/%H/{unique}.log.gz`);
//! - `object.rs`: the objects being built, and when they roll;
//! - `upload.rs`: one `PUT`, or a multipart upload, and its errors;
//! - `journal.rs`: multipart uploads in progress, aborted after a crash;
//! - `check.rs`: the bucket check at start (`/ready` from the start).
//!
//! SigV4 and the S3 protocol come from `object_store` (feature `aws`),
//! not `aws-sdk-s3`: it adds seven crates to the build (it reuses the
//! `reqwest`, `hyper`, `rustls` and `ring` already here), where the SDK
//! brings the smithy runtime and `aws-lc-rs` (a C and assembly build of
//! its own), several minutes of cold build for the same requests. Its
//! `MultipartStore` exposes the upload id, which the journal needs. Its
//! own retries are off: the shared [`Settler`] retries, gives up and
//! dead-letters, as for every sink. Every request is signed over its
//! body (`x-amz-content-sha256`, see `build_store`).
//!
//! Delivery: the batches of an object are held (and count in the memory
//! budget, with the encoded body) until the object is stored; then all
//! are accepted. A failed upload is tried again after the backoff, the
//! whole object; one the store refuses for good is set aside (dead
//! letter). A crash before the object is stored leaves its records
//! unacknowledged (sent again by their sources or kept in the disk
//! buffer) and at most an unfinished multipart upload, which the journal
//! aborts at the next start; a crash between the store and the
//! acknowledgement gives one object twice, never a record missing.

pub mod check;
pub mod config;
pub mod journal;
pub mod key;
pub mod object;
pub mod upload;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use self::check::{bucket_url, BucketCheck, BucketProbe};
use self::config::S3SinkConfig;
use self::journal::Journal;
use self::key::KeyTemplate;
use self::object::{Objects, OpenObject, Unreadable};
use self::upload::{Bucket, UploadError};
use super::http::config::Compression;
use super::http::encode::{compress, Encoder};
use super::settle::{Settled, Settler};
use super::verdict::{Rejection, Verdict};
use crate::buffer::{Gathered, QueueReceiver};
use crate::metrics::{Counter, Gauge, Registry};
use crate::telemetry::ErrorKinds;

/// Kinds of `logferry_sink_s3_errors_total`.
const ERROR_KINDS: &[&str] = &["auth", "not_found", "refused", "journal", "request"];

/// Most queued deliveries added to their objects before due objects are
/// stored: a bound on the wait of the client that made one due.
const QUEUED_AT_ONCE: usize = 4096;

/// Longest the bucket check at start may take (records wait meanwhile).
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a sink waiting for a retry looks whether it is being stopped.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// The `s3` sink.
pub struct S3Sink {
    name: String,
    bucket: Bucket,
    journal: Journal,
    objects: Objects,
    /// Records → object bodies (before compression).
    encoder: Encoder,
    compression: Compression,
    settler: Settler,
    drain_timeout: Duration,
    /// Longest one request may take.
    request_timeout: Duration,
    /// Upload failures by kind (each logged).
    errors: ErrorKinds,
    /// 1 while the bucket check at start and the last upload succeeded
    /// (feeds `/ready`).
    connected: Gauge,
    /// 1 while the store refuses the credentials (`/ready` says so).
    credentials_refused: Gauge,
    /// The `HEAD` on the bucket at start.
    probe: BucketProbe,
    /// Objects stored.
    objects_stored: Counter,
    /// Of those, stored as multipart uploads.
    multipart: Counter,
    /// Unfinished multipart uploads aborted at start.
    aborted: Counter,
    /// Records never encoded (unreadable frames).
    bad_records: Counter,
}

impl S3Sink {
    pub fn new(
        name: &str,
        c: S3SinkConfig,
        settler: Settler,
        registry: &Registry,
    ) -> Result<S3Sink, String> {
        c.validate()?;
        let (store, probe) = build_store(&c)?;
        let journal = Journal::open(c.state_dir.as_deref(), name).map_err(|e| {
            format!(
                "state_dir: cannot read the multipart journal in {:?}: {e}",
                c.state_dir
            )
        })?;
        let l = &[("component", name)];
        let connected = registry.gauge(
            crate::metrics::CONNECTED_METRIC,
            "Servers a sink is connected to now (0: it cannot deliver).",
            l,
        );
        // not ready until the bucket check at start has answered
        connected.set(0);
        Ok(S3Sink {
            name: name.to_string(),
            bucket: Bucket {
                store: Arc::new(store),
                part_bytes: c.multipart_part_bytes,
            },
            journal,
            objects: Objects::new(
                KeyTemplate::parse(&c.key)?,
                c.max_object_bytes,
                c.max_object_age,
                None,
            ),
            encoder: Encoder::new(&c.encoding())?,
            compression: c.compression,
            settler,
            drain_timeout: c.drain_timeout,
            request_timeout: c.request_timeout,
            errors: ErrorKinds::new(
                registry,
                "logferry_sink_s3_errors_total",
                "Failed uploads of the s3 sink, by kind: auth, not_found, refused, journal, request.",
                name,
                ERROR_KINDS,
            ),
            connected,
            credentials_refused: registry.gauge(
                "logferry_sink_s3_credentials_refused",
                "1 while the store refuses the s3 sink's credentials (the bucket check at start, or the last upload).",
                l,
            ),
            probe,
            objects_stored: registry.counter(
                "logferry_sink_s3_objects_total",
                "Objects the s3 sink stored.",
                l,
            ),
            multipart: registry.counter(
                "logferry_sink_s3_multipart_uploads_total",
                "Objects the s3 sink stored as multipart uploads.",
                l,
            ),
            aborted: registry.counter(
                "logferry_sink_s3_aborted_uploads_total",
                "Unfinished multipart uploads of an earlier run aborted at start.",
                l,
            ),
            bad_records: registry.counter(
                "logferry_sink_s3_bad_records_total",
                "Records the s3 sink could not read (rejected to their source).",
                l,
            ),
        })
    }

    /// Runs until the queue is closed and the open objects are stored
    /// (or `drain_timeout` passed).
    pub async fn run(mut self, mut rx: QueueReceiver) {
        // a stop does not wait for the check
        tokio::select! {
            _ = self.check_bucket() => {}
            _ = closed(&rx) => {}
        }
        let aborted = self.bucket.abort_left(&mut self.journal, &self.name).await;
        self.aborted.add(aborted as u64);
        self.objects.set_held_limit(rx.held_limit());
        let mut stop_by = None;
        // on a disk buffer the batches wait there while an object is open,
        // taken when it is due or a MiB of them has come, not one wake-up
        // each (their sources were answered when they reached the disk)
        let gather = rx.is_disk();
        let mut timer = crate::timer::Deadline::new_if(gather);
        loop {
            let due = self.objects.next_due();
            let ready = tokio::select! {
                next = super::next_batch(&mut rx, &mut timer, due.filter(|_| gather), usize::MAX, super::GATHER_BYTES) => match next {
                    Gathered::Batch(d) => {
                        let mut ready = match self.objects.add(d, &mut self.encoder, chrono::Utc::now()) {
                            Ok(ready) => ready,
                            Err(bad) => {
                                self.unreadable(*bad);
                                Vec::new()
                            }
                        };
                        // a gathering sink's objects close when due, however
                        // much is still queued
                        if gather && due.is_some_and(|at| Instant::now() >= at) {
                            ready.extend(self.take_due(&mut rx));
                        }
                        ready
                    }
                    Gathered::Timeout => self.take_due(&mut rx),
                    Gathered::Closed => break,
                },
                _ = crate::timer::sleep_until_opt(due), if !gather => self.take_due(&mut rx),
            };
            for o in ready {
                if !self.store(o, &rx, &mut stop_by).await {
                    return;
                }
            }
        }
        let stop_by = stop_by.unwrap_or_else(|| Instant::now() + self.drain_timeout);
        for o in self.objects.take_all() {
            if !self.store(o, &rx, &mut Some(stop_by)).await {
                return;
            }
        }
    }

    /// The objects due now, with what is queued already added first.
    fn take_due(&mut self, rx: &mut QueueReceiver) -> Vec<OpenObject> {
        let mut ready = self.add_queued(rx);
        ready.extend(self.objects.take_due(Instant::now()));
        ready
    }

    /// Adds the deliveries queued now (at most [`QUEUED_AT_ONCE`]) to
    /// their objects; returns the objects that filled.
    fn add_queued(&mut self, rx: &mut QueueReceiver) -> Vec<OpenObject> {
        let mut ready = Vec::new();
        for _ in 0..QUEUED_AT_ONCE {
            let Some(d) = rx.try_recv() else { break };
            match self.objects.add(d, &mut self.encoder, chrono::Utc::now()) {
                Ok(full) => ready.extend(full),
                Err(bad) => self.unreadable(*bad),
            }
        }
        ready
    }

    fn unreadable(&self, bad: Unreadable) {
        self.bad_records.add(bad.delivery.batch().count as u64);
        tracing::error!(sink = %self.name, error = %bad.error,
            "cannot read a batch's records; rejected");
        bad.delivery.reject();
    }

    /// The `HEAD` on the bucket at start: `/ready` and the log say at once
    /// when the credentials or the bucket are wrong. Records are taken
    /// either way; the first upload that succeeds makes the sink ready.
    async fn check_bucket(&self) {
        let limit = CHECK_TIMEOUT.min(self.request_timeout);
        let found = tokio::time::timeout(limit, self.probe.check(&self.bucket.store))
            .await
            .unwrap_or_else(|_| {
                BucketCheck::Failed(format!("the store did not answer within {limit:?}"))
            });
        self.credentials_refused.set(u64::from(matches!(
            found,
            BucketCheck::CredentialsRefused(_)
        )));
        let Some(kind) = found.error_kind() else {
            self.connected.set(1);
            return;
        };
        self.errors.count(kind);
        match found {
            BucketCheck::CredentialsRefused(why) => {
                tracing::error!(sink = %self.name, error = %why,
                "the store refused the credentials (a wrong key id or secret, or no s3:ListBucket grant); not ready until an upload succeeds")
            }
            BucketCheck::NoBucket(why) => tracing::error!(sink = %self.name, error = %why,
                "the bucket does not exist; not ready until an upload succeeds"),
            BucketCheck::Failed(why) => tracing::warn!(sink = %self.name, error = %why,
                "the bucket check at start failed; not ready until an upload succeeds"),
            BucketCheck::Ready => {}
        }
    }

    /// Stores `o`, retrying, and settles its batches; false if the stop's
    /// `drain_timeout` passed first (its batches are then dropped
    /// unsettled: not acknowledged, sent again by their sources).
    async fn store(
        &mut self,
        o: OpenObject,
        rx: &QueueReceiver,
        stop_by: &mut Option<Instant>,
    ) -> bool {
        let OpenObject {
            key,
            body,
            mut deliveries,
            records,
            ..
        } = o;
        let Some(first) = deliveries.first() else {
            return true;
        };
        // the compressed body too is a copy of the records
        let raw_len = body.len();
        let body = Bytes::from(compress(self.compression, body));
        let _charge = first.batch().memory.charge_apart(body.len());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let stored = {
                let upload = self.bucket.store(&key, body.clone(), &mut self.journal);
                match *stop_by {
                    Some(at) => match tokio::time::timeout_at(at, upload).await {
                        Ok(r) => r,
                        Err(_) => return self.gave_up(records),
                    },
                    None => upload.await,
                }
            };
            let verdict = match stored {
                Ok(multipart) => {
                    self.connected.set(1);
                    self.credentials_refused.set(0);
                    self.objects_stored.inc();
                    if multipart {
                        self.multipart.inc();
                    }
                    self.settler.metrics().bytes.add(body.len() as u64);
                    tracing::debug!(sink = %self.name, key, records, bytes = body.len(), raw_bytes = raw_len, "object stored");
                    Verdict::Delivered
                }
                Err(e) => {
                    self.connected.set(0);
                    self.credentials_refused.set(u64::from(e.kind() == "auth"));
                    self.errors.count(e.kind());
                    tracing::warn!(sink = %self.name, key, kind = e.kind(), error = %e, attempt, "upload failed");
                    match e {
                        UploadError::Retry { .. } => self.settler.retry_verdict(attempt),
                        UploadError::Refused { kind, message } => Verdict::Rejected {
                            reason: Rejection { kind, message },
                        },
                    }
                }
            };
            match self.settler.settle(deliveries, attempt, verdict) {
                Settled::Retry { after, items } => {
                    deliveries = items;
                    if !wait(after, rx, stop_by, self.drain_timeout).await {
                        drop(deliveries);
                        return self.gave_up(records);
                    }
                }
                Settled::Accepted => {
                    // the store answers again: what failed attempts left
                    // goes now, not at the next start
                    self.bucket
                        .abort_abandoned(&mut self.journal, &self.name)
                        .await;
                    return true;
                }
                Settled::Rejected { .. } => return true,
            }
        }
    }

    fn gave_up(&self, records: usize) -> bool {
        tracing::error!(sink = %self.name, records, drain_timeout = ?self.drain_timeout,
            "drain_timeout passed before an object was stored; its records are not acknowledged");
        false
    }
}

/// Sleeps `after`; false if the stop's deadline passes first (set
/// `drain_timeout` after the queue closes).
async fn wait(
    after: Duration,
    rx: &QueueReceiver,
    stop_by: &mut Option<Instant>,
    drain_timeout: Duration,
) -> bool {
    let until = Instant::now() + after;
    loop {
        if stop_by.is_none() && rx.is_closed() {
            // counted from the stop, as in the request-based sinks
            *stop_by = Some(Instant::now() + drain_timeout);
        }
        if stop_by.is_some_and(|at| at <= Instant::now()) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        let step = (until - now).min(STOP_CHECK);
        tokio::time::sleep(step).await;
    }
}

/// Returns once the queue is closed (the sink is being stopped).
async fn closed(rx: &QueueReceiver) {
    while !rx.is_closed() {
        tokio::time::sleep(STOP_CHECK).await;
    }
}

/// The store's URL: `endpoint`, else `AWS_ENDPOINT_URL` or `AWS_ENDPOINT`
/// from the environment (`env` reads a variable), which object_store
/// would otherwise take as the bucket's own URL; `None`: AWS.
fn endpoint(c: &S3SinkConfig, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    c.endpoint.clone().or_else(|| {
        ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
            .into_iter()
            .find_map(|k| env(k).filter(|v| !v.is_empty()))
    })
}

/// The URL requests go to: `endpoint` itself with path-style addressing,
/// else the bucket's host under it (`http://bucket.host:port`), as
/// object_store expects.
fn bucket_endpoint(endpoint: &str, bucket: &str, path_style: bool) -> Result<String, String> {
    let e = endpoint.trim_end_matches('/');
    if path_style {
        return Ok(e.to_string());
    }
    let (scheme, rest) = e
        .split_once("://")
        .ok_or_else(|| format!("endpoint {endpoint:?}: write http(s)://host[:port]"))?;
    Ok(format!("{scheme}://{bucket}.{rest}"))
}

/// The client of the bucket, as configured, and the bucket check with
/// the same client settings.
fn build_store(c: &S3SinkConfig) -> Result<(object_store::aws::AmazonS3, BucketProbe), String> {
    use object_store::aws::AmazonS3Builder;
    use object_store::{ClientOptions, RetryConfig};
    // without a proxy_url, reqwest's own: HTTP(S)_PROXY, ALL_PROXY, NO_PROXY
    let mut options = ClientOptions::new()
        .with_timeout(c.request_timeout)
        .with_allow_http(true);
    if let Some(p) = &c.proxy_url {
        options = options.with_proxy_url(p.expose());
    }
    // the environment first (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    // AWS_SESSION_TOKEN, web identity, ECS), the settings over it; with no
    // key pair, object_store asks the instance metadata service
    let mut b = AmazonS3Builder::from_env()
        .with_bucket_name(&c.bucket)
        .with_region(&c.region)
        .with_virtual_hosted_style_request(!c.force_path_style)
        // every request signed, its body included (`x-amz-content-sha256`
        // is the body's SHA-256, not `UNSIGNED-PAYLOAD`), over https too:
        // on a plain http endpoint it is the only check that the store
        // stored the bytes sent, and it costs one SHA-256 pass over the
        // compressed object. Set here so AWS_UNSIGNED_PAYLOAD and
        // AWS_SKIP_SIGNATURE in the environment cannot turn it off.
        .with_unsigned_payload(false)
        .with_skip_signature(false)
        .with_client_options(options.clone())
        .with_retry(RetryConfig {
            max_retries: 0,
            retry_timeout: c.request_timeout,
            ..RetryConfig::default()
        });
    let mut bucket_at = None;
    if let Some(e) = endpoint(c, |k| std::env::var(k).ok()) {
        let at = bucket_endpoint(&e, &c.bucket, c.force_path_style)?;
        b = b.with_endpoint(&at);
        bucket_at = Some(at);
    }
    let url = bucket_url(
        bucket_at.as_deref(),
        &c.bucket,
        &c.region,
        c.force_path_style,
    );
    let probe = BucketProbe::new(&options, url, &c.region)?;
    if let Some((id, secret)) = c.credentials()? {
        b = b.with_access_key_id(id).with_secret_access_key(secret);
    } else if let Some(f) = c.file_credentials(|k| std::env::var(k).ok())? {
        // the shared credentials file comes before web identity, ECS and
        // instance metadata, as in the AWS SDKs' chain
        b = b
            .with_access_key_id(f.access_key_id)
            .with_secret_access_key(f.secret_access_key);
        if let Some(t) = f.session_token {
            b = b.with_token(t);
        }
    }
    let store = b.build().map_err(|e| format!("s3: {e}"))?;
    Ok((store, probe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_from_the_environment_is_the_stores_not_the_buckets() {
        let c: S3SinkConfig = toml::from_str("bucket = \"logs\"").unwrap();
        let env = |k: &str| (k == "AWS_ENDPOINT").then(|| "http://127.0.0.1:9000".to_string());
        let e = endpoint(&c, env).unwrap();
        assert_eq!(
            bucket_endpoint(&e, "logs", false).unwrap(),
            "http://logs.127.0.0.1:9000"
        );
        assert_eq!(endpoint(&c, |_| None), None);
        let set: S3SinkConfig =
            toml::from_str("bucket = \"logs\"\nendpoint = \"http://s3.test\"").unwrap();
        assert_eq!(endpoint(&set, env).as_deref(), Some("http://s3.test"));
    }

    #[test]
    fn virtual_hosts_put_the_bucket_in_the_host() {
        assert_eq!(
            bucket_endpoint("http://127.0.0.1:9000/", "logs", true).unwrap(),
            "http://127.0.0.1:9000"
        );
        assert_eq!(
            bucket_endpoint("https://s3.example.com", "logs", false).unwrap(),
            "https://logs.s3.example.com"
        );
    }
}
