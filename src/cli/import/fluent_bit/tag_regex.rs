//! A tail input's `Tag_Regex` with a `Tag` of its named captures
//! (`kube.<namespace_name>.<pod_name>.<container_name>`) as a `remap`
//! program after the source, doing what `tag_compose` in
//! `plugins/in_tail/tail_file.c` does when it opens a file: the regex is
//! searched (anywhere, as `onig_search`) in the file's path as the glob
//! gave it; each `<name>` becomes the text of that named capture, or `_`
//! when the capture matched nothing or the regex has none of that name;
//! the rest of `Tag` is kept as written. A file whose path the regex does
//! not match is not followed at all (nor is any file when the regex has no
//! group, or `Tag` a `<` without its `>`): its records are dropped here.

use super::modify::{raw, top};

/// The field the tail source puts the path in for the program when the
/// input has no `Path_Key`; the program deletes it.
pub const PATH_FIELD: &str = "_tag_regex_path";

/// Why a `Tag_Regex` has no program.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// logferry cannot read the regex (Rust's regex syntax, not Onigmo's).
    Unreadable(String),
    /// Fluent Bit follows no file with it: the input reads nothing.
    FollowsNothing(String),
}

/// The `remap` program giving each record of the file whose path is in
/// `field` the tag `template` makes from the captures of `regex`;
/// `private`: the field is deleted after.
pub fn program(regex: &str, template: &str, field: &str, private: bool) -> Result<String, Refusal> {
    let pattern = rust_pattern(regex);
    let compiled = regex::Regex::new(&pattern)
        .map_err(|e| Refusal::Unreadable(format!("not a regex logferry reads: {e}")))?;
    // flb_regex_do counts the groups of a match: none is taken as no match
    if compiled.captures_len() < 2 {
        return Err(Refusal::FollowsNothing(format!(
            "Tag_Regex {regex} has no group, so Fluent Bit follows no file with it"
        )));
    }
    let groups: Vec<&str> = compiled.capture_names().flatten().collect();
    let mut out = format!(
        "caps, err = parse_regex(string({0}) ?? \"\", {1})\nif err != null {{ abort }}\n",
        top(field),
        raw('r', &pattern)
    );
    let mut parts: Vec<String> = Vec::new();
    for part in template_parts(template)? {
        match part {
            Part::Text(t) => parts.push(raw('s', t)),
            Part::Capture(name) if groups.contains(&name) => {
                let var = format!("p{}", parts.len());
                out.push_str(&format!(
                    "{var} = string(caps{}) ?? \"\"\nif {var} == \"\" {{ {var} = \"_\" }}\n",
                    top(name)
                ));
                parts.push(var);
            }
            Part::Capture(_) => parts.push("\"_\"".into()),
        }
    }
    if parts.is_empty() {
        parts.push("\"\"".into());
    }
    out.push_str(&format!("%tag = {}\n", parts.join(" + ")));
    if private {
        out.push_str(&format!("del({})\n", top(field)));
    }
    Ok(out)
}

/// A piece of `Tag`: text kept as written, or a `<name>` placeholder.
#[derive(Debug, PartialEq)]
enum Part<'a> {
    Text(&'a str),
    Capture(&'a str),
}

/// `Tag` cut as `tag_compose` reads it: `<` up to the next `>`, with no
/// other `<` between, is a placeholder; a `<` without one fails the file.
fn template_parts(template: &str) -> Result<Vec<Part<'_>>, Refusal> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        if open > 0 {
            parts.push(Part::Text(&rest[..open]));
        }
        let after = &rest[open + 1..];
        match after.find('>') {
            Some(close) if !after[..close].contains('<') => {
                parts.push(Part::Capture(&after[..close]));
                rest = &after[close + 1..];
            }
            _ => {
                return Err(Refusal::FollowsNothing(format!(
                    "Tag {template} has a < without its >, so Fluent Bit follows no file"
                )))
            }
        }
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    Ok(parts)
}

/// Fluent Bit's `/regex/` and `/regex/imx` forms (`str_to_regex` in
/// `src/flb_regex.c`) as a plain pattern with inline flags: Onigmo's `m`
/// (a dot matches a newline) is Rust's `s`.
fn rust_pattern(regex: &str) -> String {
    let Some(body) = regex.strip_prefix('/') else {
        return regex.to_string();
    };
    if let Some(close) = body.rfind('/') {
        let flags = &body[close + 1..];
        if !flags.is_empty() && flags.chars().all(|c| matches!(c, 'i' | 'm' | 'x')) {
            let ours: String = flags
                .chars()
                .map(|c| if c == 'm' { 's' } else { c })
                .collect();
            return format!("(?{ours}){}", &body[..close]);
        }
    }
    match body.strip_suffix('/') {
        Some(inner) => inner.to_string(),
        None => regex.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_text_and_unbalanced_brackets() {
        assert_eq!(
            template_parts("kube.<ns>.<pod>x").unwrap(),
            [
                Part::Text("kube."),
                Part::Capture("ns"),
                Part::Text("."),
                Part::Capture("pod"),
                Part::Text("x")
            ]
        );
        assert!(matches!(
            template_parts("a.<b<c>"),
            Err(Refusal::FollowsNothing(_))
        ));
        assert!(matches!(
            template_parts("a.<b"),
            Err(Refusal::FollowsNothing(_))
        ));
        assert_eq!(template_parts("a>b").unwrap(), [Part::Text("a>b")]);
    }

    #[test]
    fn slashes_and_flags_as_fluent_bit_reads_them() {
        assert_eq!(rust_pattern("/(?<a>x)\\.log$"), "/(?<a>x)\\.log$");
        assert_eq!(rust_pattern("/(?<a>x)/"), "(?<a>x)");
        assert_eq!(rust_pattern("/(?<a>x)/im"), "(?is)(?<a>x)");
        assert_eq!(rust_pattern("(?<a>x)"), "(?<a>x)");
    }

    #[test]
    fn a_regex_without_groups_or_unreadable_has_no_program() {
        assert!(matches!(
            program("\\.log$", "a", "f", true),
            Err(Refusal::FollowsNothing(_))
        ));
        assert!(matches!(
            program("(?<a>x)\\h", "a", "f", true),
            Err(Refusal::Unreadable(_))
        ));
        let p = program("(?<a>[a-z]+)\\.log$", "app.<a>.<b>", "f", true).unwrap();
        assert!(p.contains("%tag = s'app.' + p1 + s'.' + \"_\""), "{p}");
        assert!(p.ends_with("del(.\"f\")\n"), "{p}");
    }
}
