//! `[SERVICE]`: the HTTP server becomes `[api]`, `storage.path` the disk
//! buffers' directory, `Parsers_File` is read.

use std::path::Path;

use super::{boolean, FbConfig, Keys};
use crate::cli::import::model::{Imported, Untranslated, Value};
use crate::cli::import::ImportError;

/// What the other sections need from `[SERVICE]` and the inputs.
#[derive(Debug, Default)]
pub struct Settings {
    /// `storage.path`: where Fluent Bit keeps chunks on disk.
    pub storage_path: Option<String>,
    /// Inputs with `storage.type filesystem`: their sinks get disk buffers.
    pub filesystem_tags: Vec<String>,
}

pub fn translate(
    config: &mut FbConfig,
    path: &Path,
    imported: &mut Imported,
) -> Result<Settings, ImportError> {
    let mut settings = Settings::default();
    let sections = std::mem::take(&mut config.service);
    let mut parser_files = Vec::new();
    for s in &sections {
        let mut keys = Keys::new(s);
        let server = keys
            .take("http_server")
            .and_then(|v| boolean(&v))
            .unwrap_or(false);
        let listen = keys.take("http_listen");
        let port = keys.take("http_port");
        if server {
            imported.api.push((
                "address".into(),
                Value::Str(super::address(listen, port, "0.0.0.0", 2020)),
            ));
        }
        settings.storage_path = keys.take("storage.path");
        parser_files.extend(
            keys.take_all("parsers_file")
                .iter()
                .map(|f| super::file_name(f)),
        );
        let mut holder = crate::cli::import::model::Component::new(
            crate::cli::import::model::Kind::Source,
            "service",
            "service",
            String::new(),
        );
        if let Some(flush) = keys.take("flush") {
            holder.untranslated(
                &format!("Flush {flush}"),
                "each logferry sink sends as soon as records arrive, gathering them for its own linger/flush_interval",
            );
        }
        keys.finish(&mut holder);
        for u in holder.untranslated {
            imported.untranslated.push(Untranslated {
                key: format!("[SERVICE] {}", u.key),
                reason: match u.key.to_ascii_lowercase().as_str() {
                    "daemon" => "run logferry under systemd or a container runtime".into(),
                    "log_file" => "logferry logs to standard error".into(),
                    "hc_errors_count" | "hc_retry_failure_count" | "hc_period" | "health_check" => {
                        "GET /health and /ready of [api] say whether each component works".into()
                    }
                    _ => u.reason,
                },
            });
        }
    }
    for file in parser_files {
        let full = if Path::new(&file).is_absolute() {
            file.clone()
        } else {
            path.parent()
                .unwrap_or(Path::new("."))
                .join(&file)
                .display()
                .to_string()
        };
        match super::load_any(Path::new(&full), config, 1) {
            Ok(()) => imported.remarks.push(format!("parsers read from {file}")),
            // Fluent Bit's stock parsers.conf often sits beside the binary,
            // not the file: name it and go on
            Err(e) => imported.untranslated.push(Untranslated {
                key: format!("Parsers_File {file}"),
                reason: format!("not read: {e}"),
            }),
        }
    }
    for s in &config.inputs {
        let fs = s
            .get("storage.type")
            .is_some_and(|t| t.eq_ignore_ascii_case("filesystem"));
        if fs {
            settings
                .filesystem_tags
                .push(s.get("tag").unwrap_or("").to_string());
        }
    }
    Ok(settings)
}
