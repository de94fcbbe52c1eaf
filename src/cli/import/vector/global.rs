//! Vector's process-wide keys: `data_dir` (where checkpoints and disk
//! buffers go), `api`, and those with no logferry equivalent, listed at
//! the top of the import.

use serde_json::{Map, Value};

use super::super::model::{Imported, Untranslated, Value as Out};
use super::Settings;

/// Takes the global keys of `tree` (what is left once the component
/// tables are read).
pub fn translate(tree: Map<String, Value>, imported: &mut Imported) -> Settings {
    let mut settings = Settings::default();
    for (key, v) in tree {
        let reason = match key.as_str() {
            "data_dir" => {
                if let Some(dir) = v.as_str() {
                    imported.remarks.push(format!(
                        "data_dir {dir}: the file sources' checkpoints and the disk buffers are under it (one directory per component)"
                    ));
                    settings.data_dir = Some(dir.to_string());
                    continue;
                }
                "not a string"
            }
            "api" => {
                api(&v, imported);
                continue;
            }
            "acknowledgements" => {
                imported.remarks.push(
                    "acknowledgements: logferry acknowledges every source once its sinks have the records, always".into(),
                );
                continue;
            }
            "enrichment_tables" => "logferry has no enrichment tables: VRL's get_enrichment_table_record and find_enrichment_table_records fail in a remap filter",
            "secret" => "logferry has no secret backends: take the value from the environment (${VAR}) or a *_file key",
            "schema" => "logferry has no log schema: records are what the sources and filters make them",
            "log_schema" => "logferry's field names are set per component (message_key, time_key)",
            "timezone" => {
                if let Some(tz) = v.as_str() {
                    imported.remarks.push(format!(
                        "timezone {tz}: the timezone of every remap filter that names none"
                    ));
                    settings.timezone = Some(tz.to_string());
                    continue;
                }
                "not a string"
            }
            "healthchecks" => "logferry checks its destinations with `logferry validate` and retries at run time",
            "tests" => "Vector's unit tests: write them as logferry's [[tests]]",
            "enterprise" | "provider" | "proxy" | "expire_metrics_secs" | "expire_metrics" => {
                "no logferry equivalent"
            }
            "graceful_shutdown_duration" => "logferry drains each sink for its drain_timeout",
            _ => "not a Vector setting logferry knows",
        };
        imported.untranslated.push(Untranslated {
            key,
            reason: reason.into(),
        });
    }
    settings
}

/// Vector's `api` table as logferry's `[api]`.
fn api(v: &Value, imported: &mut Imported) {
    let Value::Object(table) = v else {
        return;
    };
    let enabled = table
        .get("enabled")
        .and_then(|e| e.as_bool())
        .unwrap_or(false);
    for (k, val) in table {
        match k.as_str() {
            "enabled" => {}
            "address" if enabled => {
                if let Some(a) = val.as_str() {
                    imported.api.push(("address".into(), Out::from(a)));
                }
            }
            "address" => {}
            "playground" | "graphql" => imported.untranslated.push(Untranslated {
                key: format!("api.{k}"),
                reason: "logferry's API is HTTP with JSON and Prometheus metrics, no GraphQL"
                    .into(),
            }),
            _ => imported.untranslated.push(Untranslated {
                key: format!("api.{k}"),
                reason: "no logferry equivalent".into(),
            }),
        }
    }
    if enabled && imported.api.is_empty() {
        imported
            .api
            .push(("address".into(), Out::from("127.0.0.1:8686")));
    }
}
