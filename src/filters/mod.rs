//! Filters: the third kind of component, between the sources and the
//! sinks. Each `[filters.NAME]` table has a `type` and a `match` pattern;
//! the router applies them in the order of the configuration file, each to
//! the batches whose tag it matches (see [`crate::router::Filter`]).
//!
//! A filter keeps acknowledgements whole: the records it lets through keep
//! their batch's acknowledgement, and those it drops settle with them, so
//! a source moves past a filtered record exactly when it would have moved
//! past it delivered, never before.

pub mod field;
pub mod grep;
pub mod kubernetes;
pub mod modify;
pub mod multiline;
pub mod parser;
mod records;
pub mod remap;
pub mod rewrite_tag;
pub mod sample;
pub mod throttle;
pub mod value;

use crate::metrics::{Counter, Registry};

/// Records that reached filter `name` of type `kind`.
fn records_counter(metrics: &Registry, name: &str, kind: &'static str) -> Counter {
    metrics.counter(
        "logferry_filter_records_total",
        "Records that reached the filter.",
        &[("component", name), ("component_type", kind)],
    )
}

/// Records filter `name` of type `kind` dropped on purpose (settled as
/// filtered).
fn dropped_counter(metrics: &Registry, name: &str, kind: &'static str) -> Counter {
    metrics.counter(
        "logferry_filter_dropped_records_total",
        "Records the filter dropped on purpose; they are acknowledged with their batch.",
        &[("component", name), ("component_type", kind)],
    )
}
