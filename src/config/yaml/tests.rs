use super::*;

#[test]
fn a_yaml_document_is_the_tree_toml_gives() {
    let yaml = "\
sources:
  in:
    type: forward
    address: 127.0.0.1:24224
    keepalive: true
    ratio: 0.5
    max: 10
    tags: [a, b]
base: &base
  x: 1
sinks:
  out:
    <<: *base
    '200': ok
    404: missing
";
    let toml = "\
[sources.in]
type = 'forward'
address = '127.0.0.1:24224'
keepalive = true
ratio = 0.5
max = 10
tags = ['a', 'b']
[base]
x = 1
[sinks.out]
x = 1
200 = 'ok'
404 = 'missing'
";
    assert_eq!(read(yaml).unwrap(), toml::from_str::<Table>(toml).unwrap());
    assert_eq!(read("").unwrap(), Table::new());
    assert_eq!(read("# only a comment\n").unwrap(), Table::new());
}

#[test]
fn what_toml_cannot_hold_is_an_error_at_its_key() {
    let e = read("sinks:\n  out:\n    type: file\n    path:\n").unwrap_err();
    assert_eq!(
        e,
        YamlError::Value {
            path: vec!["sinks".into(), "out".into(), "path".into()],
            message: "has no value (YAML null: nothing after `key:`, `~` or `null`); give it a value, or remove the key".into()
        }
    );
    let e = read("a:\n  - 1\n  - !secret x\n").unwrap_err();
    assert!(
        matches!(&e, YamlError::Value { path, message } if path == &["a", "1"] && message.contains("!secret")),
        "{e:?}"
    );
    let e = read("a: 18446744073709551615\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("`a`: 18446744073709551615 is larger"),
        "{e}"
    );
    let e = read("? [a, b]\n: 1\n").unwrap_err();
    assert!(
        e.to_string().contains("a key must be a string, not a list"),
        "{e}"
    );
}

#[test]
fn syntax_errors_have_a_line_and_column_and_no_position_in_the_message() {
    let e = read("sources:\n  in:\n    type: forward\n   bad: [\n").unwrap_err();
    let YamlError::Syntax {
        line,
        column,
        message,
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!(line, Some(4), "{message}");
    assert!(column.is_some());
    assert!(!message.contains(" at line 4"), "{message}");
    let e = read("a: 1\na: 2\n").unwrap_err();
    assert!(e.to_string().contains("duplicate"), "{e}");
    assert!(
        matches!(e, YamlError::Syntax { line: Some(2), .. }),
        "{e:?}"
    );
    let e = read("- a\n- b\n").unwrap_err();
    assert!(e.to_string().contains("must be a mapping"), "{e}");
    // a text ending inside a flow sequence, no newline at its end: the
    // error is on its last line (the parser says the line after it)
    let e =
        read("[sour \"http\"\nadedrss = \"0.0.0.0:9880\"\nmax_body_b1\"es = \"sinks.").unwrap_err();
    let YamlError::Syntax { line, column, .. } = e else {
        panic!("{e:?}")
    };
    assert_eq!((line, column), (Some(3), Some(25)));
}
