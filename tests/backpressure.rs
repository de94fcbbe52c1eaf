//! With `when_full = "block"`, a sink that stops taking records makes the
//! forward source stop reading its socket: the sender's writes block, and
//! nothing grows without bound in between. Once the sink resumes, every
//! record arrives.

mod common;

use std::time::Duration;

use common::write_until_blocked;

use logferry::buffer::{queue, BufferConfig, WhenFull};
use logferry::component::{shutdown_channel, SourceContext};
use logferry::metrics::{Counter, Registry};
use logferry::protocol::forward::{write_message_entry, write_packed_forward};
use logferry::router::{Route, Router, TagPattern};
use logferry::sources::forward::{ForwardSource, ForwardSourceConfig};

const FRAME_RECORDS: usize = 1000;
const QUEUE_BYTES: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_stops_reading_the_socket() {
    let registry = Registry::new();
    let config = BufferConfig {
        max_bytes: QUEUE_BYTES,
        when_full: WhenFull::Block,
        ..BufferConfig::default()
    };
    let (tx, mut rx) = queue("stalled", config, &registry);
    let route = Route {
        sink: "stalled".into(),
        pattern: TagPattern::new("**").unwrap(),
        queue: tx.clone(),
    };
    let (trigger, shutdown) = shutdown_channel();
    let cx = SourceContext {
        name: "in".into(),
        router: Router::new(vec![route], Counter::detached()),
        shutdown,
        metrics: registry.clone(),
        memory: logferry::memory::MemoryBudget::unlimited(),
    };
    let source_config: ForwardSourceConfig = toml::from_str("address = \"127.0.0.1:0\"").unwrap();
    let source = ForwardSource::bind(source_config, cx).await.unwrap();
    let addr = source.local_addr().unwrap();
    let running = tokio::spawn(source.run());

    // ~120 KB frames; try to push 400 MB into a sink that takes nothing
    let mut entries = Vec::new();
    for i in 0..FRAME_RECORDS {
        write_message_entry(&mut entries, 1, 0, format!("{i:0100}").as_bytes());
    }
    let mut frame = Vec::new();
    write_packed_forward(&mut frame, "t", &entries, FRAME_RECORDS, None);
    let frames_wanted = 400_000_000 / frame.len();
    let sender = write_until_blocked(addr, frame, frames_wanted);
    let (sent_while_stalled, blocked) = tokio::task::spawn_blocking(move || sender.join().unwrap())
        .await
        .unwrap();
    assert!(
        blocked,
        "the sender was never blocked: backpressure did not reach it"
    );
    assert!(
        sent_while_stalled < frames_wanted / 10,
        "{sent_while_stalled} frames accepted with a stalled sink"
    );
    assert!(
        tx.queued_bytes() <= QUEUE_BYTES,
        "queue over its limit: {}",
        tx.queued_bytes()
    );

    // the sink resumes: everything the sender managed to write arrives
    let mut records = 0;
    while records < sent_while_stalled * FRAME_RECORDS {
        let d = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("records keep coming once the sink takes them")
            .unwrap();
        records += d.batch().count;
        d.accept();
    }
    assert_eq!(records, sent_while_stalled * FRAME_RECORDS);
    trigger.trigger();
    running.await.unwrap();
}
