//! The process's own log: which lines (`--log-level`, or the `LOGFERRY_LOG`
//! filter, which wins) and in which shape (`--log-format text|json`), always
//! on standard error so standard output stays free for records
//! (`stdout` sink) and command output.

use std::io::Write as _;

use tracing_subscriber::EnvFilter;

/// The environment variable holding a log filter. When it is set and not
/// empty it wins over `--log-level`, so a service manager's environment can
/// turn on debugging without editing the command line.
pub const LOG_ENV: &str = "LOGFERRY_LOG";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message`
    /// and the event's fields, for log shippers (including logferry).
    Json,
}

/// Why the log filter could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoggingError {
    /// `LOGFERRY_LOG` holds something that is not a filter.
    #[error("{LOG_ENV}={value:?} is not a valid log filter ({reason}); set it to a level (off, error, warn, info, debug, trace) or directives such as \"info,logferry::sinks=debug\", or unset it to use --log-level")]
    BadEnvFilter { value: String, reason: String },
}

/// Checks a `--log-level` value (for clap): a level, or filter directives.
pub fn parse_level(value: &str) -> Result<String, String> {
    // a lone word would parse as a target name ("verbose" = everything
    // from a module called verbose), which is never what was meant
    let is_directive = value.contains(['=', ',', ':', '[']);
    if !is_directive
        && value
            .parse::<tracing::level_filters::LevelFilter>()
            .is_err()
    {
        return Err(format!(
            "unknown level {value:?}; use off, error, warn, info, debug or trace, or directives such as \"info,logferry::sinks=debug\""
        ));
    }
    EnvFilter::builder()
        .parse(value)
        .map(|_| value.to_string())
        .map_err(|e| {
            format!("{e}; use a level (off, error, warn, info, debug, trace) or directives such as \"info,logferry::sinks=debug\"")
        })
}

/// The filter in effect: `env` (the value of `LOGFERRY_LOG`) when it is set
/// and not blank, else `level`.
pub fn filter(level: &str, env: Option<&str>) -> Result<EnvFilter, LoggingError> {
    match env.map(str::trim).filter(|v| !v.is_empty()) {
        Some(value) => EnvFilter::builder()
            .parse(value)
            .map_err(|e| LoggingError::BadEnvFilter {
                value: value.to_string(),
                reason: e.to_string(),
            }),
        // `level` was checked by `parse_level`; `info` is the last resort
        None => Ok(EnvFilter::builder()
            .parse(level)
            .unwrap_or_else(|_| EnvFilter::new("info"))),
    }
}

/// The format [`init`] installed, for messages written outside the log.
static FORMAT: std::sync::OnceLock<LogFormat> = std::sync::OnceLock::new();

/// Whether log lines are JSON: then standard error must hold nothing else.
pub fn is_json() -> bool {
    FORMAT.get() == Some(&LogFormat::Json)
}

/// Reports an error that ends the command: `error: …` on standard error,
/// or with JSON logs an `ERROR` event, so every line stays one object.
pub fn fatal(message: &dyn std::fmt::Display) {
    if is_json() {
        tracing::error!("{message}");
    } else {
        // not `eprintln!`: it panics when standard error is closed
        let _ = writeln!(std::io::stderr(), "error: {message}");
    }
}

/// Installs the process's log subscriber (once; later calls do nothing).
pub fn init(level: &str, format: LogFormat) -> Result<(), LoggingError> {
    let _ = FORMAT.set(format);
    let env = std::env::var_os(LOG_ENV).map(|v| v.to_string_lossy().into_owned());
    let filter = filter(level, env.as_deref())?;
    // A failed write is dropped: with `log_internal_errors` on, the
    // subscriber would report it with `eprintln!`, which panics the task
    // that logged once standard error's reader has gone away.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::level_filters::LevelFilter;

    #[test]
    fn the_environment_wins_over_the_level() {
        let f = filter("error", Some("debug")).unwrap();
        assert_eq!(f.max_level_hint(), Some(LevelFilter::DEBUG));
        let f = filter("trace", Some("warn")).unwrap();
        assert_eq!(f.max_level_hint(), Some(LevelFilter::WARN));
    }

    #[test]
    fn the_level_applies_without_the_environment() {
        for env in [None, Some(""), Some("  ")] {
            let f = filter("debug", env).unwrap();
            assert_eq!(f.max_level_hint(), Some(LevelFilter::DEBUG), "{env:?}");
        }
    }

    #[test]
    fn a_bad_environment_filter_is_an_error_naming_the_variable() {
        let e = filter("info", Some("info,=[")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("LOGFERRY_LOG=\"info,=[\""), "{msg}");
        assert!(msg.contains("unset it"), "{msg}");
    }

    #[test]
    fn levels_and_directives_are_accepted_and_nonsense_is_not() {
        for ok in [
            "info",
            "DEBUG",
            "off",
            "logferry=trace",
            "warn,logferry::sinks=debug",
        ] {
            assert!(parse_level(ok).is_ok(), "{ok}");
        }
        let e = parse_level("loud=[").unwrap_err();
        assert!(e.contains("use a level"), "{e}");
        let e = parse_level("verbose").unwrap_err();
        assert!(e.starts_with("unknown level \"verbose\""), "{e}");
    }
}
