//! Fluent Bit's `modify` filter with `Condition`s (or rules logferry's
//! modify filter lacks) as a `remap` program that does what
//! `plugins/filter_modify/modify.c` does: every condition is checked on
//! the record as it came, and only when all hold are the rules applied,
//! one after the other, in the order of the file.

use super::Keys;
use crate::cli::import::model::Component;

/// Keys of the `modify` filter that are rules, as Fluent Bit names them.
const RULES: &[&str] = &[
    "set",
    "add",
    "add_if_not_present",
    "remove",
    "remove_wildcard",
    "remove_regex",
    "rename",
    "hard_rename",
    "copy",
    "hard_copy",
    "move_to_start",
    "move_to_end",
];

/// Whether the section needs a program: it has a `Condition`, or a rule
/// logferry's modify filter has no key for.
pub fn needs_program(keys: &Keys) -> bool {
    ["condition", "remove_wildcard", "remove_regex"]
        .iter()
        .any(|k| keys.has(k))
}

/// Takes the conditions and rules from `keys` and makes `c` a `remap`
/// filter running them; what cannot be written is listed on `c`.
pub fn to_remap(keys: &mut Keys, c: &mut Component) {
    let mut program = String::new();
    let mut checks: Vec<String> = Vec::new();
    for cond in keys.take_all("condition") {
        match condition(&cond, checks.len(), &mut program) {
            Ok(var) => checks.push(var),
            Err(e) => c.untranslated(&format!("Condition {cond}"), e),
        }
    }
    let mut body = String::new();
    let mut moved = false;
    for (rule, value) in keys.take_ordered(RULES) {
        match statement(&rule.to_ascii_lowercase(), &value) {
            Ok(Some(s)) => body.push_str(&s),
            Ok(None) => moved = true,
            Err(e) => c.untranslated(&format!("{rule} {value}"), e),
        }
    }
    if moved {
        c.remark(
            "Move_to_start/Move_to_end: a remap program writes a record's keys in sorted order",
        );
    }
    if checks.is_empty() {
        program.push_str(&body);
    } else {
        program.push_str(&format!("if {} {{\n", checks.join(" && ")));
        for line in body.lines() {
            program.push_str(&format!("  {line}\n"));
        }
        program.push_str("}\n");
    }
    c.set("type", "remap");
    c.set("source", program);
    c.remark("Fluent Bit's modify with Condition: a remap program checks the conditions on the record as it came and applies the rules in order");
}

/// The tokens of a rule line as Fluent Bit splits it: at most `most`,
/// the last taking the rest, double quotes taken off.
fn tokens(v: &str, most: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = v.trim();
    while !rest.is_empty() {
        if out.len() + 1 == most {
            out.push(unquote(rest).to_string());
            break;
        }
        let (tok, after) = if let Some(q) = rest.strip_prefix('"') {
            match q.find('"') {
                Some(end) => (&q[..end], &q[end + 1..]),
                None => (q, ""),
            }
        } else {
            match rest.find(char::is_whitespace) {
                Some(end) => (&rest[..end], &rest[end..]),
                None => (rest, ""),
            }
        };
        out.push(tok.to_string());
        rest = after.trim_start();
    }
    out
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

/// A VRL raw string literal holding `v`.
pub(super) fn raw(prefix: char, v: &str) -> String {
    format!("{prefix}'{}'", v.replace('\'', "\\'"))
}

/// A top-level field of the record.
pub(super) fn top(key: &str) -> String {
    format!(".{}", serde_json::Value::String(key.to_string()))
}

/// A field as Fluent Bit's record accessor names it: `key`, `$key` or
/// `$a['b']['c']`.
fn accessor(key: &str) -> Result<String, String> {
    let Some(rest) = key.strip_prefix('$') else {
        return Ok(top(key));
    };
    let (head, mut tail) = match rest.find('[') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut path = top(head);
    while !tail.is_empty() {
        let inner = tail
            .strip_prefix("['")
            .and_then(|t| t.split_once("']"))
            .ok_or_else(|| format!("{key}: only $a['b'] record accessors are read"))?;
        path.push_str(&top(inner.0));
        tail = inner.1;
    }
    Ok(path)
}

/// A regex as VRL reads it (Rust's regex syntax), checked now.
fn regex(re: &str) -> Result<String, String> {
    regex::Regex::new(re).map_err(|e| format!("not a regex logferry reads: {e}"))?;
    Ok(raw('r', re))
}

/// Fluent Bit matches a value against a regex when it is a string, or a
/// boolean read as `true`/`false`; any other value does not match.
fn value_matches(value: &str, re: &str) -> String {
    format!("((is_string({value}) && match(string!({value}), {re})) || (is_boolean({value}) && match(to_string!({value}), {re})))")
}

/// Writes the check of `cond` into `program` as the variable `c{n}`.
fn condition(cond: &str, n: usize, program: &mut String) -> Result<String, String> {
    let parts = tokens(cond, 3);
    let (kind, a, b) = match parts.as_slice() {
        [k, a] => (k.to_ascii_lowercase(), a.as_str(), None),
        [k, a, b] => (k.to_ascii_lowercase(), a.as_str(), Some(b.as_str())),
        _ => return Err("a condition is TYPE KEY [VALUE]".into()),
    };
    let need_b = || b.ok_or_else(|| format!("{kind} takes KEY VALUE"));
    let var = format!("c{n}");
    let check = match kind.as_str() {
        "key_exists" => format!("exists({})", accessor(a)?),
        "key_does_not_exist" => format!("!exists({})", accessor(a)?),
        "a_key_matches" => format!("match_array(keys(.), {})", regex(a)?),
        "no_key_matches" => format!("!match_array(keys(.), {})", regex(a)?),
        "key_value_equals" => format!("{} == {}", accessor(a)?, raw('s', need_b()?)),
        "key_value_does_not_equal" => {
            let f = accessor(a)?;
            format!("exists({f}) && {f} != {}", raw('s', need_b()?))
        }
        "key_value_matches" => value_matches(&accessor(a)?, &regex(need_b()?)?),
        "key_value_does_not_match" => {
            let f = accessor(a)?;
            format!("exists({f}) && !{}", value_matches(&f, &regex(need_b()?)?))
        }
        "matching_keys_have_matching_values" | "matching_keys_do_not_have_matching_values" => {
            let (kre, vre) = (regex(a)?, regex(need_b()?)?);
            program.push_str(&format!(
                "{var} = true\nfor_each(.) -> |k, v| {{\n  if match(k, {kre}) && !{} {{ {var} = false }}\n}}\n",
                value_matches("v", &vre)
            ));
            return Ok(if kind.contains("do_not") {
                format!("!{var}")
            } else {
                var
            });
        }
        other => return Err(format!("Fluent Bit has no condition {other}")),
    };
    program.push_str(&format!("{var} = {check}\n"));
    Ok(var)
}

/// The VRL statement of one rule; `None` for a rule that only orders keys.
fn statement(rule: &str, value: &str) -> Result<Option<String>, String> {
    let parts = tokens(value, 2);
    let one = || match parts.as_slice() {
        [k] => Ok(k.as_str()),
        _ => Err(format!("{rule} takes one KEY")),
    };
    let two = || match parts.as_slice() {
        [k, v] => Ok((k.as_str(), v.as_str())),
        _ => Err(format!("{rule} takes KEY VALUE")),
    };
    let s = match rule {
        "set" => {
            let (k, v) = two()?;
            format!("{} = {}\n", top(k), raw('s', v))
        }
        "add" | "add_if_not_present" => {
            let (k, v) = two()?;
            format!("if !exists({0}) {{ {0} = {1} }}\n", top(k), raw('s', v))
        }
        "remove" => format!("del({})\n", top(one()?)),
        // Fluent Bit compares the key's first characters with the whole
        // value, its `*` included
        "remove_wildcard" => format!(
            ". = filter(.) -> |k, _v| {{ !starts_with(k, {}) }}\n",
            raw('s', one()?)
        ),
        "remove_regex" => format!(
            ". = filter(.) -> |k, _v| {{ !match(k, {}) }}\n",
            regex(one()?)?
        ),
        "rename" => {
            let (k, v) = two()?;
            format!(
                "if exists({0}) && !exists({1}) {{ {1} = del({0}) }}\n",
                top(k),
                top(v)
            )
        }
        "hard_rename" => {
            let (k, v) = two()?;
            format!("if exists({0}) {{ {1} = del({0}) }}\n", top(k), top(v))
        }
        "copy" => {
            let (k, v) = two()?;
            format!(
                "if exists({0}) && !exists({1}) {{ {1} = {0} }}\n",
                top(k),
                top(v)
            )
        }
        "hard_copy" => {
            let (k, v) = two()?;
            format!("if exists({0}) {{ {1} = {0} }}\n", top(k), top(v))
        }
        "move_to_start" | "move_to_end" => return Ok(None),
        other => return Err(format!("Fluent Bit's modify has no rule {other}")),
    };
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_split_as_fluent_bit_splits_them() {
        assert_eq!(tokens("a b c d", 3), ["a", "b", "c d"]);
        assert_eq!(tokens("\"a b\" c", 3), ["a b", "c"]);
        assert_eq!(tokens("k \"v w\"", 2), ["k", "v w"]);
        assert_eq!(tokens("k", 2), ["k"]);
    }

    #[test]
    fn accessors_become_vrl_paths() {
        assert_eq!(accessor("level").unwrap(), ".\"level\"");
        assert_eq!(
            accessor("$kubernetes['labels']['app']").unwrap(),
            ".\"kubernetes\".\"labels\".\"app\""
        );
        assert!(accessor("$a.b[0]").is_err());
    }

    #[test]
    fn conditions_guard_the_rules_in_order() {
        let mut program = String::new();
        let c0 = condition("Key_value_equals level error", 0, &mut program).unwrap();
        let c1 = condition(
            "Matching_keys_do_not_have_matching_values ^x_ ^ok$",
            1,
            &mut program,
        )
        .unwrap();
        assert_eq!(c0, "c0");
        assert_eq!(c1, "!c1");
        assert!(program.starts_with("c0 = .\"level\" == s'error'\nc1 = true\n"));
        assert!(condition("Key_exists", 2, &mut program).is_err());
        assert!(condition("Key_value_matches a (", 2, &mut program).is_err());
        assert_eq!(
            statement("rename", "a b").unwrap().unwrap(),
            "if exists(.\"a\") && !exists(.\"b\") { .\"b\" = del(.\"a\") }\n"
        );
        assert_eq!(statement("move_to_end", "a").unwrap(), None);
    }
}
