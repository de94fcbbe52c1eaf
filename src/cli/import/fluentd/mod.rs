//! Fluentd configurations (`<source>`, `<filter>`, `<match>`, `<label>`,
//! `@include`, `<system>`) as logferry ones.

use std::path::Path;

use super::model::Imported;
use super::ImportError;

/// Reads the Fluentd configuration at `path` (and what it includes).
pub fn import(_path: &Path) -> Result<Imported, ImportError> {
    Err(ImportError::Unsupported("fluentd"))
}
