//! What arrived against what a `[[tests.outputs]]` table expects, said
//! field by field.

use regex::Regex;
use serde_json::Value;

use super::spec::{json, json_table, Condition, OutputSpec};
use crate::filters::field::FieldPath;

/// Every difference between `got` and `want`, one line each (empty when
/// the output is as expected).
pub fn differences(want: &OutputSpec, got: &[Value]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if let Some(n) = want.count {
        if got.len() != n {
            out.push(format!("expected {n} records, got {}", got.len()));
            out.extend(got.iter().take(10).map(|r| format!("  got: {r}")));
        }
    }
    if let Some(records) = &want.records {
        if want.count.is_none() && records.len() != got.len() {
            out.push(format!(
                "expected {} records, got {}",
                records.len(),
                got.len()
            ));
        }
        for (i, expected) in records.iter().enumerate() {
            let Some(actual) = got.get(i) else {
                out.push(format!(
                    "record {}: expected {}, missing",
                    i + 1,
                    json_table(expected)
                ));
                continue;
            };
            for d in fields(&json_table(expected), actual) {
                out.push(format!("record {}: {d}", i + 1));
            }
        }
        for (i, extra) in got.iter().enumerate().skip(records.len()) {
            out.push(format!("record {}: not expected, got {extra}", i + 1));
        }
    }
    if !want.conditions.is_empty() && got.is_empty() && want.count != Some(0) {
        out.push("no record arrived to check the conditions on".into());
    }
    let conditions = want
        .conditions
        .iter()
        .map(Check::new)
        .collect::<Result<Vec<_>, _>>()?;
    for (i, record) in got.iter().enumerate() {
        for c in &conditions {
            if let Some(why) = c.fails(record) {
                out.push(format!("record {}: {why}; the record: {record}", i + 1));
            }
        }
    }
    Ok(out)
}

/// The differences between two records, field by field.
fn fields(want: &Value, got: &Value) -> Vec<String> {
    let (Value::Object(w), Value::Object(g)) = (want, got) else {
        return match want == got {
            true => Vec::new(),
            false => vec![format!("expected {want}, got {got}")],
        };
    };
    let mut out = Vec::new();
    for (k, v) in w {
        match g.get(k) {
            None => out.push(format!("field {k:?}: expected {v}, missing")),
            Some(a) if a != v => out.push(format!("field {k:?}: expected {v}, got {a}")),
            Some(_) => {}
        }
    }
    for (k, a) in g {
        if !w.contains_key(k) {
            out.push(format!("field {k:?}: not expected, got {a}"));
        }
    }
    out
}

/// A compiled condition.
struct Check<'a> {
    condition: &'a Condition,
    path: FieldPath,
    regex: Option<Regex>,
}

impl<'a> Check<'a> {
    fn new(condition: &'a Condition) -> Result<Check<'a>, String> {
        let path = FieldPath::parse(&condition.field).map_err(|e| format!("condition: {e}"))?;
        let regex = match &condition.matches {
            Some(r) => Some(
                Regex::new(r).map_err(|e| format!("condition on {:?}: {e}", condition.field))?,
            ),
            None => None,
        };
        Ok(Check {
            condition,
            path,
            regex,
        })
    }

    /// Why `record` does not meet the condition, if it does not.
    fn fails(&self, record: &Value) -> Option<String> {
        let field = &self.condition.field;
        let value = lookup(record, &self.path);
        if let Some(want) = self.condition.exists {
            return match (want, value) {
                (true, None) => Some(format!("field {field:?}: expected to exist, missing")),
                (false, Some(v)) => {
                    Some(format!("field {field:?}: expected not to exist, got {v}"))
                }
                _ => None,
            };
        }
        if let Some(want) = &self.condition.equals {
            let want = json(want);
            return match value {
                None => Some(format!("field {field:?}: expected {want}, missing")),
                Some(v) if *v != want => Some(format!("field {field:?}: expected {want}, got {v}")),
                Some(_) => None,
            };
        }
        let regex = self.regex.as_ref()?;
        let text = match value {
            None => {
                return Some(format!(
                    "field {field:?}: expected to match /{regex}/, missing"
                ))
            }
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            Some(v) => {
                return Some(format!(
                    "field {field:?}: expected to match /{regex}/, got {v}"
                ))
            }
        };
        (!regex.is_match(&text))
            .then(|| format!("field {field:?}: expected to match /{regex}/, got {text:?}"))
    }
}

/// The value at `path` in a JSON record.
fn lookup<'v>(record: &'v Value, path: &FieldPath) -> Option<&'v Value> {
    let mut v = record;
    for key in path.keys() {
        let key = std::str::from_utf8(key).ok()?;
        v = v.as_object()?.get(key)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(toml_text: &str) -> OutputSpec {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn records_are_compared_whole_field_by_field() {
        let want = output("sink = \"s\"\nrecords = [{ a = \"1\", b = 2 }]\n");
        let got = [serde_json::json!({ "a": "1", "b": 2 })];
        assert!(differences(&want, &got).unwrap().is_empty());
        let got = [serde_json::json!({ "a": 1, "c": true })];
        let d = differences(&want, &got).unwrap();
        assert_eq!(
            d,
            [
                "record 1: field \"a\": expected \"1\", got 1",
                "record 1: field \"b\": expected 2, missing",
                "record 1: field \"c\": not expected, got true",
            ]
        );
        let d = differences(&want, &[]).unwrap();
        assert_eq!(d[0], "expected 1 records, got 0");
    }

    #[test]
    fn conditions_hold_for_every_record() {
        let want = output(
            "sink = \"s\"\nconditions = [{ field = \"$k['l']\", equals = \"x\" }, { field = \"n\", matches = \"^2\" }, { field = \"gone\", exists = false }]\n",
        );
        let ok = serde_json::json!({ "k": { "l": "x" }, "n": 200 });
        assert!(differences(&want, std::slice::from_ref(&ok))
            .unwrap()
            .is_empty());
        let bad = serde_json::json!({ "k": { "l": "y" }, "n": 500, "gone": 1 });
        let d = differences(&want, &[ok, bad]).unwrap();
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d.iter().all(|l| l.starts_with("record 2: ")), "{d:?}");
        assert!(!differences(&want, &[]).unwrap().is_empty());
    }

    #[test]
    fn count_zero_says_nothing_arrives() {
        let want = output("sink = \"s\"\ncount = 0\n");
        assert!(differences(&want, &[]).unwrap().is_empty());
        let d = differences(&want, &[serde_json::json!({ "m": 1 })]).unwrap();
        assert_eq!(d[0], "expected 0 records, got 1");
    }
}
