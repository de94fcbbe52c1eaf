//! logferry: a log collector and forwarder.
//!
//! Sources → router → one bounded queue per sink → sink. See `docs/` for the
//! user documentation.

pub mod ack;
pub mod api;
pub mod backoff;
pub mod bench;
pub mod buffer;
pub mod cli;
pub mod component;
pub mod config;
pub mod event;
pub mod filters;
pub mod format;
pub mod http_client;
pub mod kafka_client;
pub mod kube;
pub mod limits;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod net;
pub mod protocol;
pub mod router;
pub mod sinks;
pub mod sources;
pub mod telemetry;
pub mod timer;
pub mod tls;
pub mod top;
pub mod topology;
pub mod wake;
