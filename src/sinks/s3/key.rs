//! Object keys: the `key` template (a [`NameTemplate`] of `${tag}` and
//! strftime sequences, rendered in UTC) with a unique part, so two objects
//! never share a key, whether written by one node or by many.

use chrono::{DateTime, Utc};

use crate::sinks::name::NameTemplate;

/// Where the unique part goes in `key`.
pub const UNIQUE: &str = "{unique}";

/// A parsed `key`: the template around `{unique}`.
#[derive(Debug, Clone)]
pub struct KeyTemplate {
    /// Before `{unique}`.
    before: Option<NameTemplate>,
    /// After `{unique}` (`.log.gz`); none when `{unique}` ends the key.
    after: Option<NameTemplate>,
}

impl KeyTemplate {
    /// Parses `key`; without `{unique}`, `-{unique}` is appended.
    pub fn parse(key: &str) -> Result<KeyTemplate, String> {
        let key = if key.contains(UNIQUE) {
            key.to_string()
        } else {
            format!("{key}-{UNIQUE}")
        };
        let (before, after) = key.split_once(UNIQUE).unwrap_or((&key, ""));
        if after.contains(UNIQUE) {
            return Err(format!("key {key:?}: {UNIQUE} may appear once"));
        }
        let part = |text: &str| -> Result<Option<NameTemplate>, String> {
            if text.is_empty() {
                return Ok(None);
            }
            let t = NameTemplate::parse("key", text)?;
            // a field would put the records of one batch into several
            // objects; an object holds whole batches
            if t.for_batch("t", &Utc::now()).whole().is_none() {
                return Err(format!(
                    "key {key:?}: ${{record.FIELD}} is not supported (use ${{tag}} and strftime sequences)"
                ));
            }
            Ok(Some(t))
        };
        Ok(KeyTemplate {
            before: part(before)?,
            after: part(after)?,
        })
    }

    /// The key of an object of records tagged `tag`, started at `at`,
    /// with `{unique}` still in it: objects with the same one gather
    /// the same records.
    pub fn group(&self, tag: &str, at: &DateTime<Utc>) -> String {
        let render = |t: &Option<NameTemplate>| {
            t.as_ref()
                .and_then(|t| t.for_batch(tag, at).whole().map(str::to_string))
                .unwrap_or_default()
        };
        format!("{}{UNIQUE}{}", render(&self.before), render(&self.after))
    }
}

/// `group` with its unique part: the time it was started and 64 random
/// bits, so keys sort by time and never collide.
pub fn object_key(group: &str, at: &DateTime<Utc>) -> String {
    let mut random = [0u8; 8];
    // without randomness the time and a counter still tell objects apart
    if getrandom::fill(&mut random).is_err() {
        random = next_fallback().to_be_bytes();
    }
    let unique = format!(
        "{}-{:016x}",
        at.format("%Y%m%dT%H%M%S%.3fZ"),
        u64::from_be_bytes(random)
    );
    group.replacen(UNIQUE, &unique, 1)
}

fn next_fallback() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    u64::from(std::process::id()) << 32 | N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn keys_have_the_tag_the_utc_hour_and_a_unique_part() {
        let at = Utc.with_ymd_and_hms(2026, 11, 27, 7, 5, 9).unwrap();
        let t = KeyTemplate::parse("${tag}/%Y/%m/%d/%H/{unique}.log.gz").unwrap();
        let g = t.group("app.web", &at);
        assert_eq!(g, "app.web/2026/11/27/07/{unique}.log.gz");
        let a = object_key(&g, &at);
        let b = object_key(&g, &at);
        assert_ne!(a, b);
        assert!(a.starts_with("app.web/2026/11/27/07/20261127T070509.000Z-"));
        assert!(a.ends_with(".log.gz"));
        // a tag cannot climb out of its prefix
        assert_eq!(t.group("..", &at), "%2E%2E/2026/11/27/07/{unique}.log.gz");
    }

    #[test]
    fn without_unique_it_is_appended() {
        let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        let t = KeyTemplate::parse("logs/${tag[0]}").unwrap();
        assert_eq!(t.group("a.b", &at), "logs/a-{unique}");
        let t = KeyTemplate::parse("{unique}").unwrap();
        assert_eq!(t.group("a", &at), "{unique}");
        assert!(KeyTemplate::parse("{unique}/{unique}").is_err());
        assert!(KeyTemplate::parse("${record.x}/{unique}").is_err());
        assert!(KeyTemplate::parse("${nope}").is_err());
    }
}
