//! The syslog and csv formats, and `types`.

use super::*;
use chrono::TimeZone;

fn owned_lines(text: Vec<u8>) -> Batch {
    let count = text.split_inclusive(|c| *c == b'\n').count();
    let records = Records::Lines {
        data: Bytes::from(text),
        time: EventTime::new(3, 4),
    };
    Batch::new("t".into(), records, count)
}

#[test]
fn syslog_messages_of_either_rfc_take_fluent_bits_field_names_and_their_time() {
    let f = filter("format = 'syslog'");
    let out = f.filter(lines(concat!(
        "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 8710 ID47 [exampleSDID@32473 iut=\"3\" eventSource=\"App\"][p@1 class=\"high\"] An application event\n",
        "<34>1 2003-10-11T22:14:15.003+02:00 host su - - - 'su root' failed\n",
        "<38>Feb  5 11:59:01 gateway sshd[4242]: Accepted publickey for root\n",
        "<13>1 - - - - - -\n",
    )));
    let got = timed(&out);
    assert_eq!(got[0].0, EventTime::new(1_065_910_455, 3_000_000));
    assert_eq!(
        got[0].1,
        serde_json::json!({
            "pri": "165",
            "time": "2003-10-11T22:14:15.003Z",
            "host": "mymachine.example.com",
            "ident": "evntslog",
            "pid": "8710",
            "msgid": "ID47",
            "extradata": "[exampleSDID@32473 iut=\"3\" eventSource=\"App\"][p@1 class=\"high\"]",
            "message": "An application event",
        })
    );
    // a zone: two hours earlier in UTC; `-` parts are no field
    assert_eq!(got[1].0, EventTime::new(1_065_910_455 - 7200, 3_000_000));
    assert_eq!(
        got[1].1,
        serde_json::json!({"pri": "34", "time": "2003-10-11T22:14:15.003+02:00",
            "host": "host", "ident": "su", "message": "'su root' failed"})
    );
    // RFC 3164: no zone and no year (local time, this year or last)
    assert_eq!(
        got[2].1,
        serde_json::json!({"pri": "38", "time": "Feb  5 11:59:01", "host": "gateway",
            "ident": "sshd", "pid": "4242", "message": "Accepted publickey for root"})
    );
    let local = chrono::Local
        .timestamp_opt(i64::from(got[2].0.secs), 0)
        .unwrap();
    assert_eq!(
        local.format("%b %e %H:%M:%S").to_string(),
        "Feb  5 11:59:01"
    );
    // no timestamp: the record keeps its time
    assert_eq!(got[3].0, EventTime::new(3, 4));
    assert_eq!(got[3].1, serde_json::json!({"pri": "13", "message": ""}));
    assert_eq!(f.failed.get(), 0);
}

#[test]
fn an_explicit_rfc_takes_only_its_messages_and_other_lines_are_counted() {
    let text = "<13>1 2026-11-22T12:00:00Z h app - - - five\n<13>Nov 22 12:00:00 h app: three\nnot syslog\n<13>1 2026-11-22T12:00:00Z broken\n";
    for (format, parsed) in [
        ("syslog_rfc5424", [true, false, false, false]),
        ("syslog-rfc3164", [false, true, false, false]),
        ("syslog", [true, true, false, false]),
    ] {
        let f = filter(&format!("format = '{format}'"));
        let out = f.filter(lines(text));
        let mut got = Vec::new();
        out.for_each_record(|_, r| {
            let RecordRef::Map(m) = r else { panic!() };
            got.push(map_fields(m).unwrap()[0].0.as_ref() == b"pri");
        })
        .unwrap();
        assert_eq!(got, parsed, "{format}");
        let failed = parsed.iter().filter(|p| !**p).count() as u64;
        assert_eq!(f.failed.get(), failed, "{format}");
    }
}

#[test]
fn syslog_keeps_bytes_that_are_not_utf8_and_huge_messages() {
    let f = filter("format = 'syslog'");
    let mut text = b"<14>Nov 22 12:00:00 h app[1]: caf\xe9 \xff\n<14>1 - h app - - - ".to_vec();
    let huge = vec![b'x'; 2 << 20];
    text.extend_from_slice(&huge);
    text.push(b'\n');
    let out = f.filter(owned_lines(text));
    let mut messages = Vec::new();
    out.for_each_record(|_, r| {
        let RecordRef::Map(m) = r else { panic!() };
        let fields = map_fields(m).unwrap();
        let (_, v) = fields
            .iter()
            .find(|(k, _)| k.as_ref() == b"message")
            .unwrap();
        let Value::Str(s) = Reader::new(v).read().unwrap() else {
            panic!()
        };
        messages.push(s.to_vec());
    })
    .unwrap();
    assert_eq!(messages[0], b"caf\xe9 \xff");
    assert_eq!(messages[1], huge);
}

#[test]
fn csv_lines_become_their_columns_and_a_wrong_count_does_not_parse() {
    let f = filter("format = 'csv'\ncolumns = ['id', 'text', 'n']\nreserve_data = true");
    let out = f.filter(lines(
        "1,\"hello, \"\"world\"\"\",7\n2,too few\n3,a,b,too many\n4,\"open,5\n",
    ));
    assert_eq!(
        show(&out),
        [
            serde_json::json!({"id": "1", "text": "hello, \"world\"", "n": "7"}),
            serde_json::json!({"message": "2,too few"}),
            serde_json::json!({"message": "3,a,b,too many"}),
            serde_json::json!({"message": "4,\"open,5"}),
        ]
    );
    assert_eq!(f.failed.get(), 3);
}

#[test]
fn csv_columns_are_checked() {
    let bad = |t: &str| {
        let c: ParserConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("format = 'csv'").contains("columns"));
    assert!(bad("format = 'csv'\ncolumns = []").contains("empty"));
    assert!(bad("format = 'csv'\ncolumns = ['a', 'a']").contains("twice"));
    assert!(bad("format = 'json'\ncolumns = ['a']").contains("csv"));
}

#[test]
fn types_convert_the_values_that_convert_and_count_the_others() {
    let f = filter(
        "format = 'logfmt'\ntypes = { code = 'int', took = 'float', ok = 'bool', gone = 'int' }",
    );
    let out = f.filter(lines(
        "code=200 took=0.25 ok=true\ncode=-3 took=1e3 ok=no\ncode=2xx took=fast ok=maybe\n",
    ));
    assert_eq!(
        show(&out),
        [
            serde_json::json!({"code": 200, "took": 0.25, "ok": true}),
            serde_json::json!({"code": -3, "took": 1000.0, "ok": false}),
            serde_json::json!({"code": "2xx", "took": "fast", "ok": "maybe"}),
        ]
    );
    // the third record is parsed, its three values stay text and count;
    // a field `types` names that a record lacks is no failure
    assert_eq!(f.failed.get(), 0);
    assert_eq!(f.type_failed.get(), 3);
    assert!(toml::from_str::<ParserConfig>("format = 'json'\ntypes = { a = 'date' }").is_err());
}

#[test]
fn types_leave_values_that_are_not_text() {
    let f = filter("format = 'json'\ntypes = { a = 'bool', b = 'int' }");
    let out = f.filter(lines("{\"a\": 1, \"b\": [\"7\"]}\n"));
    assert_eq!(show(&out), [serde_json::json!({"a": 1, "b": "Array(1)"})]);
    assert_eq!(f.type_failed.get(), 0);
}
