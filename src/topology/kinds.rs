//! The table of kinds: which `type = "..."` is which source, filter or sink, how
//! its table is parsed, and how it is started. The only place (with the
//! checks in [`super::validate`] and [`super::limits`]) that knows every
//! kind; adding one means a line in each match here.

use std::time::Duration;

use crate::component::{SourceContext, SourceTask};
use crate::config::{ComponentTable, KindError};
use crate::filters::grep::{GrepConfig, GrepFilter};
use crate::filters::kubernetes::{KubernetesFilter, KubernetesFilterConfig};
use crate::filters::modify::{ModifyConfig, ModifyFilter};
use crate::filters::multiline::{MultilineFilter, MultilineFilterConfig};
use crate::filters::parser::{ParserConfig, ParserFilter};
use crate::filters::remap::{RemapConfig, RemapFilter};
use crate::filters::rewrite_tag::{RewriteTagConfig, RewriteTagFilter};
use crate::filters::sample::{SampleConfig, SampleFilter};
use crate::filters::throttle::{ThrottleConfig, ThrottleFilter};
use crate::metrics::Registry;
use crate::router::{Filter, TagPattern};
use crate::sinks::counter::{CounterSink, CounterSinkConfig};
use crate::sinks::file::{FileSink, FileSinkConfig};
use crate::sinks::forward::{ForwardSink, ForwardSinkConfig};
use crate::sinks::http::config::HttpSinkConfig;
use crate::sinks::http::HttpSink;
use crate::sinks::kafka::{KafkaMetrics, KafkaSink, KafkaSinkConfig};
use crate::sinks::loki::{LokiSink, LokiSinkConfig};
use crate::sinks::null::{NullSink, NullSinkConfig};
use crate::sinks::opensearch::{OpenSearchSink, OpenSearchSinkConfig};
use crate::sinks::otlp::{OtlpSink, OtlpSinkConfig};
use crate::sinks::s3::{config::S3SinkConfig, S3Sink};
use crate::sinks::settle::{SettleConfig, Settler};
use crate::sinks::splunk_hec::{SplunkHecSink, SplunkHecSinkConfig};
use crate::sinks::stdout::{StdoutSink, StdoutSinkConfig};
use crate::sinks::syslog::{SyslogSink, SyslogSinkConfig};
use crate::sinks::verdict::RetryConfig;
use crate::sinks::{SinkMetrics, SinkRunner};
use crate::sources::forward::{ForwardSource, ForwardSourceConfig};
use crate::sources::fuse::{FuseSource, FuseSourceConfig};
use crate::sources::generator::{GeneratorConfig, GeneratorSource};
use crate::sources::http::{HttpSource, HttpSourceConfig};
use crate::sources::journald::{JournaldSource, JournaldSourceConfig};
use crate::sources::kafka::{KafkaSource, KafkaSourceConfig};
use crate::sources::kubernetes::{KubernetesSource, KubernetesSourceConfig};
use crate::sources::otlp::{OtlpSource, OtlpSourceConfig};
use crate::sources::tail::{TailSource, TailSourceConfig};
use crate::sources::tcp::{TcpSource, TcpSourceConfig};
use crate::sources::udp::{UdpSource, UdpSourceConfig};

/// The configured type of a source.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    Forward(ForwardSourceConfig),
    Fuse(Box<FuseSourceConfig>),
    Generator(GeneratorConfig),
    Http(HttpSourceConfig),
    Journald(Box<JournaldSourceConfig>),
    Kafka(Box<KafkaSourceConfig>),
    Kubernetes(Box<KubernetesSourceConfig>),
    Otlp(Box<OtlpSourceConfig>),
    Tail(Box<TailSourceConfig>),
    Tcp(TcpSourceConfig),
    Udp(UdpSourceConfig),
}

/// Known `type` names, for error messages.
const KNOWN_SOURCES: &str =
    "forward, fuse, generator, http, journald, kafka, kubernetes, otlp, tail, tcp, udp";

/// The typed config of a source of `type = name`.
pub fn parse_source(name: &str, table: ComponentTable<'_>) -> Result<SourceKind, KindError> {
    Ok(match name {
        "forward" => SourceKind::Forward(table.parse()?),
        "fuse" => SourceKind::Fuse(Box::new(table.parse()?)),
        "generator" => SourceKind::Generator(table.parse()?),
        "http" => SourceKind::Http(table.parse()?),
        "journald" => SourceKind::Journald(Box::new(table.parse()?)),
        "kafka" => SourceKind::Kafka(Box::new(table.parse()?)),
        "kubernetes" => SourceKind::Kubernetes(Box::new(table.parse()?)),
        "otlp" => SourceKind::Otlp(Box::new(table.parse()?)),
        "tail" => SourceKind::Tail(Box::new(table.parse()?)),
        "tcp" => SourceKind::Tcp(table.parse()?),
        "udp" => SourceKind::Udp(table.parse()?),
        _ => return Err(KindError::Unknown(KNOWN_SOURCES)),
    })
}

impl SourceKind {
    /// The `type` this source was configured with (`forward`, `tail`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            SourceKind::Forward(_) => "forward",
            SourceKind::Fuse(_) => "fuse",
            SourceKind::Generator(_) => "generator",
            SourceKind::Http(_) => "http",
            SourceKind::Journald(_) => "journald",
            SourceKind::Kafka(_) => "kafka",
            SourceKind::Kubernetes(_) => "kubernetes",
            SourceKind::Otlp(_) => "otlp",
            SourceKind::Tail(_) => "tail",
            SourceKind::Tcp(_) => "tcp",
            SourceKind::Udp(_) => "udp",
        }
    }

    /// Whether the source reads on a thread of its own ([`on_own_thread`])
    /// rather than on the shared runtime.
    pub fn reads_on_own_thread(&self) -> bool {
        matches!(self, SourceKind::Tail(_) | SourceKind::Kubernetes(_))
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            SourceKind::Forward(c) => c.validate(),
            SourceKind::Fuse(c) => c.validate(),
            SourceKind::Generator(c) => c.validate(),
            SourceKind::Http(c) => c.validate(),
            SourceKind::Journald(c) => c.validate(),
            SourceKind::Kafka(c) => c.validate(),
            SourceKind::Kubernetes(c) => c.validate(),
            SourceKind::Otlp(c) => c.validate(),
            SourceKind::Tail(c) => c.validate(),
            SourceKind::Tcp(c) => c.validate(),
            SourceKind::Udp(c) => c.validate(),
        }
    }
}

/// Starts the source: binds listeners now (so start-up fails on a taken
/// port), and returns the task that runs it.
pub async fn start_source(kind: SourceKind, cx: SourceContext) -> Result<SourceTask, String> {
    Ok(match kind {
        SourceKind::Forward(c) => {
            let source = ForwardSource::bind(c, cx).await?;
            Box::pin(source.run())
        }
        SourceKind::Fuse(c) => Box::pin(FuseSource::mount(*c, cx)?.run()),
        SourceKind::Generator(c) => Box::pin(GeneratorSource::new(c, cx).run()),
        SourceKind::Http(c) => {
            let source = HttpSource::bind(c, cx).await?;
            Box::pin(source.run())
        }
        SourceKind::Journald(c) => Box::pin(JournaldSource::start(*c, cx).await?.run()),
        SourceKind::Kafka(c) => Box::pin(KafkaSource::new(*c, cx)?.run()),
        SourceKind::Kubernetes(c) => {
            let source = KubernetesSource::new(*c, cx)?;
            on_own_thread("kubernetes", source.run())?
        }
        SourceKind::Otlp(c) => {
            let source = OtlpSource::bind(*c, cx).await?;
            Box::pin(source.run())
        }
        SourceKind::Tail(c) => {
            let source = TailSource::new(*c, cx)?;
            on_own_thread("tail", source.run())?
        }
        SourceKind::Tcp(c) => {
            let source = TcpSource::bind(c, cx).await?;
            Box::pin(source.run())
        }
        SourceKind::Udp(c) => {
            let source = UdpSource::bind(c, cx).await?;
            Box::pin(source.run())
        }
    })
}

/// Runs `task` on a thread of its own (with a single-threaded runtime), for
/// sources whose work blocks: file reads must not stall the network
/// sources' runtime. The returned task ends when it does.
fn on_own_thread(
    name: &str,
    task: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SourceTask, String> {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(format!("source-{name}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime always builds");
            rt.block_on(task);
            let _ = done_tx.send(());
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    Ok(Box::pin(async move {
        let _ = done_rx.await;
    }))
}

/// The address a source listens on, if it listens.
pub fn listen_address(kind: &SourceKind) -> Option<&str> {
    match kind {
        SourceKind::Forward(c) => Some(&c.address),
        SourceKind::Http(c) => Some(&c.address),
        SourceKind::Otlp(c) => Some(&c.http.address),
        SourceKind::Tcp(c) => Some(&c.address),
        // a UDP port is not a TCP listener's: it takes none of theirs
        SourceKind::Udp(_) => None,
        SourceKind::Fuse(_)
        | SourceKind::Generator(_)
        | SourceKind::Journald(_)
        | SourceKind::Kafka(_)
        | SourceKind::Kubernetes(_)
        | SourceKind::Tail(_) => None,
    }
}

/// The one tag every record of a source has, when the configuration says
/// it; `None` when tags come from clients, topics or file paths.
pub fn known_tag(kind: &SourceKind) -> Option<&str> {
    match kind {
        SourceKind::Generator(c) => Some(&c.tag),
        SourceKind::Tcp(c) => Some(&c.tag),
        SourceKind::Udp(c) => Some(&c.tag),
        SourceKind::Tail(c) if !c.tag.contains('*') => Some(&c.tag),
        SourceKind::Kafka(c) if !c.tag.contains("${topic}") => Some(&c.tag),
        _ => None,
    }
}

/// The configured type of a sink.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkKind {
    File(FileSinkConfig),
    Forward(Box<ForwardSinkConfig>),
    Stdout(StdoutSinkConfig),
    Syslog(SyslogSinkConfig),
    Null(NullSinkConfig),
    Counter(CounterSinkConfig),
    Kafka(Box<KafkaSinkConfig>),
    Http(Box<HttpSinkConfig>),
    Loki(Box<LokiSinkConfig>),
    OpenSearch(Box<OpenSearchSinkConfig>),
    Otlp(Box<OtlpSinkConfig>),
    S3(Box<S3SinkConfig>),
    SplunkHec(Box<SplunkHecSinkConfig>),
}

/// Known `type` names, for error messages.
const KNOWN_SINKS: &str =
    "file, forward, http, loki, opensearch, otlp, s3, splunk_hec, stdout, syslog, null, counter, kafka";

/// The typed config of a sink of `type = name`.
pub fn parse_sink(name: &str, table: ComponentTable<'_>) -> Result<SinkKind, KindError> {
    Ok(match name {
        "file" => SinkKind::File(table.parse()?),
        "forward" => SinkKind::Forward(Box::new(table.parse()?)),
        "http" => SinkKind::Http(Box::new(table.parse()?)),
        "loki" => SinkKind::Loki(Box::new(table.parse()?)),
        "opensearch" | "elasticsearch" => SinkKind::OpenSearch(Box::new(table.parse()?)),
        "otlp" => SinkKind::Otlp(Box::new(table.parse()?)),
        "s3" => SinkKind::S3(Box::new(table.parse()?)),
        "splunk_hec" => SinkKind::SplunkHec(Box::new(table.parse()?)),
        "stdout" => SinkKind::Stdout(table.parse()?),
        "syslog" => SinkKind::Syslog(table.parse()?),
        "null" => SinkKind::Null(table.parse()?),
        "counter" => SinkKind::Counter(table.parse()?),
        "kafka" => SinkKind::Kafka(Box::new(table.parse()?)),
        _ => return Err(KindError::Unknown(KNOWN_SINKS)),
    })
}

impl SinkKind {
    /// The `type` this sink was configured with (`file`, `forward`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            SinkKind::File(_) => "file",
            SinkKind::Forward(_) => "forward",
            SinkKind::Http(_) => "http",
            SinkKind::Loki(_) => "loki",
            SinkKind::OpenSearch(_) => "opensearch",
            SinkKind::Otlp(_) => "otlp",
            SinkKind::S3(_) => "s3",
            SinkKind::SplunkHec(_) => "splunk_hec",
            SinkKind::Stdout(_) => "stdout",
            SinkKind::Syslog(_) => "syslog",
            SinkKind::Null(_) => "null",
            SinkKind::Counter(_) => "counter",
            SinkKind::Kafka(_) => "kafka",
        }
    }

    /// Its `drain_timeout`, for the sinks that have one (forward, Kafka).
    pub fn drain_timeout(&self) -> Option<Duration> {
        match self {
            SinkKind::Forward(c) => Some(c.drain_timeout),
            SinkKind::Kafka(c) => Some(c.drain_timeout),
            SinkKind::Http(c) => Some(c.request.drain_timeout),
            SinkKind::Loki(c) => Some(c.request.drain_timeout),
            SinkKind::OpenSearch(c) => Some(c.request.drain_timeout),
            SinkKind::Otlp(c) => Some(c.request.drain_timeout),
            SinkKind::S3(c) => Some(c.drain_timeout),
            SinkKind::SplunkHec(c) => Some(c.request.drain_timeout),
            SinkKind::File(_)
            | SinkKind::Stdout(_)
            | SinkKind::Syslog(_)
            | SinkKind::Null(_)
            | SinkKind::Counter(_) => None,
        }
    }

    /// Whether the shared `retry` table applies (forward and Kafka sinks
    /// keep their own, documented retry keys).
    pub fn takes_retry_table(&self) -> bool {
        !matches!(self, SinkKind::Forward(_) | SinkKind::Kafka(_))
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            SinkKind::File(c) => c.validate(),
            SinkKind::Forward(c) => c.validate(),
            SinkKind::Http(c) => c.validate(),
            SinkKind::Loki(c) => c.validate(),
            SinkKind::OpenSearch(c) => c.validate(),
            SinkKind::Otlp(c) => c.validate(),
            SinkKind::S3(c) => c.validate(),
            SinkKind::SplunkHec(c) => c.validate(),
            SinkKind::Stdout(c) => c.format.validate(),
            SinkKind::Syslog(c) => c.validate(),
            SinkKind::Null(_) => Ok(()),
            SinkKind::Counter(c) => c.validate(),
            SinkKind::Kafka(c) => c.validate(),
        }
    }
}

/// Builds the sink for `kind`, with its dead-letter file and retry
/// settings (`settle`).
pub fn build_sink(
    name: &str,
    kind: SinkKind,
    settle: &SettleConfig,
    metrics: &Registry,
) -> Result<SinkRunner, String> {
    let m = SinkMetrics::new(metrics, name);
    let settler =
        |retry: RetryConfig, m: SinkMetrics| Settler::from_config(name, metrics, m, retry, settle);
    let retry = settle.retry.unwrap_or_default();
    Ok(match kind {
        SinkKind::File(c) => SinkRunner::Blocking(Box::new(
            FileSink::new(name, c, m.clone(), metrics)?.settled_by(settler(retry, m)?),
        )),
        SinkKind::Forward(c) => {
            let retry = c.retry_config();
            SinkRunner::Forward(Box::new(ForwardSink::new(
                name,
                *c,
                metrics,
                settler(retry, m.clone())?,
                m,
            )?))
        }
        SinkKind::Stdout(c) => {
            SinkRunner::Blocking(Box::new(StdoutSink::new(c, settler(retry, m.clone())?, m)?))
        }
        SinkKind::Syslog(c) => SinkRunner::Blocking(Box::new(SyslogSink::new(
            name,
            c,
            settler(retry, m.clone())?,
            m,
            metrics,
        )?)),
        SinkKind::Http(c) => SinkRunner::Http(Box::new(HttpSink::new(
            name,
            *c,
            settler(retry, m)?,
            metrics,
        )?)),
        SinkKind::Loki(c) => SinkRunner::Loki(Box::new(LokiSink::new(
            name,
            *c,
            settler(retry, m)?,
            metrics,
        )?)),
        SinkKind::OpenSearch(c) => SinkRunner::OpenSearch(Box::new(OpenSearchSink::new(
            name,
            *c,
            settler(retry, m)?,
            metrics,
        )?)),
        SinkKind::Otlp(c) => SinkRunner::Otlp(Box::new(OtlpSink::new(
            name,
            *c,
            settler(retry, m)?,
            metrics,
        )?)),
        SinkKind::S3(c) => SinkRunner::S3(Box::new(S3Sink::new(
            name,
            *c,
            settler(retry, m)?,
            metrics,
        )?)),
        SinkKind::SplunkHec(c) => SinkRunner::SplunkHec(Box::new(SplunkHecSink::new(
            name,
            *c,
            settler(retry, m)?,
            metrics,
        )?)),
        SinkKind::Null(_) => SinkRunner::Blocking(Box::new(NullSink::new(m))),
        SinkKind::Counter(c) => SinkRunner::Blocking(Box::new(CounterSink::new(name, c, m))),
        SinkKind::Kafka(c) => {
            let retry = c.retry_config();
            let kafka = KafkaMetrics::new(metrics, name, &c.client_properties());
            SinkRunner::Kafka(Box::new(KafkaSink::new(
                name,
                *c,
                settler(retry, m.clone())?,
                m,
                kafka,
            )?))
        }
    })
}

/// The configured type of a filter.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterKind {
    Grep(GrepConfig),
    Kubernetes(Box<KubernetesFilterConfig>),
    Modify(ModifyConfig),
    Multiline(MultilineFilterConfig),
    Parser(ParserConfig),
    Remap(Box<RemapConfig>),
    RewriteTag(RewriteTagConfig),
    Sample(SampleConfig),
    Throttle(ThrottleConfig),
}

/// Known filter `type` names, for error messages.
const KNOWN_FILTERS: &str =
    "grep, kubernetes, modify, multiline, parser, remap, rewrite_tag, sample, throttle";

/// The typed config of a filter of `type = name`.
pub fn parse_filter(name: &str, table: ComponentTable<'_>) -> Result<FilterKind, KindError> {
    Ok(match name {
        "grep" => FilterKind::Grep(table.parse()?),
        "kubernetes" => FilterKind::Kubernetes(Box::new(table.parse()?)),
        "modify" => FilterKind::Modify(table.parse()?),
        "multiline" => FilterKind::Multiline(table.parse()?),
        "parser" => FilterKind::Parser(table.parse()?),
        "remap" => FilterKind::Remap(Box::new(table.parse()?)),
        "rewrite_tag" => FilterKind::RewriteTag(table.parse()?),
        "sample" => FilterKind::Sample(table.parse()?),
        "throttle" => FilterKind::Throttle(table.parse()?),
        _ => return Err(KindError::Unknown(KNOWN_FILTERS)),
    })
}

impl FilterKind {
    /// Whether the filter may give records another tag.
    pub fn changes_tags(&self) -> bool {
        match self {
            FilterKind::RewriteTag(_) => true,
            FilterKind::Parser(c) => c.failed_tag.is_some(),
            FilterKind::Remap(c) => c.changes_tags(),
            _ => false,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            FilterKind::Grep(c) => c.validate(),
            FilterKind::Kubernetes(c) => c.validate(),
            FilterKind::Modify(c) => c.validate(),
            FilterKind::Multiline(c) => c.validate(),
            FilterKind::Parser(c) => c.validate(),
            FilterKind::Remap(c) => c.validate(),
            FilterKind::RewriteTag(c) => c.validate(),
            FilterKind::Sample(c) => c.validate(),
            FilterKind::Throttle(c) => c.validate(),
        }
    }
}

/// The running filter `name`, applied to the tags `pattern` matches.
pub fn build_filter(
    name: &str,
    pattern: TagPattern,
    kind: &FilterKind,
    metrics: &Registry,
) -> Result<std::sync::Arc<dyn Filter>, String> {
    Ok(match kind {
        FilterKind::Grep(c) => std::sync::Arc::new(GrepFilter::new(name, pattern, c, metrics)?),
        FilterKind::Kubernetes(c) => {
            std::sync::Arc::new(KubernetesFilter::new(name, pattern, c, metrics)?)
        }
        FilterKind::Modify(c) => std::sync::Arc::new(ModifyFilter::new(name, pattern, c, metrics)?),
        FilterKind::Multiline(c) => {
            std::sync::Arc::new(MultilineFilter::new(name, pattern, c, metrics)?)
        }
        FilterKind::Parser(c) => std::sync::Arc::new(ParserFilter::new(name, pattern, c, metrics)?),
        FilterKind::Remap(c) => std::sync::Arc::new(RemapFilter::new(name, pattern, c, metrics)?),
        FilterKind::RewriteTag(c) => {
            std::sync::Arc::new(RewriteTagFilter::new(name, pattern, c, metrics)?)
        }
        FilterKind::Sample(c) => std::sync::Arc::new(SampleFilter::new(name, pattern, c, metrics)?),
        FilterKind::Throttle(c) => {
            std::sync::Arc::new(ThrottleFilter::new(name, pattern, c, metrics)?)
        }
    })
}
