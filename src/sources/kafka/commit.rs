//! Offset commits: synchronous at a revoke and at shutdown, asynchronous
//! every `commit_interval`, each counted, and each failure logged, counted
//! and (asynchronous ones) committed again at the next interval.

use std::fmt::Write as _;

use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::{Offset, TopicPartitionList};

use super::offsets::{Offsets, PartitionId};
use super::{GroupContext, Telemetry};

/// Commits `offsets`, counting commits and errors.
///
/// An asynchronous commit asks for its result on the consumer's own queue,
/// where polling the consumer passes it to
/// [`settled`] (through `GroupContext::commit_callback`): left to librdkafka, a failure would
/// only be logged (`COMMITFAIL`), since the `rdkafka` crate sets no commit
/// callback of its own.
pub(super) fn commit<C: Consumer<GroupContext>>(
    consumer: &C,
    offsets: &[(PartitionId, i64)],
    mode: CommitMode,
    t: &Telemetry,
) {
    if offsets.is_empty() {
        return;
    }
    let mut list = TopicPartitionList::new();
    for ((topic, partition), offset) in offsets {
        if let Err(e) = list.add_partition_offset(topic, *partition, Offset::Offset(*offset)) {
            t.error("commit", &e);
            return;
        }
    }
    match mode {
        CommitMode::Sync => match consumer.commit(&list, mode) {
            Ok(()) => t.commits.add(offsets.len() as u64),
            Err(e) => t.error("commit", &e),
        },
        CommitMode::Async => {
            use rdkafka::bindings as rd;
            let rk = consumer.client().native_ptr();
            // SAFETY: a live client and list; the queue reference is ours
            // to destroy (the commit keeps a reference of its own to reply
            // on).
            let err = unsafe {
                let queue = rd::rd_kafka_queue_get_consumer(rk);
                if queue.is_null() {
                    rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR__UNKNOWN_GROUP
                } else {
                    let err = rd::rd_kafka_commit_queue(
                        rk,
                        list.ptr(),
                        queue,
                        None,
                        std::ptr::null_mut(),
                    );
                    rd::rd_kafka_queue_destroy(queue);
                    err
                }
            };
            if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                t.error("commit", &KafkaError::ConsumerCommit(err.into()));
            }
        }
    }
}

/// The result of an asynchronous commit of `offsets`: partitions committed
/// are counted; a failure is logged and counted, and its offsets are due
/// again at the next `commit_interval`.
pub(super) fn settled(
    t: &Telemetry,
    offsets: &Offsets,
    result: KafkaResult<()>,
    list: &TopicPartitionList,
) {
    let mut committed = 0;
    let mut failed = Vec::new();
    let mut refused = String::new();
    for e in list.elements() {
        let failure = match (&result, e.error()) {
            (Err(err), _) => err.to_string(),
            (Ok(()), Err(err)) => err.to_string(),
            (Ok(()), Ok(())) => {
                committed += 1;
                continue;
            }
        };
        if let Offset::Offset(o) = e.offset() {
            failed.push(((e.topic().to_string(), e.partition()), o));
        }
        let _ = write!(
            refused,
            " {} partition {}: {failure};",
            e.topic(),
            e.partition()
        );
    }
    t.commits.add(committed);
    match &result {
        Err(e) if refused.is_empty() => refused = format!(" {e}"),
        _ => {}
    }
    if !refused.is_empty() {
        offsets.commit_failed(&failed);
        t.error(
            "commit",
            &format!("offset commit failed:{refused} committed again later"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::AckOutcome::Accepted;
    use crate::kafka_client::ClientErrors;
    use crate::metrics::Registry;
    use rdkafka::consumer::BaseConsumer;
    use rdkafka::mocking::MockCluster;
    use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
    use rdkafka::ClientConfig;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_failed_async_commit_is_counted_and_tried_again() {
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic("c", 1, 1).unwrap();
        let r = Registry::new();
        let t = Arc::new(Telemetry::new(&r, &"k".into()));
        let offsets = Arc::new(Offsets::default());
        let context = GroupContext {
            offsets: offsets.clone(),
            pending: Arc::default(),
            telemetry: t.clone(),
            client: ClientErrors::new(&r, "k"),
            connected: None,
        };
        let consumer: BaseConsumer<GroupContext> = ClientConfig::new()
            .set("bootstrap.servers", cluster.bootstrap_servers())
            .set("group.id", "g")
            .set("enable.auto.commit", "false")
            .create_with_context(context)
            .unwrap();
        let id: PartitionId = ("c".into(), 0);
        offsets.assign(std::slice::from_ref(&id));
        let a = offsets.track(id.clone(), 0, 5).unwrap();
        offsets.settle(&a, Accepted);
        let count = |name, kind: Option<&str>| {
            let mut l = vec![("component", "k")];
            l.extend(kind.map(|k| ("kind", k)));
            r.value(name, &l)
        };
        let errors = || count("logferry_kafka_source_errors_total", Some("commit"));
        let commits = || count("logferry_kafka_source_commits_total", None);
        let poll_until = |done: &dyn Fn() -> bool| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !done() && std::time::Instant::now() < deadline {
                let _ = consumer.poll(Duration::from_millis(100));
            }
        };
        // the broker refuses the first commit (librdkafka logs COMMITFAIL)
        cluster.request_errors(
            RDKafkaApiKey::OffsetCommit,
            &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED],
        );
        let due = offsets.take_committable();
        assert_eq!(due, vec![(id.clone(), 5)]);
        commit(&consumer, &due, CommitMode::Async, &t);
        poll_until(&|| errors() > 0);
        assert_eq!((errors(), commits()), (1, 0), "errors, commits");
        // tried again at the next tick, and this time it goes through
        let due = offsets.take_committable();
        assert_eq!(due, vec![(id.clone(), 5)], "a failed commit is due again");
        commit(&consumer, &due, CommitMode::Async, &t);
        poll_until(&|| commits() > 0);
        assert_eq!((errors(), commits()), (1, 1), "errors, commits");
        let mut list = TopicPartitionList::new();
        list.add_partition("c", 0);
        let committed = consumer
            .committed_offsets(list, Duration::from_secs(10))
            .unwrap()
            .find_partition("c", 0)
            .map(|e| e.offset());
        assert_eq!(committed, Some(Offset::Offset(5)));
    }
}
