//! `logferry validate`: every problem a start would meet, found without
//! starting anything, each with the key and line it is about.
//!
//! Beyond parsing (types, keys, tag patterns, TLS files, which the parser
//! reports for every component at once), it checks what only the machine
//! can say: that each listen address can be bound now (bound and released
//! at once), that every directory logferry writes into exists and is
//! writable or can be created, and that records can flow: a sink that no
//! source can reach, or a source whose records no sink takes. Tags of
//! forward and HTTP sources come from their clients, and a tail tag with
//! `*` from file paths, so those two checks speak only when every source's
//! tag is known.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::{Checked, Config};
use super::kinds::{known_tag, listen_address, FilterKind, SinkKind, SourceKind};
use crate::buffer::BufferKind;
use crate::config::ConfigError;

pub use crate::config::redact::Redactions;

/// Every problem in the configuration file at `path` (`Ok` with the
/// configuration when there is none), and the warnings: what is allowed
/// but probably not meant (an `[api]` anyone on the network may use).
/// Neither quotes a secret (see [`Redactions`]).
pub fn validate_file(path: &Path) -> (Result<Config, Vec<ConfigError>>, Vec<ConfigError>) {
    let origin = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            let error = ConfigError {
                origin,
                line: None,
                column: None,
                message: format!("cannot read the file: {e}"),
            };
            return (Err(vec![error]), Vec::new());
        }
    };
    let (outcome, warnings) = checked(&text, &origin, &[], true);
    (
        outcome.map_err(|errors| redact(&text, errors)),
        redact(&text, warnings),
    )
}

/// Every problem in configuration text, none quoting a secret (see
/// [`Redactions`]): the answer of `POST /reload` and the log carry them.
/// Listen addresses in `held` are not bound (a running pipeline holds
/// them already). `flow`: also report sinks no source reaches and sources
/// no sink takes (which `run` allows).
pub fn validate_text(
    text: &str,
    origin: &str,
    held: &[String],
    flow: bool,
) -> Result<Config, Vec<ConfigError>> {
    checked(text, origin, held, flow)
        .0
        .map_err(|errors| redact(text, errors))
}

/// `errors` about configuration `text` with every value that came from a
/// secret key shown as `***` and every value from the environment as
/// `${VAR}` (see [`Redactions`]): these messages go to logs, CI output
/// and the answer of `POST /reload`.
pub fn redact(text: &str, errors: Vec<ConfigError>) -> Vec<ConfigError> {
    if errors.is_empty() {
        return errors;
    }
    let redactions = Redactions::from_env(text);
    errors
        .into_iter()
        .map(|e| ConfigError {
            message: redactions.apply(&e.message),
            ..e
        })
        .collect()
}

/// The errors and the warnings of configuration text.
fn checked(
    text: &str,
    origin: &str,
    held: &[String],
    flow: bool,
) -> (Result<Config, Vec<ConfigError>>, Vec<ConfigError>) {
    let checked = Checked::parse(text, origin);
    let mut errors = checked.errors.clone();
    let mut warnings = Vec::new();
    if let Some(config) = &checked.config {
        errors.extend(check(&checked, config, held, flow));
        warnings.extend(warn(&checked, config));
    }
    errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
    match checked.config {
        Some(config) if errors.is_empty() => (Ok(config), warnings),
        _ => (Err(errors), warnings),
    }
}

/// What `validate` warns about: allowed, but probably not meant.
fn warn(checked: &Checked, config: &Config) -> Vec<ConfigError> {
    let open = config
        .api
        .as_ref()
        .and_then(crate::api::access::open_to_network);
    let oversized = super::limits::oversized_records(config)
        .into_iter()
        .map(|(sink, w)| checked.error_at(&["sinks", &sink], w));
    open.map(|w| checked.error_at(&["api", "address"], w))
        .into_iter()
        .chain(oversized)
        .chain(held_answers(checked, config))
        .chain(s3_uploads_outlast_clients(checked, config))
        .collect()
}

/// s3 sinks with a memory buffer whose one upload may take as long as a
/// waiting client of an HTTP or OTLP source allows (any tag may come from
/// such a source, so every s3 sink is taken as reached).
fn s3_uploads_outlast_clients<'a>(
    checked: &'a Checked,
    config: &'a Config,
) -> impl Iterator<Item = ConfigError> + 'a {
    use crate::sources::http::AckMode;
    let shortest = config
        .sources
        .iter()
        .filter_map(|s| match &s.kind {
            SourceKind::Http(h) if h.ack == AckMode::Sinks => Some((s, h.request_timeout)),
            SourceKind::Otlp(o) if o.http.ack == AckMode::Sinks => {
                Some((s, o.http.request_timeout))
            }
            _ => None,
        })
        .min_by_key(|(_, t)| *t);
    config
        .sinks
        .iter()
        .filter_map(move |k| match (&k.kind, shortest) {
            (SinkKind::S3(c), Some((s, waits))) if k.buffer.disk_dir().is_none() => c
                .waiting_clients_warning(&s.name, waits)
                .map(|w| checked.error_at(&["sinks", &k.name], format!("[sinks.{}]: {w}", k.name))),
            _ => None,
        })
}

/// Multiline filters that answer waiting clients for the lines they hold
/// (`ack = "held"`), where a source has clients that wait: the trade-off,
/// named.
fn held_answers<'a>(
    checked: &'a Checked,
    config: &'a Config,
) -> impl Iterator<Item = ConfigError> + 'a {
    use crate::sources::http::AckMode;
    let waiting = config.sources.iter().any(|s| match &s.kind {
        SourceKind::Http(h) => h.ack == AckMode::Sinks,
        SourceKind::Otlp(o) => o.http.ack == AckMode::Sinks,
        SourceKind::Forward(_) | SourceKind::Fuse(_) => true,
        _ => false,
    });
    let filters = config.filters.iter().filter(move |_| waiting);
    filters.filter_map(move |f| match &f.kind {
        FilterKind::Multiline(m) => m
            .warning()
            .map(|w| checked.error_at(&["filters", &f.name], format!("[filters.{}]: {w}", f.name))),
        _ => None,
    })
}

/// The checks that need the machine, and the flow checks.
fn check(checked: &Checked, config: &Config, held: &[String], flows: bool) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    addresses(checked, config, held, &mut errors);
    directories(checked, config, &mut errors);
    if flows {
        flow(checked, config, &mut errors);
    }
    errors
}

fn addresses(checked: &Checked, config: &Config, held: &[String], errors: &mut Vec<ConfigError>) {
    let mut listeners: Vec<(Vec<&str>, &str)> = config
        .sources
        .iter()
        .filter_map(|s| {
            listen_address(&s.kind).map(|a| (vec!["sources", s.name.as_str(), "address"], a))
        })
        .collect();
    if let Some(api) = &config.api {
        listeners.push((vec!["api", "address"], &api.address));
    }
    let mut seen: HashMap<&str, String> = HashMap::new();
    for (key, address) in listeners {
        let what = key[..key.len() - 1].join(".");
        let fixed_port = !address.ends_with(":0");
        if fixed_port {
            if let Some(first) = seen.get(address) {
                errors.push(checked.error_at(
                    &key,
                    format!("[{what}].address {address:?} is also the address of [{first}]; give each listener its own"),
                ));
                continue;
            }
            seen.insert(address, what.clone());
        }
        if held.iter().any(|h| h == address) {
            continue;
        }
        if let Err(e) = std::net::TcpListener::bind(address) {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                "; another process listens there: stop it or choose another port"
            } else {
                ""
            };
            errors.push(checked.error_at(
                &key,
                format!("[{what}].address: cannot listen on {address}: {e}{hint}"),
            ));
        }
    }
}

fn directories(checked: &Checked, config: &Config, errors: &mut Vec<ConfigError>) {
    let mut dirs: Vec<(Vec<&str>, PathBuf)> = Vec::new();
    for s in &config.sinks {
        let name = s.name.as_str();
        if let SinkKind::File(f) = &s.kind {
            dirs.push((vec!["sinks", name, "path"], output_dir(&f.path)));
        }
        if s.buffer.kind == BufferKind::Disk {
            if let Some(dir) = &s.buffer.dir {
                dirs.push((vec!["sinks", name, "buffer", "dir"], dir.clone()));
            }
        }
        if let Some(dl) = &s.settle.dead_letter {
            // the default one in the disk buffer's dir is checked with it
            if s.buffer.disk_dir() != Some(parent_dir(dl).as_path()) {
                dirs.push((vec!["sinks", name, "dead_letter"], parent_dir(dl)));
            }
        }
    }
    for s in &config.sources {
        let checkpoint_dir = match &s.kind {
            SourceKind::Tail(t) => t.checkpoint_dir.as_ref(),
            SourceKind::Journald(j) => {
                journal_paths(checked, &s.name, j, errors);
                j.checkpoint_dir.as_ref()
            }
            _ => None,
        };
        if let Some(dir) = checkpoint_dir {
            let key = vec!["sources", s.name.as_str(), "checkpoint_dir"];
            dirs.push((key, dir.clone()));
        }
    }
    for (key, dir) in dirs {
        if let Err(why) = usable_dir(&dir) {
            let what = format!("[{}].{}", key[..2].join("."), key[2..].join("."));
            errors.push(checked.error_at(&key, format!("{what}: {why}")));
        }
    }
}

/// A journald source's `directory` is a directory, and its `files` exist.
fn journal_paths(
    checked: &Checked,
    name: &str,
    config: &crate::sources::journald::JournaldSourceConfig,
    errors: &mut Vec<ConfigError>,
) {
    if let Some(dir) = &config.directory {
        if !dir.is_dir() {
            let key = ["sources", name, "directory"];
            let why = format!(
                "[sources.{name}].directory: {} is not a directory",
                dir.display()
            );
            errors.push(checked.error_at(&key, why));
        }
    }
    for file in config.files.iter().filter(|f| !f.is_file()) {
        let key = ["sources", name, "files"];
        let why = format!("[sources.{name}].files: {} is not a file", file.display());
        errors.push(checked.error_at(&key, why));
    }
}

/// The directory a file sink writes into: the part of `path` before its
/// first placeholder, up to its last `/`.
fn output_dir(path: &str) -> PathBuf {
    let fixed = [path.find("${"), path.find('%')]
        .into_iter()
        .flatten()
        .min()
        .map_or(path, |at| &path[..at]);
    match fixed.rfind('/') {
        Some(0) => PathBuf::from("/"),
        Some(at) => PathBuf::from(&fixed[..at]),
        None => PathBuf::from("."),
    }
}

fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether logferry can write into `dir`, creating it (and its missing
/// parents) if needed. Changes nothing on disk.
fn usable_dir(dir: &Path) -> Result<(), String> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(format!(
                    "directory {} cannot be created: {} is not a directory",
                    dir.display(),
                    at.display()
                ))
            }
            // ENOTDIR: a file is in the way further up, found next
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => at = p,
                    _ if at != Path::new(".") => at = Path::new("."),
                    _ => return Err(format!("cannot check directory {}: {e}", dir.display())),
                }
            }
            Err(e) => return Err(format!("cannot check directory {}: {e}", at.display())),
        }
    }
    if let Err(e) = writable(at) {
        return Err(if at == dir {
            format!("directory {} is not writable: {e}", dir.display())
        } else {
            format!(
                "directory {} cannot be created: {} is not writable: {e}",
                dir.display(),
                at.display()
            )
        });
    }
    Ok(())
}

fn writable(dir: &Path) -> Result<(), std::io::Error> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: access(2) reads a NUL-terminated path we own.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn flow(checked: &Checked, config: &Config, errors: &mut Vec<ConfigError>) {
    // a source's records may leave a filter that gives new tags under any
    // tag: what they become is not known
    let retagged = |tag: &str| {
        config
            .filters
            .iter()
            .any(|f| f.kind.changes_tags() && f.pattern.matches(tag))
    };
    let tags: Vec<Option<&str>> = config
        .sources
        .iter()
        .map(|s| known_tag(&s.kind).filter(|t| !retagged(t)))
        .collect();
    // a component that did not parse could be the missing end of a flow
    let sinks_known = !checked.sinks_failed;
    for (s, tag) in config.sources.iter().zip(&tags).filter(|_| sinks_known) {
        let Some(tag) = tag else { continue };
        if !config.sinks.iter().any(|k| k.pattern.matches(tag)) {
            errors.push(checked.error_at(
                &["sources", &s.name, "tag"],
                format!(
                    "[sources.{}]: no sink's `match` takes its tag {tag:?}: its records would be dropped; add a sink or widen a `match`",
                    s.name
                ),
            ));
        }
    }
    // any tag is possible from a source whose tags are not known
    let Some(known) = tags.into_iter().collect::<Option<Vec<&str>>>() else {
        return;
    };
    if checked.sources_failed {
        return;
    }
    for k in &config.sinks {
        if !known.iter().any(|t| k.pattern.matches(t)) {
            errors.push(checked.error_at(
                &["sinks", &k.name, "match"],
                format!(
                    "[sinks.{}].match {:?} matches no tag a source produces ({}): this sink would never receive a record",
                    k.name,
                    k.pattern.as_str(),
                    known.join(", ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_dir_is_the_fixed_part_of_the_path() {
        assert_eq!(output_dir("/var/log/app.log"), Path::new("/var/log"));
        assert_eq!(output_dir("/data/${tag}.log"), Path::new("/data"));
        assert_eq!(output_dir("/data/%Y/%m/x.log"), Path::new("/data"));
        assert_eq!(output_dir("/x.log"), Path::new("/"));
        assert_eq!(output_dir("x.log"), Path::new("."));
    }

    #[test]
    fn a_directory_under_a_file_cannot_be_created() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = usable_dir(&file.join("a/b")).unwrap_err();
        assert!(e.contains("is not a directory"), "{e}");
        assert!(usable_dir(&dir.path().join("new/deeper")).is_ok());
        assert!(usable_dir(dir.path()).is_ok());
    }
}
