//! Sources: where records enter the pipeline.

pub mod forward;
pub mod fuse;
pub mod generator;
pub mod http;
pub mod kafka;
pub mod linger;
pub mod tail;
pub mod tcp;

use crate::component::{SourceContext, SourceTask};
use crate::config::{ComponentTable, KindError};
use forward::{ForwardSource, ForwardSourceConfig};
use fuse::{FuseSource, FuseSourceConfig};
use generator::{GeneratorConfig, GeneratorSource};
use http::{HttpSource, HttpSourceConfig};
use kafka::{KafkaSource, KafkaSourceConfig};
use tail::{TailSource, TailSourceConfig};
use tcp::{TcpSource, TcpSourceConfig};

/// The configured type of a source.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    Forward(ForwardSourceConfig),
    Fuse(Box<FuseSourceConfig>),
    Generator(GeneratorConfig),
    Http(HttpSourceConfig),
    Kafka(Box<KafkaSourceConfig>),
    Tail(Box<TailSourceConfig>),
    Tcp(TcpSourceConfig),
}

/// Known `type` names, for error messages.
const KNOWN: &str = "forward, fuse, generator, http, kafka, tail, tcp";

pub fn parse_kind(name: &str, table: ComponentTable<'_>) -> Result<SourceKind, KindError> {
    Ok(match name {
        "forward" => SourceKind::Forward(table.parse()?),
        "fuse" => SourceKind::Fuse(Box::new(table.parse()?)),
        "generator" => SourceKind::Generator(table.parse()?),
        "http" => SourceKind::Http(table.parse()?),
        "kafka" => SourceKind::Kafka(Box::new(table.parse()?)),
        "tail" => SourceKind::Tail(Box::new(table.parse()?)),
        "tcp" => SourceKind::Tcp(table.parse()?),
        _ => return Err(KindError::Unknown(KNOWN)),
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
            SourceKind::Kafka(_) => "kafka",
            SourceKind::Tail(_) => "tail",
            SourceKind::Tcp(_) => "tcp",
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            SourceKind::Forward(c) => c.validate(),
            SourceKind::Fuse(c) => c.validate(),
            SourceKind::Generator(c) => c.validate(),
            SourceKind::Http(c) => c.validate(),
            SourceKind::Kafka(c) => c.validate(),
            SourceKind::Tail(c) => c.validate(),
            SourceKind::Tcp(c) => c.validate(),
        }
    }
}

/// Starts the source: binds listeners now (so start-up fails on a taken
/// port), and returns the task that runs it.
pub async fn start(kind: SourceKind, cx: SourceContext) -> Result<SourceTask, String> {
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
        SourceKind::Kafka(c) => Box::pin(KafkaSource::new(*c, cx)?.run()),
        SourceKind::Tail(c) => {
            let source = TailSource::new(*c, cx)?;
            on_own_thread("tail", source.run())?
        }
        SourceKind::Tcp(c) => {
            let source = TcpSource::bind(c, cx).await?;
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

/// What source tests use to look at what a source hands over.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use crate::buffer::{queue, BufferConfig, QueueReceiver};
    use crate::component::{shutdown_channel, ShutdownTrigger, SourceContext};
    use crate::metrics::Registry;
    use crate::router::{Route, Router, TagPattern};

    /// A context for source `name` whose router sends every tag to two
    /// sinks' memory queues (so each batch is also copied by the router),
    /// the trigger that stops the source, and the two queues.
    pub fn two_sinks(name: &str) -> (SourceContext, ShutdownTrigger, [QueueReceiver; 2]) {
        let metrics = Registry::new();
        let (tx_a, rx_a) = queue("a", BufferConfig::default(), &metrics);
        let (tx_b, rx_b) = queue("b", BufferConfig::default(), &metrics);
        let route = |sink: &str, queue| Route {
            sink: Arc::from(sink),
            pattern: TagPattern::new("**").expect("a valid pattern"),
            queue,
        };
        let router = Router::new(
            vec![route("a", tx_a), route("b", tx_b)],
            metrics.counter("unrouted", "", &[]),
        );
        let (trigger, shutdown) = shutdown_channel();
        let cx = SourceContext {
            name: Arc::from(name),
            router,
            shutdown,
            metrics,
            memory: crate::memory::MemoryBudget::unlimited(),
        };
        (cx, trigger, [rx_a, rx_b])
    }
}
