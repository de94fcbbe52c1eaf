//! Compiling a remap filter's VRL program: once when the configuration is
//! checked and once when the filter is built, never per record.

use std::collections::BTreeMap;

use vrl::compiler::state::ExternalEnv;
use vrl::compiler::{CompileConfig, Function, Program, TypeState};
use vrl::diagnostic::{DiagnosticList, Formatter};
use vrl::value::kind::{Collection, Field};
use vrl::value::Kind;

/// VRL functions that reach the network. A filter runs on the router's
/// path for every record: a DNS lookup or an HTTP request there would
/// stall every source behind it, so programs cannot call them (they are
/// unknown functions, a compile error).
const NETWORK_FUNCTIONS: &[&str] = &["dns_lookup", "reverse_dns", "http_request"];

/// The metadata a program sees, as `%tag` and `%timestamp`.
pub const TAG: &str = "tag";
pub const TIMESTAMP: &str = "timestamp";

/// A program that did not compile.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileError {
    /// Line of the program (from 1) of the first error.
    pub line: usize,
    /// Column (from 1, in characters) of the first error.
    pub column: usize,
    /// The first error's message.
    pub message: String,
    /// VRL's full report: every error with its code, the program lines
    /// they are on and what to do.
    pub report: String,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the VRL program does not compile: line {}, column {} of the program: {}{}",
            self.line, self.column, self.message, self.report
        )
    }
}

impl std::error::Error for CompileError {}

/// VRL's standard library without the network functions.
fn functions() -> Vec<Box<dyn Function>> {
    vrl::stdlib::all()
        .into_iter()
        .filter(|f| !NETWORK_FUNCTIONS.contains(&f.identifier()))
        .collect()
}

/// What the type checker knows before the program runs: `.` is any
/// object (a record's fields), `%tag` a string and `%timestamp` a
/// timestamp, so `upcase(%tag)` needs no `string!`.
fn state() -> TypeState {
    let metadata = Collection::from(BTreeMap::from([
        (Field::from(TAG), Kind::bytes()),
        (Field::from(TIMESTAMP), Kind::timestamp()),
    ]))
    .with_unknown(Kind::any());
    TypeState {
        local: Default::default(),
        external: ExternalEnv::new_with_kind(
            Kind::object(Collection::any()),
            Kind::object(metadata),
        ),
    }
}

/// Compiles `source`; warnings (an unused result, …) do not stop it.
pub fn compile(source: &str) -> Result<Program, CompileError> {
    vrl::compiler::compile_with_state(source, &functions(), &state(), CompileConfig::default())
        .map(|compiled| compiled.program)
        .map_err(|errors| compile_error(source, errors))
}

fn compile_error(source: &str, errors: DiagnosticList) -> CompileError {
    let first = errors.iter().find(|d| d.is_problem()).or(errors.first());
    let (offset, message) = match first {
        Some(d) => {
            let primary = d.labels.iter().find(|l| l.primary).or(d.labels.first());
            let offset = primary.map_or(0, |l| l.span.start());
            (offset, format!("{} (E{:03})", d.message, d.code))
        }
        None => (0, "unknown error".to_string()),
    };
    let (line, column) = line_and_column(source, offset);
    CompileError {
        line,
        column,
        message,
        report: Formatter::new(source, errors).to_string(),
    }
}

/// The line and column (both from 1, the column in characters) of byte
/// `offset` of `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}
