use std::time::{Duration, Instant};

use super::*;

fn joiner(p: Preset) -> Joiner {
    let (rules, limits) = MultilineConfig::preset(p).compile().unwrap();
    Joiner::new(rules, limits)
}

/// Feeds `text`'s lines (positions: their byte offsets), then flushes;
/// returns the records as strings.
fn join(j: &mut Joiner, text: &str) -> Vec<String> {
    let now = Instant::now();
    let mut out = Vec::new();
    let mut pos = 0;
    for line in text.lines() {
        j.push(line.as_bytes(), pos, now, &mut out);
        pos += line.len() as u64 + 1;
    }
    j.flush_all(&mut out);
    out.into_iter()
        .map(|r| String::from_utf8(r.message).unwrap())
        .collect()
}

const JAVA: &str = "\
2026-11-22 10:00:00 ERROR [main] App - request 7 failed
java.lang.IllegalStateException: boom 7
\tat com.example.App.handle(App.java:42)
\tat com.example.App.main(App.java:10)
Caused by: java.io.IOException: disk full
\tat com.example.Store.write(Store.java:99)
\t... 12 more
Suppressed: java.lang.RuntimeException: close failed
\t\tat com.example.Store.close(Store.java:120)";

#[test]
fn java_trace_with_caused_by_and_more_is_one_record_between_plain_lines() {
    let text =
        format!("2026-11-22 INFO before\n{JAVA}\n2026-11-22 INFO after\n2026-11-22 INFO last");
    let got = join(&mut joiner(Preset::Java), &text);
    assert_eq!(
        got,
        vec![
            "2026-11-22 INFO before".to_string(),
            JAVA.to_string(),
            "2026-11-22 INFO after".to_string(),
            "2026-11-22 INFO last".to_string(),
        ]
    );
}

#[test]
fn java_exception_without_a_log_line_above_and_two_in_a_row() {
    let one = "java.lang.NullPointerException\n\tat a.B.c(B.java:1)";
    let two =
        "Exception in thread \"main\" java.lang.Error: x\n\tat a.B.main(B.java:3)\n\t... 3 more";
    let got = join(&mut joiner(Preset::Java), &format!("{one}\n{two}"));
    assert_eq!(got, vec![one.to_string(), two.to_string()]);
}

#[test]
fn python_traceback_ends_at_its_exception_line() {
    let tb = "\
Traceback (most recent call last):
  File \"/app/main.py\", line 10, in <module>
    main()
  File \"/app/main.py\", line 6, in main
    raise ValueError(\"bad 3\")
ValueError: bad 3";
    let mut j = joiner(Preset::Python);
    let now = Instant::now();
    let mut out = Vec::new();
    j.push(b"INFO:root:starting", 0, now, &mut out);
    for (i, line) in tb.lines().enumerate() {
        j.push(line.as_bytes(), 100 + i as u64, now, &mut out);
    }
    // complete at its last line: nothing waits for a timeout
    assert!(j.is_empty());
    j.push(b"INFO:root:after", 200, now, &mut out);
    let got: Vec<String> = out
        .into_iter()
        .map(|r| String::from_utf8(r.message).unwrap())
        .collect();
    assert_eq!(got, vec!["INFO:root:starting", tb, "INFO:root:after"]);
}

#[test]
fn go_panic_with_several_goroutines_is_one_record() {
    let panic = "\
panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.handler(0xc000012345)
\t/app/main.go:21 +0x1d
main.main()
\t/app/main.go:9 +0x25

goroutine 18 [chan receive]:
main.worker()
\t/app/worker.go:30 +0x40
created by main.main
\t/app/main.go:7 +0x35";
    let text = format!("starting 1\n{panic}\nexit status 2");
    let got = join(&mut joiner(Preset::Go), &text);
    assert_eq!(got, vec!["starting 1", panic, "exit status 2"]);
}

#[test]
fn ruby_backtrace_is_one_record() {
    let bt = "\
/app/lib/app.rb:12:in `divide': divided by 0 (ZeroDivisionError)
\tfrom /app/lib/app.rb:5:in `run'
\tfrom /app/bin/app:3:in `<main>'";
    let got = join(
        &mut joiner(Preset::Ruby),
        &format!("I, started\n{bt}\nI, done"),
    );
    assert_eq!(got, vec!["I, started", bt, "I, done"]);
}

#[test]
fn cri_parts_join_per_stream_up_to_the_f_part() {
    let lines = "\
2026-11-22T10:00:00.000000001Z stdout P first half of 1, 
2026-11-22T10:00:00.000000002Z stderr P err part of 2 
2026-11-22T10:00:00.000000003Z stdout F second half of 1
2026-11-22T10:00:00.000000004Z stdout F whole 3
2026-11-22T10:00:00.000000005Z stderr F and its end
not a cri line";
    let mut j = joiner(Preset::Cri);
    let now = Instant::now();
    let mut out = Vec::new();
    for (i, l) in lines.lines().enumerate() {
        j.push(l.as_bytes(), i as u64, now, &mut out);
        if i == 2 {
            // stdout's record is out; stderr's (from line 1) is held
            assert_eq!(j.held_from(), Some(1));
        }
    }
    assert!(j.is_empty());
    let got: Vec<String> = out
        .into_iter()
        .map(|r| String::from_utf8(r.message).unwrap())
        .collect();
    assert_eq!(
        got,
        vec![
            "2026-11-22T10:00:00.000000001Z stdout F first half of 1, second half of 1",
            "2026-11-22T10:00:00.000000004Z stdout F whole 3",
            "2026-11-22T10:00:00.000000002Z stderr F err part of 2 and its end",
            "not a cri line",
        ]
    );
}

#[test]
fn docker_partial_log_values_join_up_to_the_newline() {
    let lines = [
        r#"{"log":"part one of 1 ","stream":"stdout","time":"2026-11-22T10:00:00.1Z"}"#,
        r#"{"log":"whole 2\n","stream":"stderr","time":"2026-11-22T10:00:00.2Z"}"#,
        r#"{"log":"and the end\n","stream":"stdout","time":"2026-11-22T10:00:00.3Z"}"#,
    ];
    let mut j = joiner(Preset::Docker);
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        j.push(l.as_bytes(), i as u64, Instant::now(), &mut out);
    }
    assert!(j.is_empty());
    assert_eq!(out[0].message, lines[1].as_bytes());
    let joined: serde_json::Value = serde_json::from_slice(&out[1].message).unwrap();
    assert_eq!(joined["log"], "part one of 1 and the end\n");
    assert_eq!(joined["stream"], "stdout");
    assert_eq!(joined["time"], "2026-11-22T10:00:00.1Z");
    assert_eq!(out[1].lines, 2);
}

#[test]
fn max_lines_cuts_and_the_rest_of_the_trace_goes_on_joining() {
    let (rules, mut limits) = MultilineConfig::preset(Preset::Java).compile().unwrap();
    limits.max_lines = 3;
    let mut j = Joiner::new(rules, limits);
    let text = "head 1\njava.lang.Error: x\n\tat a(1)\n\tat b(2)\n\tat c(3)\n\tat d(4)\nnext 2";
    let now = Instant::now();
    let mut out = Vec::new();
    for l in text.lines() {
        j.push(l.as_bytes(), 0, now, &mut out);
    }
    j.flush_all(&mut out);
    let got: Vec<(String, Ending)> = out
        .into_iter()
        .map(|r| (String::from_utf8(r.message).unwrap(), r.ending))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "head 1\njava.lang.Error: x\n\tat a(1)".into(),
                Ending::MaxLines
            ),
            ("\tat b(2)\n\tat c(3)\n\tat d(4)".into(), Ending::MaxLines),
            ("next 2".into(), Ending::Flush),
        ]
    );
}

#[test]
fn max_bytes_cuts_before_the_line_that_would_pass_it() {
    let (rules, mut limits) = MultilineConfig::preset(Preset::Java).compile().unwrap();
    limits.max_bytes = 20;
    let mut j = Joiner::new(rules, limits);
    let now = Instant::now();
    let mut out = Vec::new();
    for l in ["head", "\tat aaaaaaaa(1)", "\tat bbbbbbbb(2)"] {
        j.push(l.as_bytes(), 0, now, &mut out);
    }
    j.flush_all(&mut out);
    assert!(out.iter().all(|r| r.message.len() <= 20));
    assert_eq!(out[0].message, b"head\n\tat aaaaaaaa(1)");
    assert_eq!(out[0].ending, Ending::MaxBytes);
    assert_eq!(out[1].message, b"\tat bbbbbbbb(2)");
    // the CRI bound too: the parts so far go out marked partial
    let (rules, mut limits) = MultilineConfig::preset(Preset::Cri).compile().unwrap();
    limits.max_bytes = 10;
    let mut j = Joiner::new(rules, limits);
    let mut out = Vec::new();
    j.push(b"t stdout P 123456", 0, now, &mut out);
    j.push(b"t stdout P 789012", 1, now, &mut out);
    j.push(b"t stdout F end", 2, now, &mut out);
    assert_eq!(out[0].message, b"t stdout P 123456");
    assert_eq!(out[0].ending, Ending::MaxBytes);
    assert_eq!(out[1].message, b"t stdout F 789012end");
}

#[test]
fn flush_timeout_sends_a_record_no_line_followed() {
    let mut j = joiner(Preset::Java);
    let t0 = Instant::now();
    let mut out = Vec::new();
    j.push(b"java.lang.Error: last", 40, t0, &mut out);
    j.push(b"\tat a(1)", 62, t0, &mut out);
    assert!(out.is_empty());
    assert_eq!(j.held_from(), Some(40));
    assert_eq!(j.deadline(), Some(t0 + Duration::from_secs(1)));
    j.flush_idle(t0 + Duration::from_millis(999), &mut out);
    assert!(out.is_empty());
    j.flush_idle(t0 + Duration::from_secs(1), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].message, b"java.lang.Error: last\n\tat a(1)");
    assert_eq!(out[0].ending, Ending::FlushTimeout);
    assert_eq!(j.held_from(), None);
}

#[test]
fn custom_rules_with_and_without_continue() {
    let cfg = |extra: &str| -> MultilineConfig {
        toml::from_str(&format!("start = '^\\d{{4}} '\n{extra}")).unwrap()
    };
    let text = "  orphan\n2026 one\n  more\n2026 two\nnot indented\n  more";
    let (rules, limits) = cfg("").compile().unwrap();
    assert_eq!(
        join(&mut Joiner::new(rules, limits), text),
        vec![
            "  orphan",
            "2026 one\n  more",
            "2026 two\nnot indented\n  more"
        ]
    );
    let (rules, limits) = cfg("continue = '^\\s'").compile().unwrap();
    assert_eq!(
        join(&mut Joiner::new(rules, limits), text),
        vec![
            "  orphan",
            "2026 one\n  more",
            "2026 two",
            "not indented",
            "  more"
        ]
    );
}

#[test]
fn config_errors_name_the_key() {
    let err = |s: &str| {
        toml::from_str::<MultilineConfig>(s)
            .map_err(|e| e.to_string())
            .and_then(|c| c.compile().map(|_| ()))
            .unwrap_err()
    };
    assert!(err("parser = \"cobol\"").contains("cobol"));
    assert!(err("start = '('").contains("start"));
    assert!(err("parser = \"java\"\nstart = 'x'").contains("not both"));
    assert!(err("start = 'x'\ncontinue = ')'").contains("continue"));
    assert!(err("").contains("parser"));
    assert!(err("parser = \"go\"\nmax_lines = 0").contains("max_lines"));
}

fn chain(toml_text: &str) -> Joiner {
    let c: MultilineConfig = toml::from_str(toml_text).unwrap();
    let (rules, limits) = c.compile().unwrap();
    Joiner::new(rules, limits)
}

#[test]
fn cri_then_java_joins_partial_lines_then_the_trace_per_stream() {
    // a Java trace on stdout, one frame cut into two parts by the runtime,
    // with stderr lines in between
    let lines = "\
2026-11-22T10:00:00.000000001Z stdout F 2026-11-22 ERROR request 7 failed
2026-11-22T10:00:00.000000002Z stderr F warning 1
2026-11-22T10:00:00.000000003Z stdout F java.lang.IllegalStateException: boom 7
2026-11-22T10:00:00.000000004Z stdout P \tat com.example.App.handle(App
2026-11-22T10:00:00.000000005Z stderr P warning 
2026-11-22T10:00:00.000000006Z stdout F .java:42)
2026-11-22T10:00:00.000000007Z stderr F 2
2026-11-22T10:00:00.000000008Z stdout F \tat com.example.App.main(App.java:10)
2026-11-22T10:00:00.000000009Z stdout F 2026-11-22 INFO next";
    let mut j = chain("parser = ['cri', 'java']");
    let now = Instant::now();
    let mut out = Vec::new();
    for (i, l) in lines.lines().enumerate() {
        j.push(l.as_bytes(), i as u64, now, &mut out);
        if i == 4 {
            // the trace, held since line 0, keeps the checkpoint there
            assert_eq!(j.held_from(), Some(0));
        }
    }
    j.flush_all(&mut out);
    assert!(j.is_empty());
    let got: Vec<String> = out
        .into_iter()
        .map(|r| String::from_utf8(r.message).unwrap())
        .collect();
    assert_eq!(
        got,
        vec![
            "2026-11-22T10:00:00.000000002Z stderr F warning 1",
            "2026-11-22T10:00:00.000000001Z stdout F 2026-11-22 ERROR request 7 failed\n\
             java.lang.IllegalStateException: boom 7\n\
             \tat com.example.App.handle(App.java:42)\n\
             \tat com.example.App.main(App.java:10)",
            // (a line is held until the next one of its stream, or the end)
            "2026-11-22T10:00:00.000000005Z stderr F warning 2",
            "2026-11-22T10:00:00.000000009Z stdout F 2026-11-22 INFO next",
        ]
    );
}

#[test]
fn docker_then_java_keeps_the_first_object_and_a_final_newline() {
    let lines = [
        r#"{"log":"ERROR failed\n","stream":"stdout","time":"t1"}"#,
        r#"{"log":"java.lang.Error: x\n","stream":"stdout","time":"t2"}"#,
        r#"{"log":"\tat a.B(B.ja","stream":"stdout","time":"t3"}"#,
        r#"{"log":"va:1)\n","stream":"stdout","time":"t4"}"#,
        r#"{"log":"INFO next\n","stream":"stdout","time":"t5"}"#,
    ];
    let mut j = chain("parser = ['docker', 'java']");
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        j.push(l.as_bytes(), i as u64, Instant::now(), &mut out);
    }
    assert_eq!(out.len(), 1);
    j.flush_all(&mut out);
    let got: Vec<serde_json::Value> = out
        .iter()
        .map(|r| serde_json::from_slice(&r.message).unwrap())
        .collect();
    assert_eq!(
        got[0]["log"],
        "ERROR failed\njava.lang.Error: x\n\tat a.B(B.java:1)\n"
    );
    assert_eq!(got[0]["time"], "t1");
    assert_eq!(got[1]["log"], "INFO next\n");
    assert_eq!(out[1].ending, Ending::Flush);
}

#[test]
fn a_chain_cut_short_sends_the_trace_then_the_part_still_marked() {
    let mut j = chain("parser = ['cri', 'java']");
    let mut out = Vec::new();
    let now = Instant::now();
    for (i, l) in [
        "t1 stdout F head",
        "t2 stdout F java.lang.Error: x",
        "t3 stdout P \tat a(",
    ]
    .iter()
    .enumerate()
    {
        j.push(l.as_bytes(), i as u64, now, &mut out);
    }
    assert!(out.is_empty());
    let due = j.deadline().unwrap();
    j.flush_idle(due, &mut out);
    let got: Vec<(String, Ending)> = out
        .into_iter()
        .map(|r| (String::from_utf8(r.message).unwrap(), r.ending))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "t1 stdout F head\njava.lang.Error: x".to_string(),
                Ending::FlushTimeout
            ),
            ("t3 stdout P \tat a(".to_string(), Ending::FlushTimeout),
        ]
    );
    assert!(j.is_empty());
}

#[test]
fn parser_takes_a_string_or_a_chain() {
    let ok = |s: &str| {
        toml::from_str::<MultilineConfig>(s)
            .unwrap()
            .compile()
            .is_ok()
    };
    assert!(ok("parser = 'java'"));
    assert!(ok("parser = ['java']"));
    assert!(ok("parser = ['cri', 'java']"));
    assert!(ok("parser = ['docker', 'python']"));
    let err = |s: &str| {
        toml::from_str::<MultilineConfig>(s)
            .map_err(|e| e.to_string())
            .and_then(|c| c.compile().map(|_| ()))
            .unwrap_err()
    };
    assert!(err("parser = ['java', 'cri']").contains("then a stack trace"));
    assert!(err("parser = ['java', 'python']").contains("then a stack trace"));
    assert!(err("parser = ['cri', 'docker']").contains("then a stack trace"));
    assert!(err("parser = []").contains("at least one"));
    assert!(err("parser = ['cri', 'cobol']").contains("cobol"));
    // the tail source's short form takes a list too
    #[derive(serde::Deserialize)]
    struct Tail {
        #[serde(deserialize_with = "preset_or_table")]
        multiline: Option<MultilineConfig>,
    }
    let t: Tail = toml::from_str("multiline = ['cri', 'java']").unwrap();
    let m = t.multiline.unwrap();
    assert_eq!(m.parser, Some(Presets(vec![Preset::Cri, Preset::Java])));
    assert!(m.compile().is_ok());
}
