//! Wire formats logferry speaks.

pub mod forward;
pub mod msgpack;
