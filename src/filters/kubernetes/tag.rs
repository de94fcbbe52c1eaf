//! What a Fluent Bit `tail` tag tells of a container's log:
//! `<kube_tag_prefix><pod>_<namespace>_<container>-<container id>.log`,
//! the file name the kubelet links under `/var/log/containers` (slashes
//! of the path become dots in the tag: `kube.var.log.containers.…`).
//!
//! The rules are Fluent Bit's (`KUBE_TAG_TO_REGEX`): the pod name is a
//! DNS subdomain (lower-case letters, digits, `-` and `.`, starting and
//! ending with a letter or digit), the namespace has no `_`, the container
//! name is the rest up to the last `-` before 64 lower-case letters or
//! digits (the container id) and `.log`. The tag comes from outside (any
//! forward client names it), so it is read without a regex and without
//! allocating, and any text gives an answer or `None`, never a panic.

/// The parts of a container log's tag, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagPlace<'a> {
    pub pod: &'a str,
    pub namespace: &'a str,
    pub container: &'a str,
    /// The container runtime's id (Fluent Bit's `docker_id`).
    pub container_id: &'a str,
}

/// Length of a container id in a log's file name.
const ID_LEN: usize = 64;

impl<'a> TagPlace<'a> {
    /// Reads `tag` after `prefix`; `None` when it is not a container
    /// log's tag.
    ///
    /// ```
    /// use logferry::filters::kubernetes::TagPlace;
    ///
    /// let id = "0123456789abcdef".repeat(4);
    /// let tag = format!("kube.var.log.containers.web-7f9c_shop_nginx-{id}.log");
    /// let p = TagPlace::parse(&tag, "kube.var.log.containers.").unwrap();
    /// assert_eq!((p.pod, p.namespace, p.container), ("web-7f9c", "shop", "nginx"));
    /// assert_eq!(p.container_id, id);
    /// assert!(TagPlace::parse("kube.var.log.containers.web.log", "kube.var.log.containers.").is_none());
    /// ```
    pub fn parse(tag: &'a str, prefix: &str) -> Option<TagPlace<'a>> {
        let name = tag.strip_prefix(prefix)?.strip_suffix(".log")?;
        // `<pod>_<namespace>_<container>-<id>`: the id has a fixed length
        let split = name.len().checked_sub(ID_LEN + 1)?;
        if !name.is_char_boundary(split) {
            return None;
        }
        let (head, id) = name.split_at(split);
        let container_id = id.strip_prefix('-')?;
        if !container_id
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return None;
        }
        // a pod name has no `_`, nor has a namespace: the first two `_`
        // end them, and the container name (which may) is the rest
        let (pod, rest) = head.split_once('_')?;
        let (namespace, container) = rest.split_once('_')?;
        if !is_subdomain(pod) || namespace.is_empty() || container.is_empty() {
            return None;
        }
        Some(TagPlace {
            pod,
            namespace,
            container,
            container_id,
        })
    }
}

/// Whether `name` is a DNS subdomain as a pod's name is: labels of
/// lower-case letters, digits and `-`, each starting and ending with a
/// letter or digit, joined by dots.
fn is_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|label| {
            let b = label.as_bytes();
            let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            match (b.first(), b.last()) {
                (Some(first), Some(last)) => {
                    alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
                }
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = "kube.var.log.containers.";

    fn id() -> String {
        "a1b2c3d4e5f60718".repeat(4)
    }

    #[test]
    fn fluent_bits_tags_are_read() {
        let id = id();
        let tag = format!("{PREFIX}apache-logs-annotated_default_apache-{id}.log");
        let p = TagPlace::parse(&tag, PREFIX).unwrap();
        assert_eq!(p.pod, "apache-logs-annotated");
        assert_eq!(p.namespace, "default");
        assert_eq!(p.container, "apache");
        assert_eq!(p.container_id, id);
    }

    #[test]
    fn dotted_pod_names_and_container_names_with_dashes_and_underscores() {
        let id = id();
        let tag = format!("{PREFIX}web.v2-0_kube-system_side-car_x-{id}.log");
        let p = TagPlace::parse(&tag, PREFIX).unwrap();
        assert_eq!(p.pod, "web.v2-0");
        assert_eq!(p.namespace, "kube-system");
        assert_eq!(p.container, "side-car_x");
    }

    #[test]
    fn another_prefix() {
        let id = id();
        let tag = format!("k8s.web-1_ns_app-{id}.log");
        assert_eq!(TagPlace::parse(&tag, "k8s.").unwrap().pod, "web-1");
        assert!(TagPlace::parse(&tag, PREFIX).is_none());
        // an empty prefix reads the whole tag
        let bare = format!("web-1_ns_app-{id}.log");
        assert_eq!(TagPlace::parse(&bare, "").unwrap().container, "app");
    }

    #[test]
    fn what_is_not_a_container_logs_tag() {
        let id = id();
        for bad in [
            format!("{PREFIX}web_ns_app-{id}"),             // no .log
            format!("{PREFIX}web_ns_app-{}.log", &id[1..]), // short id
            format!("{PREFIX}web_ns_app-{}.log", id.to_uppercase()),
            format!("{PREFIX}web_ns_app_{id}.log"), // no dash before the id
            format!("{PREFIX}web_ns-{id}.log"),     // no container
            format!("{PREFIX}web__app-{id}.log"),   // empty namespace
            format!("{PREFIX}Web_ns_app-{id}.log"), // not a DNS name
            format!("{PREFIX}-web_ns_app-{id}.log"),
            format!("{PREFIX}web._ns_app-{id}.log"),
            format!("{PREFIX}_ns_app-{id}.log"),
            format!("{PREFIX}web_ns_-{id}.log"), // empty container
            format!("{PREFIX}é_ns_app-{id}.log"),
            format!("app.web_ns_app-{id}.log"), // another prefix
            String::new(),
        ] {
            assert!(TagPlace::parse(&bad, PREFIX).is_none(), "{bad}");
        }
        // multi-byte text where the id would start
        let tag = format!("{PREFIX}w_n_c-é{}.log", &id[..ID_LEN - 1]);
        assert!(TagPlace::parse(&tag, PREFIX).is_none());
    }
}
