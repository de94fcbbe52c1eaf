//! logferry: a log collector and forwarder.
//!
//! Sources → router → one bounded queue per sink → sink. See `docs/` for the
//! user documentation and `DESIGN.md` for the architecture.

pub mod ack;
pub mod buffer;
pub mod event;
pub mod format;
pub mod metrics;
pub mod protocol;
pub mod router;
