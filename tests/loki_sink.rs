//! The loki sink against a real VictoriaLogs server (scripts/victorialogs.sh),
//! which takes Loki's push API and is read back with LogsQL.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::otelcol::post;
use common::victorialogs::{unique_name, VictoriaLogs};

/// The test server itself: a Loki JSON push is read back by its label.
#[test]
fn victorialogs_reads_back_a_loki_push() {
    let v = VictoriaLogs::shared();
    assert!(v.is_up());
    let job = unique_name("probe");
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let body = format!(
        r#"{{"streams":[{{"stream":{{"job":"{job}"}},"values":[["{ns}","line 1"],["{}","line 2",{{"trace_id":"abc"}}]]}}]}}"#,
        ns + 1
    );
    let (status, text) = post(
        v.url(),
        "/insert/loki/api/v1/push",
        "application/json",
        body.as_bytes(),
    )
    .unwrap();
    assert_eq!(status, 204, "{text}");
    let rows = v.wait_rows(&format!("job:{job}"), 2, Duration::from_secs(30));
    assert_eq!(rows.len(), 2);
    let traced: Vec<_> = rows.iter().filter(|r| r["trace_id"] == "abc").collect();
    assert_eq!(traced.len(), 1);
    assert_eq!(traced[0]["_msg"], "line 2");
}
