//! A watch's body: lines (one JSON event each), applied to the cache in
//! the order they come.

use bytes::BytesMut;

use super::api::ApiError;
use super::cache::Store;
use super::objects::{self, DecodeError, Event, Object, MAX_LINE_BYTES};
use super::{Namespace, Pod};

/// Puts objects of one kind into the store.
pub trait Stored: Object + Send + 'static {
    fn upsert(store: &Store, value: Self, version: String);
    fn delete(store: &Store, value: Self, version: String);
    fn replace(store: &Store, items: Vec<(Self, String)>, version: &str);
}

impl Stored for Pod {
    fn upsert(store: &Store, value: Self, version: String) {
        store.upsert_pod(value, version)
    }
    fn delete(store: &Store, value: Self, version: String) {
        store.delete_pod(value, version)
    }
    fn replace(store: &Store, items: Vec<(Self, String)>, version: &str) {
        store.replace_pods(items, version)
    }
}

impl Stored for Namespace {
    fn upsert(store: &Store, value: Self, version: String) {
        store.upsert_namespace(value, version)
    }
    fn delete(store: &Store, value: Self, version: String) {
        store.delete_namespace(value, version)
    }
    fn replace(store: &Store, items: Vec<(Self, String)>, version: &str) {
        store.replace_namespaces(items, version)
    }
}

/// Applies one watch line to `store`, moving `version` on; an ERROR
/// event ends the watch with its error.
pub fn apply_line<T: Stored>(
    store: &Store,
    line: &[u8],
    version: &mut String,
) -> Result<Result<(), ApiError>, DecodeError> {
    match objects::decode_event::<T>(line)? {
        Event::Added(o, v) | Event::Modified(o, v) => {
            version.clone_from(&v);
            T::upsert(store, o, v);
        }
        Event::Deleted(o, v) => {
            version.clone_from(&v);
            T::delete(store, o, v);
        }
        Event::Bookmark(v) => {
            if !v.is_empty() {
                *version = v;
            }
        }
        Event::Error(status) if status.is_gone() => return Ok(Err(ApiError::Gone)),
        Event::Error(status) => {
            return Ok(Err(ApiError::Server(status.code, status.message)));
        }
    }
    Ok(Ok(()))
}

/// Splits a watch's body into lines, skipping (and counting) any longer
/// than [`MAX_LINE_BYTES`].
#[derive(Default)]
pub struct Lines {
    buffer: BytesMut,
    /// Inside a line too long to keep: drop up to its end.
    skipping: bool,
}

impl Lines {
    /// Adds `chunk`; calls `line` for every whole line, and `skipped` for
    /// every line dropped as too long.
    pub fn push(&mut self, chunk: &[u8], mut line: impl FnMut(&[u8]), mut skipped: impl FnMut()) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let newline = memchr::memchr(b'\n', rest);
            if self.skipping {
                match newline {
                    Some(i) => {
                        self.skipping = false;
                        rest = &rest[i + 1..];
                    }
                    None => return,
                }
                continue;
            }
            match newline {
                Some(i) => {
                    let whole: &[u8] = if self.buffer.is_empty() {
                        &rest[..i]
                    } else {
                        self.buffer.extend_from_slice(&rest[..i]);
                        &self.buffer
                    };
                    if whole.len() > MAX_LINE_BYTES {
                        skipped();
                    } else if !whole.iter().all(u8::is_ascii_whitespace) {
                        line(whole);
                    }
                    self.buffer.clear();
                    rest = &rest[i + 1..];
                }
                None => {
                    if self.buffer.len() + rest.len() > MAX_LINE_BYTES {
                        skipped();
                        self.buffer = BytesMut::new();
                        self.skipping = true;
                    } else {
                        self.buffer.extend_from_slice(rest);
                    }
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::objects::tests::pod_json;
    use std::time::Duration;

    #[test]
    fn lines_are_split_across_chunks_and_an_overlong_one_is_skipped() {
        let mut lines = Lines::default();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        let mut skipped = 0;
        lines.push(
            b"{\"a\":1}\n{\"b\"",
            |l| seen.push(l.to_vec()),
            || skipped += 1,
        );
        lines.push(b":2}\n\n", |l| seen.push(l.to_vec()), || skipped += 1);
        let big = vec![b'x'; MAX_LINE_BYTES / 2 + 1];
        lines.push(&big, |l| seen.push(l.to_vec()), || skipped += 1);
        lines.push(&big, |l| seen.push(l.to_vec()), || skipped += 1);
        lines.push(&big, |l| seen.push(l.to_vec()), || skipped += 1);
        lines.push(
            b"xx\n{\"c\":3}\n",
            |l| seen.push(l.to_vec()),
            || skipped += 1,
        );
        assert_eq!(
            seen,
            vec![
                b"{\"a\":1}".to_vec(),
                b"{\"b\":2}".to_vec(),
                b"{\"c\":3}".to_vec()
            ]
        );
        assert_eq!(skipped, 1);
    }

    #[test]
    fn watch_lines_move_the_version_and_an_expired_error_asks_for_a_list() {
        let store = Store::new(Duration::from_secs(60), false);
        let mut version = "5".to_string();
        let added = format!(r#"{{"type":"ADDED","object":{}}}"#, pod_json("a", "u1", 6));
        assert_eq!(
            apply_line::<Pod>(&store, added.as_bytes(), &mut version),
            Ok(Ok(()))
        );
        assert_eq!(version, "6");
        assert!(store.pod("u1").is_some());
        let bookmark =
            br#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}}"#;
        assert_eq!(
            apply_line::<Pod>(&store, bookmark, &mut version),
            Ok(Ok(()))
        );
        assert_eq!(version, "9");
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 9 (20)","reason":"Expired","code":410}}"#;
        assert_eq!(
            apply_line::<Pod>(&store, gone, &mut version),
            Ok(Err(ApiError::Gone))
        );
        assert!(apply_line::<Pod>(&store, b"{oops", &mut version).is_err());
        assert_eq!(version, "9");
    }

    #[test]
    fn the_same_lines_give_the_same_cache_whatever_the_chunks() {
        let mut body = String::new();
        for (kind, name, uid, version) in [
            ("ADDED", "a", "u1", 1),
            ("ADDED", "b", "u2", 2),
            ("MODIFIED", "a", "u1", 3),
            ("MODIFIED", "a", "u1", 2),
            ("DELETED", "b", "u2", 4),
        ] {
            body.push_str(&format!(
                "{{\"type\":\"{kind}\",\"object\":{}}}\n",
                pod_json(name, uid, version)
            ));
        }
        body.push_str(
            "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n",
        );
        let apply = |chunk: usize| {
            let store = Store::new(Duration::from_secs(60), false);
            let mut version = String::new();
            let mut lines = Lines::default();
            for piece in body.as_bytes().chunks(chunk) {
                lines.push(
                    piece,
                    |line| {
                        let _ = apply_line::<Pod>(&store, line, &mut version);
                    },
                    || panic!("nothing here is too long"),
                );
            }
            (store.generation(), store.live(), store.pods_held(), version)
        };
        let whole = apply(body.len());
        // a, b; the stale MODIFIED of a is not applied; b is deleted
        assert_eq!(whole, (4, (1, 0), 2, "9".to_string()));
        for chunk in [1, 2, 3, 7, 64, 1000] {
            assert_eq!(apply(chunk), whole, "chunks of {chunk}");
        }
    }
}
