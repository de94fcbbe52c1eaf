//! `logferry config import`: another collector's configuration as a
//! logferry one. One module per source format reads its files into the
//! shared [`model`] (logferry components with notes on what was not carried
//! over), which is rendered as TOML or YAML.

pub mod fluent_bit;
pub mod fluentd;
pub mod model;
pub mod vector;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `logferry config import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The configuration's format; detected from the file when not given.
    #[arg(long, value_enum)]
    pub from: Option<From>,
    /// Print YAML instead of TOML.
    #[arg(long)]
    pub yaml: bool,
    /// Exit with status 1 if any key or component was not translated.
    #[arg(long)]
    pub strict: bool,
    /// The configuration file to import (its includes are read too).
    pub file: PathBuf,
}

/// The collectors whose configurations can be named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum From {
    FluentBit,
    Fluentd,
    Vector,
}

/// Why an import could not be made.
#[derive(Debug)]
pub enum ImportError {
    /// A file (the configuration or one it includes) could not be read.
    Read { file: String, error: String },
    /// A file is not valid in its format.
    Invalid {
        file: String,
        line: usize,
        message: String,
    },
    /// The format is not one an import can read yet.
    Unsupported(&'static str),
    /// The format could not be told from the file.
    Undetected(String),
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::Read { file, error } => write!(f, "{file}: {error}"),
            ImportError::Invalid { file, line: 0, message } => write!(f, "{file}: {message}"),
            ImportError::Invalid { file, line, message } => write!(f, "{file}:{line}: {message}"),
            ImportError::Unsupported(name) => write!(
                f,
                "importing {name} configurations is not yet supported (only fluent-bit is, in this version)"
            ),
            ImportError::Undetected(file) => write!(
                f,
                "{file}: not recognised as a Fluent Bit, Fluentd or Vector configuration; name its format with --from"
            ),
        }
    }
}

impl std::error::Error for ImportError {}

/// The format of `path` from its text: Fluent Bit classic or YAML,
/// Fluentd (`<source>`, `<match>`), Vector (`[sources.` / `transforms`).
fn detect(path: &Path, text: &str) -> Result<(From, bool), ImportError> {
    // Fluentd first: its `@include` reads as Fluent Bit's `@INCLUDE`
    let has_line = |prefix: &str| text.lines().any(|l| l.trim_start().starts_with(prefix));
    if has_line("<source>") || has_line("<match ") || has_line("<system>") {
        return Ok((From::Fluentd, false));
    }
    if let Some(yaml) = fluent_bit::detect(text) {
        return Ok((From::FluentBit, yaml));
    }
    if has_line("[sources.") || has_line("[sinks.") || has_line("[transforms.") {
        return Ok((From::Vector, false));
    }
    // Vector's YAML: its tables as top-level keys, quoted or not, or its
    // data_dir alone (a namespaced configuration's components are files)
    let top_level = |l: &str| {
        let key = l.trim_end().trim_end_matches(':').trim_matches('"');
        l.trim_end().ends_with(':') && ["sources", "sinks", "transforms"].contains(&key)
    };
    let data_dir = |l: &str| l.starts_with("data_dir:") || l.starts_with("\"data_dir\":");
    if text.lines().any(|l| top_level(l) || data_dir(l)) {
        return Ok((From::Vector, true));
    }
    if text
        .lines()
        .any(|l| l.starts_with("data_dir =") || l.starts_with("data_dir="))
    {
        return Ok((From::Vector, false));
    }
    // Vector's JSON: an object with its tables
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(text) {
        if ["sources", "sinks", "transforms"]
            .iter()
            .any(|k| m.contains_key(*k))
        {
            return Ok((From::Vector, false));
        }
    }
    Err(ImportError::Undetected(path.display().to_string()))
}

/// Whether `path` is named as a YAML file.
fn is_yaml_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

fn import(args: &ImportArgs) -> Result<model::Imported, ImportError> {
    let text = std::fs::read_to_string(&args.file).map_err(|e| ImportError::Read {
        file: args.file.display().to_string(),
        error: e.to_string(),
    })?;
    let (from, yaml) = match args.from {
        Some(From::FluentBit) => (
            From::FluentBit,
            fluent_bit::detect(&text).unwrap_or_else(|| is_yaml_file(&args.file)),
        ),
        Some(From::Vector) => (From::Vector, is_yaml_file(&args.file)),
        Some(From::Fluentd) => (From::Fluentd, false),
        None => detect(&args.file, &text)?,
    };
    match from {
        From::FluentBit => fluent_bit::import(&args.file, yaml),
        From::Fluentd => fluentd::import(&args.file),
        From::Vector => vector::import(&args.file, yaml),
    }
}

/// Runs `logferry config import`: 0 with the configuration on standard
/// output, 1 with `--strict` when something was not translated, 2 when
/// nothing could be imported.
pub fn main(args: &ImportArgs) -> ExitCode {
    let imported = match import(args) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let text = model::render(&imported, args.yaml);
    if std::io::stdout().write_all(text.as_bytes()).is_err() {
        return ExitCode::from(2);
    }
    let s = imported.summary();
    eprintln!(
        "imported {}: {} components translated, {} commented out, {} keys not translated",
        args.file.display(),
        s.translated,
        s.commented_out,
        s.keys_untranslated
    );
    if args.strict && (s.commented_out > 0 || s.keys_untranslated > 0) {
        eprintln!("--strict: not everything was translated (see the `# not translated:` comments)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
