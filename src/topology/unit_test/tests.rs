use super::*;

fn outcomes(text: &str) -> Vec<Outcome> {
    let config = Config::parse(text, "test.toml").unwrap();
    let specs = specs(&config, text).unwrap();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_all(&config, &specs))
}

const PIPELINE: &str = r#"
[sources.app]
type = "tcp"
address = "127.0.0.1:0"
tag = "app"

[filters.parse]
type = "parser"
match = "app"
format = "logfmt"

[filters.errors]
type = "rewrite_tag"
match = "app"
rules = [{ field = "level", regex = "^error$", tag = "alert" }]

[sinks.alerts]
type = "null"
match = "alert"

[sinks.rest]
type = "null"
match = "app"
"#;

#[test]
fn inputs_go_through_the_filters_to_the_sinks_their_tags_match() {
    let text = format!(
        "{PIPELINE}{}",
        r#"
[[tests]]
name = "errors become alerts"
[[tests.inputs]]
source = "app"
lines = ["level=error n=1", "level=info n=2", "level=error n=3"]
[[tests.outputs]]
sink = "alerts"
records = [{ level = "error", n = "1" }, { level = "error", n = "3" }]
[[tests.outputs]]
sink = "rest"
conditions = [{ field = "level", equals = "info" }, { field = "n", matches = "^2$" }]
count = 1
[[tests.outputs]]
filter = "parse"
count = 3
conditions = [{ field = "message", exists = false }]
"#
    );
    let o = outcomes(&text);
    assert_eq!(o.len(), 1);
    assert!(o[0].passed(), "{}", report(&o));
}

#[test]
fn a_wrong_expectation_fails_with_each_difference() {
    let text = format!(
        "{PIPELINE}{}",
        r#"
[[tests]]
name = "wrong"
[[tests.inputs]]
source = "app"
lines = ["level=error n=1", "level=info n=2"]
[[tests.outputs]]
sink = "alerts"
records = [{ level = "error", n = 1 }]
[[tests.outputs]]
sink = "rest"
count = 0
"#
    );
    let o = outcomes(&text);
    assert!(!o[0].passed());
    let r = report(&o);
    assert!(r.contains("test \"wrong\" ... FAILED"), "{r}");
    assert!(
        r.contains("sink alerts: record 1: field \"n\": expected 1, got \"1\""),
        "{r}"
    );
    assert!(r.contains("sink rest: expected 0 records, got 1"), "{r}");
    assert!(r.ends_with("0 passed, 1 failed\n"), "{r}");
}

#[test]
fn an_input_after_a_filter_skips_it_and_the_ones_before() {
    let text = format!(
        "{PIPELINE}{}",
        r#"
[[tests]]
name = "after parse"
[[tests.inputs]]
filter = "parse"
tag = "app"
records = [{ level = "error", n = 7 }]
[[tests.outputs]]
sink = "alerts"
records = [{ level = "error", n = 7 }]
[[tests.outputs]]
filter = "parse"
count = 0
"#
    );
    let o = outcomes(&text);
    assert!(o[0].passed(), "{}", report(&o));
}

#[test]
fn bad_tests_are_refused_before_any_runs() {
    let bad = |tests: &str| {
        let text = format!("{PIPELINE}{tests}");
        let config = Config::parse(&text, "t.toml").unwrap();
        specs(&config, &text).unwrap_err().to_string()
    };
    assert_eq!(bad(""), "no [[tests]] tables in the file");
    let e = bad("[[tests]]\nname = \"x\"\n[[tests.inputs]]\nsource = \"nope\"\nlines = [\"a\"]\n[[tests.outputs]]\nsink = \"rest\"\ncount = 1\n");
    assert!(e.contains("source nope is not in the configuration"), "{e}");
    let e = bad("[[tests]]\nname = \"x\"\n[[tests.inputs]]\nsource = \"app\"\nlines = [\"a\"]\n[[tests.outputs]]\nsink = \"rest\"\n");
    assert!(
        e.contains("needs `records`, `conditions` or `count`"),
        "{e}"
    );
    let e = bad("[[tests]]\nname = \"x\"\ncolour = 1\n");
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn a_source_without_a_tag_of_its_own_needs_one_in_the_input() {
    let text = r#"
[sources.web]
type = "http"
address = "127.0.0.1:0"
[sinks.all]
type = "null"
match = "**"
[[tests]]
name = "no tag"
[[tests.inputs]]
source = "web"
lines = ["x"]
[[tests.outputs]]
sink = "all"
count = 1
"#;
    let o = outcomes(text);
    // a test that cannot run, not a failed one: named by its line
    let error = o[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("give the input a `tag`"), "{o:?}");
    assert_eq!(o[0].place, TestPlace::Line(8));
    assert_eq!(exit_code(&o), 2);
    assert!(report(&o).contains("line 8: [[tests]]: cannot run: "));
}
