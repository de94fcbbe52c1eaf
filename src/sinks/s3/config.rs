//! Settings of the `s3` sink.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::key::KeyTemplate;
use crate::config::units;
use crate::config::Secret;
use crate::sinks::http::config::{Compression, Encoding, HttpSettings, TimeFormat};

/// `type = "s3"`: records into objects of an S3 bucket (or an
/// S3-compatible store), acknowledged once the object holding them is
/// stored.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct S3SinkConfig {
    /// The bucket objects go to.
    pub bucket: String,
    /// An S3-compatible store's URL (`http://127.0.0.1:9000`); unset: AWS.
    pub endpoint: Option<String>,
    /// The bucket's region (signed into every request).
    #[serde(default = "default_region")]
    pub region: String,
    /// The object key: `${tag}`, `${tag[N]}` and strftime sequences of the
    /// time the object was started (UTC); `{unique}` is where the unique
    /// part goes (time and random), appended as `-{unique}` when absent.
    #[serde(default = "default_key")]
    pub key: String,
    /// `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key`
    /// (most S3-compatible stores need it).
    #[serde(default)]
    pub force_path_style: bool,
    /// An HTTP proxy every request goes through (`http://host:port`, or
    /// `http://user:password@host:port`); unset: `HTTPS_PROXY`,
    /// `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` from the environment.
    pub proxy_url: Option<Secret>,
    /// Credentials; unset: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`,
    /// then the shared credentials file, then web identity, ECS or EKS Pod
    /// Identity, then instance metadata.
    pub access_key_id: Option<Secret>,
    /// A file holding the access key id (trimmed), read at start.
    pub access_key_id_file: Option<PathBuf>,
    /// The secret key, with `access_key_id`.
    pub secret_access_key: Option<Secret>,
    /// A file holding the secret key (trimmed), read at start.
    pub secret_access_key_file: Option<PathBuf>,
    /// The shared credentials file of the AWS CLI and SDKs; unset:
    /// `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`.
    pub credentials_file: Option<PathBuf>,
    /// Its profile; unset: `AWS_PROFILE`, else `default`.
    pub profile: Option<String>,
    /// `"ndjson"` or `"text"` (the message, or `template`).
    #[serde(default)]
    pub encoding: Encoding,
    /// With `encoding = "text"`: a line template (see the file sink's formats).
    pub template: Option<String>,
    /// With `ndjson`: the field the record's time goes to (unless it has
    /// one); `""` leaves it out.
    #[serde(default = "default_time_key")]
    pub time_key: String,
    /// How that time is written: whole milliseconds unless set (objects
    /// about a third to a half smaller than with nanoseconds).
    #[serde(default = "default_time_format")]
    pub time_format: TimeFormat,
    /// With `ndjson`: a field the tag goes to; unset, none.
    pub tag_key: Option<String>,
    /// `"gzip"` (default), `"zstd"` or `"none"`: the whole object.
    #[serde(default = "default_compression")]
    pub compression: Compression,
    /// An object is closed and stored once its records take this many
    /// bytes, encoded and before compression.
    #[serde(
        default = "default_max_object_bytes",
        deserialize_with = "units::bytes"
    )]
    pub max_object_bytes: usize,
    /// An object is closed and stored this long after its first record.
    #[serde(
        default = "default_max_object_age",
        deserialize_with = "units::duration"
    )]
    pub max_object_age: Duration,
    /// An object whose compressed body is larger goes up as a multipart
    /// upload in parts of this size (at least 5MiB, as S3 requires).
    #[serde(default = "default_part_bytes", deserialize_with = "units::bytes")]
    pub multipart_part_bytes: usize,
    /// Where the journal of multipart uploads in progress is kept; those a
    /// crash left are aborted at the next start. Unset: no journal.
    pub state_dir: Option<PathBuf>,
    /// Longest one request may take.
    #[serde(
        default = "default_request_timeout",
        deserialize_with = "units::duration"
    )]
    pub request_timeout: Duration,
    /// At a stop, how long the objects still open may take to be stored.
    #[serde(
        default = "default_drain_timeout",
        deserialize_with = "units::duration"
    )]
    pub drain_timeout: Duration,
}

fn default_region() -> String {
    "us-east-1".into()
}

fn default_key() -> String {
    "${tag}/%Y/%m/%d/%H/{unique}.log.gz".into()
}

fn default_time_key() -> String {
    "time".into()
}

const fn default_time_format() -> TimeFormat {
    TimeFormat::EpochMillis
}

const fn default_compression() -> Compression {
    Compression::Gzip
}

const fn default_max_object_bytes() -> usize {
    8 << 20
}

const fn default_max_object_age() -> Duration {
    Duration::from_secs(60)
}

/// S3's smallest part (all but the last).
pub const MIN_PART_BYTES: usize = 5 << 20;

const fn default_part_bytes() -> usize {
    8 << 20
}

/// Below the listening sources' `request_timeout` (30 s): a client that
/// waits for an upload is answered before it gives up.
const fn default_request_timeout() -> Duration {
    Duration::from_secs(20)
}

const fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}

/// Largest object: the sink holds one in memory while it is built.
const MAX_OBJECT_BYTES: usize = 1 << 30;

impl S3SinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.bucket.is_empty() {
            return Err("bucket must not be empty".into());
        }
        KeyTemplate::parse(&self.key)?;
        if !matches!(self.encoding, Encoding::Ndjson | Encoding::Text) {
            return Err("encoding: \"ndjson\" or \"text\"".into());
        }
        if self.template.is_some() && self.encoding != Encoding::Text {
            return Err("template applies to encoding = \"text\" only".into());
        }
        if let Some(t) = &self.template {
            crate::format::Template::parse(t)?;
        }
        if self.max_object_bytes == 0 || self.max_object_bytes > MAX_OBJECT_BYTES {
            return Err("max_object_bytes: more than 0 and at most 1GiB".into());
        }
        if self.max_object_age.is_zero() || self.request_timeout.is_zero() {
            return Err("max_object_age and request_timeout must be more than 0".into());
        }
        if self.multipart_part_bytes < MIN_PART_BYTES {
            return Err("multipart_part_bytes: at least 5MiB (S3's smallest part)".into());
        }
        if let Some(e) = &self.endpoint {
            if !is_http_url(e) {
                return Err(format!("endpoint {e:?}: write http(s)://host[:port]"));
            }
        }
        // the URL is not quoted: it may hold the proxy's password
        if self
            .proxy_url
            .as_ref()
            .is_some_and(|p| !is_http_url(p.expose()))
        {
            return Err("proxy_url: write http(s)://[user:password@]host:port".into());
        }
        self.credentials()?;
        self.file_credentials(|k| std::env::var(k).ok())?;
        Ok(())
    }

    /// The configured key pair, files read now; `None`: the environment
    /// or the standard chain.
    pub fn credentials(&self) -> Result<Option<(String, String)>, String> {
        let id = secret(
            "access_key_id",
            &self.access_key_id,
            &self.access_key_id_file,
        )?;
        let key = secret(
            "secret_access_key",
            &self.secret_access_key,
            &self.secret_access_key_file,
        )?;
        match (id, key) {
            (Some(id), Some(key)) => Ok(Some((id, key))),
            (None, None) => Ok(None),
            _ => Err(
                "set both access_key_id and secret_access_key (or their _file), or neither".into(),
            ),
        }
    }

    /// The encoder's settings, in the `http` sink's terms.
    pub fn encoding(&self) -> HttpSettings {
        HttpSettings {
            uri: String::new(),
            method: Default::default(),
            encoding: self.encoding,
            template: self.template.clone(),
            time_key: self.time_key.clone(),
            time_format: self.time_format,
            tag_key: self.tag_key.clone(),
            // the whole object is compressed at its close
            compression: Compression::None,
            headers: Default::default(),
            delivered_statuses: Vec::new(),
            retry_statuses: Vec::new(),
        }
    }
}

/// A key pair (and session token) from a shared credentials file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl S3SinkConfig {
    /// What `validate` warns about when a source's clients wait `waits`
    /// (its `request_timeout`) for this sink through a memory buffer: one
    /// upload request may take `request_timeout`, and one that takes as
    /// long as the client waits can only end in the client's 503, which
    /// sends the records again (stored twice). `None` when it fits.
    pub fn waiting_clients_warning(&self, source: &str, waits: Duration) -> Option<String> {
        (self.request_timeout >= waits).then(|| {
            format!(
                "request_timeout ({} s) is not below the request_timeout of [sources.{source}] ({} s), whose clients wait for the sinks: an upload that slow can only end in their 503, and the records they send again are stored twice; set it lower, or give the sink a disk buffer (clients are then answered once their records are on disk)",
                self.request_timeout.as_secs_f64(),
                waits.as_secs_f64()
            )
        })
    }

    /// The key pair of the shared credentials file's profile, when no key
    /// pair is configured or in the environment (`env` reads a variable).
    /// A file or profile the settings name must be there; one only the
    /// defaults name may be missing (`None`: the rest of the chain).
    pub fn file_credentials(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<FileCredentials>, String> {
        if self.credentials()?.is_some() || env("AWS_ACCESS_KEY_ID").is_some() {
            return Ok(None);
        }
        let named = self.credentials_file.is_some() || self.profile.is_some();
        let path = match (&self.credentials_file, env("AWS_SHARED_CREDENTIALS_FILE")) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) => PathBuf::from(p),
            (None, None) => match env("HOME") {
                Some(home) => PathBuf::from(home).join(".aws/credentials"),
                None => return Ok(None),
            },
        };
        let profile = self
            .profile
            .clone()
            .or_else(|| env("AWS_PROFILE"))
            .unwrap_or_else(|| "default".into());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return Ok(None),
            Err(e) => return Err(format!("credentials file {}: {e}", path.display())),
        };
        match profile_keys(&text, &profile) {
            Some(c) => Ok(Some(c)),
            None if named => Err(format!(
                "credentials file {}: no profile [{profile}] with aws_access_key_id and aws_secret_access_key",
                path.display()
            )),
            None => Ok(None),
        }
    }
}

/// The keys of `[profile]` in the text of a shared credentials file (INI:
/// `[name]` sections of `key = value` lines, `#` and `;` comments).
fn profile_keys(text: &str, profile: &str) -> Option<FileCredentials> {
    let (mut id, mut secret, mut token) = (None, None, None);
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == profile;
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !inside {
            continue;
        }
        let v = Some(v.trim().to_string());
        match k.trim().to_ascii_lowercase().as_str() {
            "aws_access_key_id" => id = v,
            "aws_secret_access_key" => secret = v,
            "aws_session_token" => token = v,
            _ => {}
        }
    }
    Some(FileCredentials {
        access_key_id: id.filter(|s| !s.is_empty())?,
        secret_access_key: secret.filter(|s| !s.is_empty())?,
        session_token: token.filter(|s| !s.is_empty()),
    })
}

/// Whether `s` is `http(s)://host[:port]` (a path is allowed).
fn is_http_url(s: &str) -> bool {
    s.parse::<http::Uri>()
        .is_ok_and(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some())
}

/// `key` or `key_file`'s content, if either is set.
fn secret(
    key: &str,
    value: &Option<Secret>,
    file: &Option<PathBuf>,
) -> Result<Option<String>, String> {
    match (value, file) {
        (Some(v), None) => Ok(Some(v.expose().to_string())),
        (None, Some(f)) => std::fs::read_to_string(f)
            .map(|s| Some(s.trim().to_string()))
            .map_err(|e| format!("{key}_file: cannot read {}: {e}", f.display())),
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(format!("set one of `{key}` and `{key}_file`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_of_the_shared_credentials_file_is_read() {
        let text = "# keys\n[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n[logs]\n; the archive's\nAWS_ACCESS_KEY_ID=L\naws_secret_access_key = LS\naws_session_token = T\n[half]\naws_access_key_id = H\n";
        let keys = |id: &str, secret: &str, token: Option<&str>| FileCredentials {
            access_key_id: id.into(),
            secret_access_key: secret.into(),
            session_token: token.map(Into::into),
        };
        assert_eq!(profile_keys(text, "default"), Some(keys("D", "DS", None)));
        assert_eq!(profile_keys(text, "logs"), Some(keys("L", "LS", Some("T"))));
        assert_eq!(profile_keys(text, "half"), None);
        assert_eq!(profile_keys(text, "none"), None);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials");
        std::fs::write(&file, text).unwrap();
        let file_str = file.display().to_string();
        let c = parse("bucket = \"b\"").unwrap();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        // the defaults: a file that is not there is the rest of the chain
        assert_eq!(
            c.file_credentials(env(&[("HOME", "/nonexistent")])),
            Ok(None)
        );
        // keys in the environment win
        assert_eq!(
            c.file_credentials(env(&[("AWS_ACCESS_KEY_ID", "E")])),
            Ok(None)
        );
        let by_env = c.file_credentials(|k| match k {
            "AWS_SHARED_CREDENTIALS_FILE" => Some(file_str.clone()),
            "AWS_PROFILE" => Some("logs".into()),
            _ => None,
        });
        assert_eq!(by_env, Ok(Some(keys("L", "LS", Some("T")))));
        let named = parse(&format!(
            "bucket = \"b\"\ncredentials_file = {file_str:?}\nprofile = \"half\""
        ))
        .unwrap();
        let err = named.file_credentials(env(&[])).unwrap_err();
        assert!(err.contains("no profile [half]"), "{err}");
        let missing =
            parse("bucket = \"b\"\ncredentials_file = \"/nonexistent/credentials\"").unwrap();
        assert!(missing
            .file_credentials(env(&[]))
            .unwrap_err()
            .contains("/nonexistent/credentials"));
        // configured keys win over the file
        let keyed = parse(&format!("bucket = \"b\"\naccess_key_id = \"A\"\nsecret_access_key = \"S\"\ncredentials_file = {file_str:?}")).unwrap();
        assert_eq!(keyed.file_credentials(env(&[])), Ok(None));
    }

    fn parse(text: &str) -> Result<S3SinkConfig, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_bad_settings() {
        let c = parse("bucket = \"logs\"").unwrap();
        assert_eq!(c.compression, Compression::Gzip);
        assert_eq!(c.max_object_bytes, 8 << 20);
        assert_eq!(c.key, "${tag}/%Y/%m/%d/%H/{unique}.log.gz");
        c.validate().unwrap();
        for (extra, says) in [
            ("encoding = \"json\"", "encoding"),
            ("multipart_part_bytes = \"1MiB\"", "5MiB"),
            ("access_key_id = \"a\"", "both"),
            ("endpoint = \"ftp://x\"", "endpoint"),
            ("proxy_url = \"proxy:3128\"", "proxy_url"),
            ("key = \"${record.x}/{unique}\"", "record"),
            ("template = \"{message}\"", "template"),
        ] {
            let c = parse(&format!("bucket = \"logs\"\n{extra}")).unwrap();
            let e = c.validate().unwrap_err();
            assert!(e.contains(says), "{extra}: {e}");
        }
        assert!(parse("bucket = \"logs\"\nnope = 1").is_err());
        // a proxy's password is never shown
        let c = parse("bucket = \"logs\"\nproxy_url = \"http://u:pw9@proxy:3128\"").unwrap();
        c.validate().unwrap();
        assert!(!format!("{c:?}").contains("pw9"));
        let c = parse("bucket = \"logs\"\nproxy_url = \"u:pw9@proxy:3128\"").unwrap();
        assert!(!c.validate().unwrap_err().contains("pw9"));
    }
}
