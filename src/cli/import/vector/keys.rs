//! A Vector component's keys as they are taken by its translation: each
//! key taken is translated, and what is left at the end is listed as not
//! translated, so no key is ever dropped silently.

use serde_json::{Map, Value};

use super::super::model::{self, Component};
use super::read;

/// The keys of one component (or of one of its tables) not taken yet.
pub struct Keys {
    map: Map<String, Value>,
    /// Where these keys sit (`buffer.`), for the names of what is left.
    prefix: String,
}

impl Keys {
    pub fn new(map: Map<String, Value>, prefix: &str) -> Keys {
        Keys {
            map,
            prefix: prefix.to_string(),
        }
    }

    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }

    /// A string (or a number, as text) value.
    pub fn text(&mut self, key: &str) -> Option<String> {
        match self.map.get(key)? {
            Value::String(s) => {
                let s = s.clone();
                self.map.remove(key);
                Some(s)
            }
            Value::Number(n) => {
                let s = n.to_string();
                self.map.remove(key);
                Some(s)
            }
            Value::Bool(b) => {
                let s = b.to_string();
                self.map.remove(key);
                Some(s)
            }
            _ => None,
        }
    }

    /// A whole number (written as a number, or as a string of one).
    pub fn int(&mut self, key: &str) -> Option<i64> {
        let n = match self.map.get(key)? {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?,
            Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        self.map.remove(key);
        Some(n)
    }

    /// A number of seconds (whole or not), as a logferry duration.
    pub fn seconds(&mut self, key: &str) -> Option<String> {
        let secs = match self.map.get(key)? {
            Value::Number(n) => n.as_f64()?,
            Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        self.map.remove(key);
        Some(duration(secs))
    }

    pub fn bool(&mut self, key: &str) -> Option<bool> {
        let b = self.map.get(key)?.as_bool()?;
        self.map.remove(key);
        Some(b)
    }

    /// A list of strings (a single string is a list of one).
    pub fn list(&mut self, key: &str) -> Option<Vec<String>> {
        let items = match self.map.get(key)? {
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()?,
            Value::String(s) => vec![s.clone()],
            _ => return None,
        };
        self.map.remove(key);
        Some(items)
    }

    /// The table at `key`, as keys of its own.
    pub fn table(&mut self, key: &str) -> Option<Keys> {
        if !self.map.get(key)?.is_object() {
            return None;
        }
        match self.map.remove(key) {
            Some(Value::Object(m)) => Some(Keys::new(m, &format!("{}{key}.", self.prefix))),
            _ => None,
        }
    }

    /// The number at `key` without taking it.
    pub fn peek_number(&self, key: &str) -> Option<f64> {
        self.map.get(key)?.as_f64()
    }

    /// The text of `key` without taking it.
    pub fn peek_text(&self, key: &str) -> Option<String> {
        self.map.get(key)?.as_str().map(String::from)
    }

    /// The text of `table.key` without taking it.
    pub fn peek(&self, table: &str, key: &str) -> Option<String> {
        self.map.get(table)?.get(key)?.as_str().map(String::from)
    }

    /// Puts `key` back, to be taken with the others.
    pub fn put(&mut self, key: &str, v: Value) {
        self.map.insert(key.to_string(), v);
    }

    /// The keys not taken yet.
    pub fn keys(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    /// Drops `key` as understood with nothing to set (a default).
    pub fn skip(&mut self, key: &str) {
        self.map.remove(key);
    }

    /// Lists `key`, if present, as not translated with `reason`.
    pub fn refuse(&mut self, key: &str, reason: &str, c: &mut Component) {
        if self.map.remove(key).is_some() {
            c.untranslated(&format!("{}{key}", self.prefix), reason);
        }
    }

    /// Lists every key left as not translated with `reason`.
    pub fn finish(self, c: &mut Component, reason: &str) {
        for (k, v) in self.map {
            let key = match &v {
                Value::Object(_) | Value::Array(_) => format!("{}{k}", self.prefix),
                other => format!("{}{k} = {other}", self.prefix),
            };
            c.untranslated(&key, reason);
        }
    }
}

/// `secs` as a logferry duration: whole seconds as `"Ns"`, else
/// milliseconds.
pub fn duration(secs: f64) -> String {
    if secs.fract() == 0.0 && secs >= 0.0 {
        format!("{}s", secs as u64)
    } else {
        format!("{}ms", (secs * 1000.0).round().max(0.0) as u64)
    }
}

/// A Vector value as a logferry one; strings with Vector's environment
/// references in logferry's syntax (differences noted on `c`).
pub fn value(v: &Value, c: &mut Component) -> model::Value {
    match v {
        Value::String(s) => model::Value::Str(string(s, c)),
        Value::Bool(b) => model::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => model::Value::Int(i),
            None => model::Value::Str(n.to_string()),
        },
        Value::Array(items) => model::Value::List(items.iter().map(|i| value(i, c)).collect()),
        Value::Object(m) => {
            model::Value::Map(m.iter().map(|(k, v)| (k.clone(), value(v, c))).collect())
        }
        Value::Null => model::Value::Str(String::new()),
    }
}

/// A string with Vector's environment references in logferry's syntax.
pub fn string(s: &str, c: &mut Component) -> String {
    let mut notes = Vec::new();
    let out = read::interpolation(s, &mut notes);
    for n in notes {
        if !c.remarks.contains(&n) {
            c.remark(n);
        }
    }
    out
}

/// Sets `key` on `c` to the string `s` (references rewritten).
pub fn set_str(c: &mut Component, key: &str, s: &str) {
    let v = string(s, c);
    c.set(key, v);
}

/// Vector's `tls` table as logferry's: a listening source's
/// (`listener`: `verify_certificate` asks for client certificates) or a
/// client's (`verify_certificate = false` accepts any server).
pub fn tls(k: &mut Keys, c: &mut Component, listener: bool) {
    let Some(mut t) = k.table("tls") else {
        return;
    };
    if t.bool("enabled") == Some(false) {
        t.finish(c, "TLS is off");
        return;
    }
    for (from, to) in [
        ("crt_file", "cert_file"),
        ("key_file", "key_file"),
        ("ca_file", "ca_file"),
        ("server_name", "server_name"),
    ] {
        if listener && from == "server_name" {
            continue;
        }
        if let Some(v) = t.text(from) {
            let v = string(&v, c);
            c.set_in("tls", to, v);
        }
    }
    match t.bool("verify_certificate") {
        Some(v) if listener => c.set_in("tls", "verify_client", model::Value::Bool(v)),
        Some(false) => c.set_in("tls", "insecure_skip_verify", model::Value::Bool(true)),
        _ => {}
    }
    if !listener {
        t.skip("verify_hostname");
    }
    t.finish(c, "no logferry equivalent");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(5.0), "5s");
        assert_eq!(duration(0.25), "250ms");
    }

    #[test]
    fn what_is_left_is_listed() {
        let map = serde_json::json!({"a": 1, "b": {"c": 2}, "d": "x"});
        let Value::Object(map) = map else {
            unreachable!()
        };
        let mut keys = Keys::new(map, "");
        assert_eq!(keys.int("a"), Some(1));
        let b = keys.table("b").unwrap();
        let mut c = Component::new(model::Kind::Sink, "s", "null", "o".into());
        b.finish(&mut c, "why");
        keys.finish(&mut c, "why");
        let names: Vec<&str> = c.untranslated.iter().map(|u| u.key.as_str()).collect();
        assert_eq!(names, ["b.c = 2", "d = \"x\""]);
    }
}
