//! `type = "remap"`: runs a program in Vector's VRL (Vector Remap
//! Language) on each record, so a Vector user's `remap` programs run
//! unchanged (Fluent Bit's `lua`, Fluentd's `record_transformer` with
//! `enable_ruby`).
//!
//! ```toml
//! [filters.app]
//! type = "remap"
//! match = "app.**"
//! source = '''
//! . = parse_json!(.message)
//! .level = downcase(string!(.level))
//! '''
//! ```
//!
//! The program sees a record's fields as `.` (a line is
//! `{"message": LINE}`), its tag as `%tag` and its time as `%timestamp`;
//! setting either gives the record a new tag or time. Only the records of
//! matching tags are converted to VRL values and back.

use bytes::Bytes;
use serde::Deserialize;
use vrl::compiler::runtime::{Runtime, Terminate};
use vrl::compiler::{Program, TargetValue, TimeZone};
use vrl::value::{KeyString, ObjectMap, Secrets, Value};

use super::value::ValueTemplate;
use crate::event::{Batch, EventTime, Records, Tag};
use crate::metrics::{Counter, Registry};
use crate::router::{Filter, TagPattern};
use crate::telemetry::RateLimitedLog;

mod convert;
mod output;
mod program;

use output::{inputs, Body, Groups};

pub use program::CompileError;

/// The keys of a remap filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemapConfig {
    /// The VRL program, run on every record of the matched tags. It is
    /// compiled when the configuration is read: a program that does not
    /// compile is a configuration error naming its line and column.
    pub source: Option<String>,
    /// Instead of `source`: a file holding the program (Vector's `file`),
    /// read when the configuration is.
    pub file: Option<std::path::PathBuf>,
    /// Drop a record whose program calls `abort` (as Vector does, by
    /// default). `false`: the record goes on as it came.
    #[serde(default = "default_true")]
    pub drop_on_abort: bool,
    /// Drop a record whose program fails at run time (`parse_json!` on
    /// text that is not JSON, …). Default `false`: the record goes on as
    /// it came. Either way the failure is counted and logged (at most
    /// once every 10 s).
    #[serde(default)]
    pub drop_on_error: bool,
    /// Instead of dropping them, send the records `drop_on_abort` or
    /// `drop_on_error` would drop on under this tag, as they came
    /// (Vector's `reroute_dropped`). It may hold `${tag}`, `${tag[N]}`
    /// and `${hostname}`, e.g. `"failed.${tag}"`.
    pub error_tag: Option<String>,
    /// The time zone VRL functions use for a time written without one
    /// (`parse_timestamp`, `format_timestamp`): `"local"` (the default,
    /// as in Vector) or an IANA name such as `"UTC"` or `"Europe/Paris"`.
    pub timezone: Option<String>,
}

const fn default_true() -> bool {
    true
}

impl RemapConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.program()?;
        timezone(self.timezone.as_deref())?;
        self.error_tag()?;
        match &self.error_tag {
            Some(_) if !self.drop_on_abort && !self.drop_on_error => Err(
                "error_tag takes the records drop_on_abort or drop_on_error would drop: set one of them"
                    .into(),
            ),
            _ => Ok(()),
        }
    }

    /// `error_tag` read, checked never to give an empty tag.
    fn error_tag(&self) -> Result<Option<ValueTemplate>, String> {
        let Some(text) = &self.error_tag else {
            return Ok(None);
        };
        let template = ValueTemplate::parse(text).map_err(|e| format!("error_tag: {e}"))?;
        if text.trim().is_empty() || template.may_be_empty(|_| true) {
            return Err(format!(
                "error_tag {text:?} can be an empty tag (a `${{tag[N]}}` past a tag's last part): add text, e.g. \"failed.${{tag}}\""
            ));
        }
        Ok(Some(template))
    }

    /// The compiled program, from `source` or `file`. An error starts
    /// with the key it is about.
    fn program(&self) -> Result<Program, String> {
        let (key, text) = match (&self.source, &self.file) {
            (Some(source), None) => ("source", source.clone()),
            (None, Some(path)) => (
                "file",
                std::fs::read_to_string(path)
                    .map_err(|e| format!("file: cannot read {}: {e}", path.display()))?,
            ),
            _ => return Err("give the program as either `source` or `file`".into()),
        };
        program::compile(&text).map_err(|e| format!("{key}: {e}"))
    }

    /// Whether records may leave the filter under another tag than they
    /// came with: by `error_tag`, or a program that may set `%tag` (one
    /// read from a file may).
    pub fn changes_tags(&self) -> bool {
        self.error_tag.is_some() || self.source.as_ref().is_none_or(|s| s.contains("%tag"))
    }
}

fn timezone(name: Option<&str>) -> Result<TimeZone, String> {
    let name = name.unwrap_or("local");
    TimeZone::parse(name).ok_or_else(|| {
        format!("timezone {name:?}: not a time zone (\"local\", or an IANA name such as \"UTC\")")
    })
}

/// A running remap filter.
pub struct RemapFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    /// The compiled program, shared by every router running it.
    program: Program,
    /// For times the program reads or writes without a zone.
    timezone: TimeZone,
    drop_on_abort: bool,
    drop_on_error: bool,
    /// Where aborted or failed records go instead of being dropped:
    /// rendered for each batch's tag.
    error_tag: Option<ValueTemplate>,
    /// Filled in for `${hostname}` in `error_tag`, read once.
    hostname: String,
    /// Records that reached the filter.
    records: Counter,
    /// Records dropped on purpose: by an `abort`, a failure with
    /// `drop_on_error`, or a program that left an empty array.
    dropped: Counter,
    /// Records whose program called `abort`.
    aborts: Counter,
    /// Records whose program failed at run time, or that could not be
    /// read as VRL values.
    errors: Counter,
    /// Records that left under another tag (`%tag`, `error_tag`).
    retagged: Counter,
    /// Runtime errors are logged once every few seconds; all are counted.
    errors_log: RateLimitedLog,
    /// Taken while the program runs on a large record and its result is
    /// written out: what a program makes of a record can be many times
    /// its size (a 6 MiB line split into 700,000 records holds ~90 MiB
    /// of VRL values at once), so the filter does that for one large
    /// record at a time, whatever the number of sources and threads.
    /// Records below [`LARGE_RECORD`] never wait for it.
    large: std::sync::Mutex<()>,
}

/// Records of at least this size run one at a time per filter.
const LARGE_RECORD: usize = 1024 * 1024;

impl RemapFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &RemapConfig,
        metrics: &Registry,
    ) -> Result<RemapFilter, String> {
        let labels = [("component", name), ("component_type", "remap")];
        Ok(RemapFilter {
            name: name.to_string(),
            pattern,
            program: config.program()?,
            timezone: timezone(config.timezone.as_deref())?,
            drop_on_abort: config.drop_on_abort,
            drop_on_error: config.drop_on_error,
            error_tag: config.error_tag()?,
            hostname: crate::format::hostname(),
            records: super::records_counter(metrics, name, "remap"),
            dropped: super::dropped_counter(metrics, name, "remap"),
            aborts: metrics.counter(
                "logferry_filter_remap_aborts_total",
                "Records whose remap program called abort; dropped with drop_on_abort (the default), else passed on unchanged.",
                &labels,
            ),
            errors: metrics.counter(
                "logferry_filter_remap_errors_total",
                "Records whose remap program failed at run time (or that could not be read as VRL values); passed on unchanged unless drop_on_error.",
                &labels,
            ),
            retagged: metrics.counter(
                "logferry_filter_retagged_records_total",
                "Records a filter gave a new tag.",
                &labels,
            ),
            errors_log: RateLimitedLog::default(),
            large: std::sync::Mutex::new(()),
        })
    }
}

/// What became of one record.
enum Outcome {
    /// The program ran: these records replace it (none when it left an
    /// empty array), under the tag it set (if it set another).
    Emitted {
        tag: Option<Tag>,
        time: EventTime,
        events: Vec<Value>,
    },
    /// It goes on as it came (an abort or a failure not set to drop).
    Unchanged,
    /// Dropped on purpose.
    Dropped,
    /// It goes on as it came, under `error_tag`.
    Rerouted,
}

impl RemapFilter {
    /// Runs the program on the record `event` of tag `tag` and time
    /// `time`.
    fn run(&self, runtime: &mut Runtime, tag: &BatchTag, time: EventTime, event: Value) -> Outcome {
        let mut metadata = ObjectMap::new();
        // the batch's tag as a VRL string, shared (not copied) per record
        metadata.insert(KeyString::from(program::TAG), tag.value.clone());
        if let Some(t) = convert::timestamp(time) {
            metadata.insert(KeyString::from(program::TIMESTAMP), t);
        }
        let mut target = TargetValue {
            value: event,
            metadata: Value::Object(metadata),
            secrets: Secrets::default(),
        };
        // the value of the program's last expression is not wanted: for
        // `. = …` it is a copy of the whole record, dropped at once
        let result = runtime
            .resolve(&mut target, &self.program, &self.timezone)
            .map(drop);
        // the compiler sees that no variable is read before it is set;
        // clearing frees what this record's variables hold
        runtime.clear();
        match result {
            Ok(_) => self.emitted(target, &tag.tag, time),
            Err(Terminate::Abort(e)) => {
                self.aborts.inc();
                tracing::debug!(filter = %self.name, reason = %e, "remap: the program aborted on a record");
                self.failed(self.drop_on_abort)
            }
            Err(Terminate::Error(e)) => self.error(&e.to_string()),
        }
    }

    /// A record the program could not run on: counted, logged, and
    /// dropped, rerouted or passed on as `drop_on_error` says.
    fn error(&self, error: &str) -> Outcome {
        self.errors.inc();
        if let Some(suppressed) = self.errors_log.allow("runtime") {
            tracing::warn!(
                filter = %self.name,
                error = %error,
                suppressed,
                dropped = self.drop_on_error,
                "remap: the program failed on a record"
            );
        }
        self.failed(self.drop_on_error)
    }

    fn failed(&self, drop: bool) -> Outcome {
        match (&self.error_tag, drop) {
            (_, false) => Outcome::Unchanged,
            (Some(_), true) => Outcome::Rerouted,
            (None, true) => Outcome::Dropped,
        }
    }

    /// The records a program that ran left: `.` (each item, if it made it
    /// an array), with `%tag` and `%timestamp`.
    fn emitted(&self, target: TargetValue, tag: &Tag, time: EventTime) -> Outcome {
        let metadata = target.metadata.as_object();
        let new_tag = metadata
            .and_then(|m| m.get(program::TAG))
            .and_then(|t| t.as_bytes())
            .and_then(|t| std::str::from_utf8(t).ok())
            .filter(|t| !t.is_empty() && *t != &**tag)
            .map(Tag::from);
        let time = match metadata.and_then(|m| m.get(program::TIMESTAMP)) {
            Some(Value::Timestamp(t)) => convert::event_time(t).unwrap_or(time),
            _ => time,
        };
        let events = match target.value {
            Value::Array(items) => items,
            one => vec![one],
        };
        Outcome::Emitted {
            tag: new_tag,
            time,
            events,
        }
    }

    /// `error_tag` for a batch of tag `tag`: its placeholders filled in.
    fn error_tag(&self, tag: &str) -> Option<Tag> {
        let template = self.error_tag.as_ref()?;
        Some(Tag::from(template.render(tag, &self.hostname)))
    }
}

/// The tag of the batch being remapped, and as the VRL string `%tag`.
struct BatchTag {
    tag: Tag,
    value: Value,
}

impl Filter for RemapFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        self.records.add(batch.count as u64);
        let owner = batch.records.bytes().clone();
        // a payload that does not decode passes as it came
        let Some(inputs) = inputs(&batch.records) else {
            out.push(batch);
            return;
        };
        let tag = batch.tag.clone();
        let batch_tag = BatchTag {
            tag: tag.clone(),
            value: Value::Bytes(Bytes::copy_from_slice(tag.as_bytes())),
        };
        let error_tag = self.error_tag(&tag);
        let mut runtime = Runtime::default();
        let mut groups = Groups::new(&tag);
        let mut changed = false;
        // the most memory the program's results and the records written
        // so far held at once
        let mut working = 0;
        for input in &inputs {
            let size = match input.body {
                Body::Line(b) | Body::Map(b) => b.len(),
            };
            // held until this record's result is written out (the lock
            // is never held across an await: it cannot wait on itself)
            let _one_at_a_time = (size >= LARGE_RECORD)
                .then(|| self.large.lock().unwrap_or_else(|e| e.into_inner()));
            let event = match input.body {
                Body::Line(line) => Ok(convert::message(Value::Bytes(owner.slice_ref(line)))),
                Body::Map(map) => convert::record(&owner, map),
            };
            let outcome = match event {
                Ok(event) => self.run(&mut runtime, &batch_tag, input.time, event),
                Err(e) => self.error(&e.to_string()),
            };
            match (outcome, &error_tag) {
                (Outcome::Unchanged, _) => groups.original(&tag, input),
                (Outcome::Dropped, _) | (Outcome::Rerouted, None) => {
                    changed = true;
                    self.dropped.inc();
                }
                (Outcome::Rerouted, Some(to)) => {
                    changed = true;
                    self.retagged.inc();
                    groups.original(to, input);
                }
                (
                    Outcome::Emitted {
                        tag: to,
                        time,
                        events,
                    },
                    _,
                ) => {
                    changed = true;
                    if events.is_empty() {
                        self.dropped.inc();
                    }
                    // what the program left is held until it is written
                    // out: charged meanwhile, so that sources wait for it
                    let held: usize = events.iter().map(output::held_bytes).sum();
                    let _working = batch.memory.charge_apart(held);
                    working = working.max(held + groups.bytes());
                    if to.is_some() {
                        self.retagged.add(events.len() as u64);
                    }
                    let to = to.as_ref().unwrap_or(&tag);
                    for event in events {
                        groups.emitted(to, time, event);
                    }
                }
            }
        }
        if !changed {
            out.push(batch);
            return;
        }
        // records made larger, or more of them, hold more memory than the
        // source charged: the growth is charged too, for as long as any
        // batch put out lives. So is what the program needed to make
        // them: the source reads more only once there is room to run it
        // again, rather than running it beside the records it made.
        let grown = groups.bytes().max(working);
        let memory = batch.memory.grown(grown.saturating_sub(batch.byte_len()));
        // every batch put out shares the acknowledgement; none left (all
        // dropped) settles it as filtered
        for (tag, buf, count) in groups.into_batches() {
            out.push(Batch {
                tag,
                records: Records::Entries(buf.into()),
                count,
                memory: memory.clone(),
                ..batch.clone()
            });
        }
    }
}

#[cfg(test)]
mod tests;
