//! `logferry test --config FILE`: runs the `[[tests]]` tables of a
//! configuration (Vector's `vector test`). Each test builds the file's
//! filters as `run` does ([`super::build_filters`]) and routes its inputs
//! with the same router, from a source or from after a filter; what
//! reaches each sink, or leaves a filter, is read through a tap
//! ([`crate::router::tap`]). No source or sink is started: nothing
//! listens, connects or writes.

pub mod compare;
pub mod spec;

use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize as _;

use super::config::Config;
use super::kinds;
use crate::buffer::{BufferConfig, QueueReceiver};
use crate::event::{Batch, EventTime, Records};
use crate::metrics::{Counter, Registry};
use crate::router::tap::{TapHandle, TapRequest};
use crate::router::{Route, Router};
use spec::{Point, TestSpec};

/// Why tests could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    #[error("no [[tests]] tables in the file")]
    NoTests,
    #[error("{at}: {message}")]
    Invalid { at: TestPlace, message: String },
}

/// Where a test is in the file: the line of its `[[tests]]` header, or
/// (for tests not written as headers) its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestPlace {
    Line(usize),
    Number(usize),
}

impl std::fmt::Display for TestPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TestPlace::Line(l) => write!(f, "line {l}: [[tests]]"),
            TestPlace::Number(n) => write!(f, "[[tests]] #{n}"),
        }
    }
}

/// The outcome of one test.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: String,
    /// Where the test is in the file.
    pub place: TestPlace,
    /// Every difference found; empty when it passed.
    pub failures: Vec<String>,
    /// Why the test could not be run (then `failures` is empty): a fault
    /// of the test, not of the pipeline it tests.
    pub error: Option<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.error.is_none()
    }
}

/// `logferry test`'s exit status: 0 when every test passed, 2 when one
/// could not be run, else 1.
pub fn exit_code(outcomes: &[Outcome]) -> u8 {
    if outcomes.iter().any(|o| o.error.is_some()) {
        2
    } else if outcomes.iter().all(Outcome::passed) {
        0
    } else {
        1
    }
}

/// The line of each `[[tests]]` header of the configuration `text` (of
/// each item of `tests:` in YAML), in order.
fn header_lines(text: &str) -> Vec<usize> {
    let toml: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.split('#').next().unwrap_or("").trim();
            l.strip_prefix("[[")
                .and_then(|l| l.strip_suffix("]]"))
                .is_some_and(|name| name.trim() == "tests")
        })
        .map(|(i, _)| i + 1)
        .collect();
    if toml.is_empty() {
        return crate::config::yaml::Lines::of(text).items(&["tests"]);
    }
    toml
}

/// The `[[tests]]` tables of `config`, read from `text`, and checked.
pub fn specs(config: &Config, text: &str) -> Result<Vec<TestSpec>, TestError> {
    let Some(tests) = config.tree.get("tests") else {
        return Err(TestError::NoTests);
    };
    let lines = header_lines(text);
    let place = |i: usize| match lines.get(i) {
        // every test is a header, or the lines cannot be told apart
        Some(l) if lines.len() == tests.as_array().map_or(0, Vec::len) => TestPlace::Line(*l),
        _ => TestPlace::Number(i + 1),
    };
    let invalid = |i, message| TestError::Invalid {
        at: place(i),
        message,
    };
    let Some(list) = tests.as_array() else {
        return Err(invalid(
            0,
            "`tests` must be an array of tables: [[tests]]".into(),
        ));
    };
    if list.is_empty() {
        return Err(TestError::NoTests);
    }
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let mut spec = TestSpec::deserialize(v.clone())
                .map_err(|e| invalid(i, e.to_string().trim().to_string()))?;
            spec.validate()
                .map_err(|e| invalid(i, format!("{:?}: {e}", spec.name)))?;
            check_points(config, &spec).map_err(|e| invalid(i, format!("{:?}: {e}", spec.name)))?;
            spec.place = Some(place(i));
            Ok(spec)
        })
        .collect()
}

/// Every source, filter and sink a test names is in the configuration.
fn check_points(config: &Config, spec: &TestSpec) -> Result<(), String> {
    let points = spec
        .inputs
        .iter()
        .map(|i| i.point())
        .chain(spec.outputs.iter().map(|o| o.point()));
    for p in points {
        let p = p?;
        let known = match &p {
            Point::Source(n) => config.sources.iter().any(|s| s.name == *n),
            Point::Filter(n) => config.filters.iter().any(|f| f.name == *n),
            Point::Sink(n) => config.sinks.iter().any(|s| s.name == *n),
        };
        if !known {
            return Err(format!("{p} is not in the configuration"));
        }
    }
    Ok(())
}

/// Runs every test of `config`, in order.
pub async fn run_all(config: &Config, specs: &[TestSpec]) -> Vec<Outcome> {
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (failures, error) = match run(config, spec).await {
            Ok(f) => (f, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        out.push(Outcome {
            name: spec.name.clone(),
            place: spec.place.unwrap_or(TestPlace::Number(i + 1)),
            failures,
            error,
        });
    }
    out
}

/// Records a test may collect at one output (its inputs are small).
const MAX_COLLECTED: usize = 100_000;

/// Runs one test with a pipeline of its own; the differences found.
async fn run(config: &Config, spec: &TestSpec) -> Result<Vec<String>, String> {
    let metrics = Registry::new();
    let filters = super::build_filters(&config.filters, &metrics)?;
    // the sinks' queues, never read by a sink: drained after each input
    let mut queues: Vec<QueueReceiver> = Vec::new();
    let mut routes = Vec::new();
    for s in &config.sinks {
        let (queue, rx) = crate::buffer::queue(&s.name, BufferConfig::default(), &metrics);
        queues.push(rx);
        routes.push(Route {
            sink: Arc::from(s.name.as_str()),
            pattern: s.pattern.clone(),
            queue,
        });
    }
    let router = Router::new(routes, Counter::detached());
    router.switch().set_filters(filters);
    let mut taps: Vec<TapHandle> = spec
        .outputs
        .iter()
        .map(|o| {
            let component = match o.point()? {
                Point::Sink(n) | Point::Filter(n) | Point::Source(n) => n,
            };
            Ok(router.taps().attach(TapRequest {
                component,
                tag: None,
                rate: None,
                capacity: MAX_COLLECTED,
                skipped: Counter::detached(),
            }))
        })
        .collect::<Result<_, String>>()?;
    let time = EventTime::now();
    for input in &spec.inputs {
        let point = input.point()?;
        let tag = match (&input.tag, &point) {
            (Some(t), _) => t.clone(),
            (None, Point::Source(name)) => config
                .sources
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| kinds::known_tag(&s.kind))
                .map(str::to_string)
                .ok_or_else(|| {
                    format!("source {name} has no one tag of its own: give the input a `tag`")
                })?,
            (None, _) => return Err(format!("an input after {point} needs a `tag`")),
        };
        let batch = batch(input, tag, time);
        let (mut r, _released) = router.for_source(match &point {
            Point::Source(n) => n,
            _ => "",
        });
        match &point {
            Point::Filter(f) => {
                r.route_after(f, batch).await.map_err(|e| e.to_string())?;
            }
            _ => r.route(batch).await.map_err(|e| e.to_string())?,
        }
        for q in &mut queues {
            while q.try_recv().is_some() {}
        }
    }
    // what filters hold (a multiline record waiting for its next line)
    // goes out as at a stop: the inputs are all there is
    let (mut r, _released) = router.for_source("");
    r.flush_filters(std::time::Instant::now(), true)
        .await
        .map_err(|e| e.to_string())?;
    for q in &mut queues {
        while q.try_recv().is_some() {}
    }
    let mut failures = Vec::new();
    for (output, tap) in spec.outputs.iter().zip(&mut taps) {
        let mut got = Vec::new();
        while let Some(r) = tap.try_recv() {
            let value = serde_json::from_slice(&r.record)
                .unwrap_or_else(|_| serde_json::Value::from(String::from_utf8_lossy(&r.record)));
            got.push(value);
        }
        let point = output.point()?;
        if tap.take_skipped() > 0 {
            failures.push(format!(
                "{point}: more than {MAX_COLLECTED} records; feed fewer"
            ));
        }
        for d in compare::differences(output, &got)? {
            failures.push(format!("{point}: {d}"));
        }
    }
    Ok(failures)
}

/// The batch an input stands for.
fn batch(input: &spec::InputSpec, tag: String, time: EventTime) -> Batch {
    match (&input.lines, &input.records) {
        (Some(lines), _) => {
            let mut data = String::new();
            for l in lines {
                data.push_str(l);
                data.push('\n');
            }
            Batch::new(
                tag.into(),
                Records::Lines {
                    data: Bytes::from(data),
                    time,
                },
                lines.len(),
            )
        }
        (None, records) => {
            let records = records.as_deref().unwrap_or_default();
            Batch::new(
                tag.into(),
                Records::Entries(Bytes::from(spec::entries(records, time))),
                records.len(),
            )
        }
    }
}

/// The report: one line per test, each failure under its test, and a
/// summary line; a test that could not run is named by its line.
pub fn report(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        if let Some(e) = &o.error {
            let _ = writeln!(s, "test {:?} ... ERROR", o.name);
            let _ = writeln!(s, "    {}: cannot run: {e}", o.place);
        } else if o.passed() {
            let _ = writeln!(s, "test {:?} ... ok", o.name);
        } else {
            let _ = writeln!(s, "test {:?} ... FAILED", o.name);
            for f in &o.failures {
                let _ = writeln!(s, "    {f}");
            }
        }
    }
    let errors = outcomes.iter().filter(|o| o.error.is_some()).count();
    let failed = outcomes.iter().filter(|o| !o.passed()).count() - errors;
    let passed = outcomes.len() - failed - errors;
    let _ = write!(s, "{passed} passed, {failed} failed");
    if errors > 0 {
        let _ = write!(s, ", {errors} could not run");
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests;
