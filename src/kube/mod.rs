//! Pod and namespace metadata from the Kubernetes API server, kept by a
//! list + watch, never fetched per record.
//!
//! - `connection.rs`: where the API server is and how to authenticate
//!   (a kubeconfig, `api_server`, or the pod's service account), TLS,
//!   the token re-read as it rotates;
//! - `kubeconfig.rs`: the kubeconfig file (its current context);
//! - `objects.rs`: the API's JSON read into the few fields kept;
//! - `cache.rs`: the objects by uid and by name, deletions kept for
//!   `delete_grace`, replaced in place by a fresh list;
//! - `api.rs`: requests (a list's pages), and what an error answer means;
//! - `stream.rs`: a watch's body, line by line, applied to the cache;
//! - `watch.rs`: list, then watch from the list's `resourceVersion`,
//!   `410 Gone` answered by a fresh list, backoff on errors;
//! - `fields.rs`: Fluent Bit's `kubernetes` map of a record.
//!
//! [`Metadata::start`] returns at once: lookups answer from what the
//! watch has brought so far; a caller that meets a pod not yet known
//! looks again when [`Metadata::generation`] has moved.

pub mod api;
pub mod cache;
pub mod connection;
pub mod fields;
pub mod kubeconfig;
pub mod objects;
pub mod stream;
pub mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use self::cache::Store;

/// How to reach the API server: the source's and the filter's keys of the
/// same names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiSettings {
    /// A kubeconfig file, read for its current context: server,
    /// certificate-authority(-data), insecure-skip-tls-verify, tls-server-name,
    /// token, tokenFile, client-certificate(-data) and client-key(-data).
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL, over the kubeconfig's (Fluent Bit's `Kube_URL`).
    pub api_server: Option<String>,
    /// A file holding the bearer token, over the kubeconfig's; re-read as
    /// it rotates.
    pub token_file: Option<PathBuf>,
    /// PEM CA certificates the API server's certificate must chain to,
    /// over the kubeconfig's.
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (tests only).
    pub insecure_skip_verify: bool,
}

/// What to list and watch.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchOptions {
    /// `Some`: only the pods of this node (`fieldSelector=spec.nodeName=…`),
    /// what an agent needs; `None`: every pod (the filter).
    pub node_name: Option<String>,
    /// Also list and watch namespaces (their labels, and exclusion by
    /// namespace).
    pub namespaces: bool,
    /// How long a deleted pod (or namespace) stays known, for the lines
    /// still to be read after its deletion.
    pub delete_grace: Duration,
}

/// A pod as the cache keeps it: only what records are given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pod {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`: what the kubelet's log directory names.
    pub uid: String,
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// `status.podIP`.
    pub pod_ip: Option<String>,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `spec.containers`, `initContainers` and `ephemeralContainers`, each
    /// with its status (by name).
    pub containers: Vec<Container>,
    /// Orders the versions of this pod seen by list and watch.
    pub resource_version: String,
}

/// One container of a [`Pod`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Container {
    /// Its name in the spec, and the log directory's.
    pub name: String,
    /// The status's image when the container has run, else the spec's.
    pub image: String,
    /// `imageID` of its status (`docker-pullable://…@sha256:…`).
    pub image_id: Option<String>,
    /// `containerID` of its status, as written there (`containerd://abc…`).
    pub container_id: Option<String>,
}

/// A namespace as the cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Namespace {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

impl Pod {
    /// The container named `name`.
    pub fn container(&self, name: &str) -> Option<&Container> {
        self.containers.iter().find(|c| c.name == name)
    }
}

/// The metadata cache shared by every record of a source or filter;
/// cloning it is cheap.
#[derive(Clone)]
pub struct Metadata {
    store: Arc<Store>,
}

impl std::fmt::Debug for Metadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metadata")
    }
}

impl Metadata {
    /// Resolves the connection (its errors are configuration errors that
    /// name the file or key at fault), spawns the list + watch tasks on
    /// `runtime`, and returns at once: it never waits for the API.
    pub fn start(
        settings: &ApiSettings,
        options: WatchOptions,
        metrics: &crate::metrics::Registry,
        component: &str,
        shutdown: crate::component::Shutdown,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Metadata, String> {
        let connection = connection::Connection::resolve(settings)?;
        if connection.insecure {
            crate::telemetry::startup_warning(
                metrics,
                "insecure_skip_verify",
                component,
                "kubernetes: the API server's certificate is not verified (insecure_skip_verify)",
            );
        }
        let api = Arc::new(api::Api::new(connection)?);
        let store = Arc::new(Store::new(options.delete_grace, options.namespaces));
        watch::spawn(
            api,
            store.clone(),
            &options,
            metrics,
            component,
            shutdown,
            runtime,
        );
        Ok(Metadata { store })
    }

    /// A cache that no watch fills, for tests of its users.
    pub fn from_store(store: Arc<Store>) -> Metadata {
        Metadata { store }
    }

    /// The pod with this uid (also one deleted less than `delete_grace`
    /// ago).
    pub fn pod(&self, uid: &str) -> Option<Arc<Pod>> {
        self.store.pod(uid)
    }

    /// The pod named `name` in `namespace` (the newest of that name).
    pub fn pod_named(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.store.pod_named(namespace, name)
    }

    /// The namespace `name`.
    pub fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.store.namespace(name)
    }

    /// The first list of pods (and of namespaces, when watched) is in.
    pub fn synced(&self) -> bool {
        self.store.synced()
    }

    /// The first list of namespaces is in (true when they are not watched).
    pub fn namespaces_synced(&self) -> bool {
        self.store.namespaces_synced()
    }

    /// Bumps on every change to any pod or namespace: callers keep data
    /// derived from the cache keyed by it.
    pub fn generation(&self) -> u64 {
        self.store.generation()
    }
}
