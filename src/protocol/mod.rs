//! Wire formats logferry speaks.

pub mod forward;
pub mod json;
pub mod msgpack;
pub mod otlp;
pub mod protobuf;
pub mod syslog;
