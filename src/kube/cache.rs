//! The pods and namespaces the watch has brought, looked up in O(1) by the
//! records' threads while the watch updates them.
//!
//! Every object carries the `resourceVersion` it was last seen at: an
//! event or list item no newer than what is held is not applied again, so
//! a watch resumed after a gap, or a fresh list after `410 Gone`, neither
//! repeats nor reorders changes. A deleted object stays known for
//! `delete_grace` (the lines its containers wrote last are read after
//! its deletion), then one timer evicts it: nothing scans the cache per
//! record.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use super::{Namespace, Pod};

/// What the cache needs to know of a kind of object.
pub trait Keyed {
    /// Its identity: a pod's uid, a namespace's name.
    fn key(&self) -> &str;
    /// `(namespace, name)` of a pod, found by name as well as by uid.
    fn alias(&self) -> Option<(&str, &str)> {
        None
    }
}

impl Keyed for Pod {
    fn key(&self) -> &str {
        &self.uid
    }
    fn alias(&self) -> Option<(&str, &str)> {
        Some((&self.namespace, &self.name))
    }
}

impl Keyed for Namespace {
    fn key(&self) -> &str {
        &self.name
    }
}

/// Whether `new` is a later resourceVersion than `old`. Versions are
/// etcd revisions (integers) on every API server; one that is not a
/// number is taken as newer unless equal.
pub fn newer(new: &str, old: &str) -> bool {
    match (new.parse::<u64>(), old.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => new != old,
    }
}

/// One object and when it was deleted, if it was.
struct Slot<T> {
    /// Shared with the readers that looked it up.
    value: Arc<T>,
    /// Its `resourceVersion`: older events and list items are ignored.
    version: String,
    /// When it was deleted; it is evicted `delete_grace` later.
    deleted_at: Option<Instant>,
}

/// The objects of one kind.
pub struct Table<T> {
    /// By [`Keyed::key`].
    slots: HashMap<Box<str>, Slot<T>>,
    /// namespace → name → key, for pods.
    by_name: HashMap<Box<str>, HashMap<Box<str>, Box<str>>>,
    /// Deleted objects in order of deletion: with one grace for all, the
    /// front is always the next to evict.
    deletions: VecDeque<(Instant, Box<str>)>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            slots: HashMap::new(),
            by_name: HashMap::new(),
            deletions: VecDeque::new(),
        }
    }
}

impl<T: Keyed> Table<T> {
    fn get(&self, key: &str) -> Option<Arc<T>> {
        self.slots.get(key).map(|s| s.value.clone())
    }

    fn named(&self, namespace: &str, name: &str) -> Option<Arc<T>> {
        let key = self.by_name.get(namespace)?.get(name)?;
        self.get(key)
    }

    /// Objects not deleted.
    fn live(&self) -> usize {
        self.slots.len().saturating_sub(self.deletions.len())
    }

    fn index(&mut self, value: &T) {
        if let Some((namespace, name)) = value.alias() {
            let names = self.by_name.entry(namespace.into()).or_default();
            match names.get_mut(name) {
                Some(key) if &**key == value.key() => {}
                Some(key) => *key = value.key().into(),
                None => {
                    names.insert(name.into(), value.key().into());
                }
            }
        }
    }

    /// ADDED or MODIFIED (or an item of a list): true if it changed what
    /// is held.
    fn upsert(&mut self, value: T, version: String) -> bool {
        if let Some(slot) = self.slots.get(value.key()) {
            if !newer(&version, &slot.version) {
                return false;
            }
            if slot.deleted_at.is_some() {
                // a deletion is final; a later version of it is only news
                // of that deletion
                return false;
            }
        }
        self.index(&value);
        let key: Box<str> = value.key().into();
        self.slots.insert(
            key,
            Slot {
                value: Arc::new(value),
                version,
                deleted_at: None,
            },
        );
        true
    }

    /// DELETED: the object stays, marked, until evicted.
    fn delete(&mut self, value: T, version: String, now: Instant) -> bool {
        match self.slots.get_mut(value.key()) {
            Some(slot) if slot.deleted_at.is_some() => false,
            Some(slot) => {
                if newer(&version, &slot.version) {
                    slot.value = Arc::new(value);
                    slot.version = version;
                }
                slot.deleted_at = Some(now);
                self.deletions.push_back((now, slot.value.key().into()));
                true
            }
            None => {
                // deleted before it was seen (created and deleted within a
                // watch gap): its last lines still get its metadata
                self.index(&value);
                let key: Box<str> = value.key().into();
                self.deletions.push_back((now, key.clone()));
                self.slots.insert(
                    key,
                    Slot {
                        value: Arc::new(value),
                        version,
                        deleted_at: Some(now),
                    },
                );
                true
            }
        }
    }

    /// A fresh list (after `410 Gone`): its items are upserted, and held
    /// objects it lacks (and that are not newer than it) are deleted, as
    /// their DELETED events would have. What is held stays readable all
    /// along. Returns how many objects changed.
    fn replace(&mut self, items: Vec<(T, String)>, list_version: &str, now: Instant) -> usize {
        let mut listed: HashSet<Box<str>> = HashSet::with_capacity(items.len());
        let mut changed = 0;
        for (value, version) in items {
            listed.insert(value.key().into());
            changed += usize::from(self.upsert(value, version));
        }
        let gone: Vec<Box<str>> = self
            .slots
            .iter()
            .filter(|(key, slot)| {
                slot.deleted_at.is_none()
                    && !listed.contains(*key)
                    && !newer(&slot.version, list_version)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            if let Some(slot) = self.slots.get_mut(&key) {
                slot.deleted_at = Some(now);
                self.deletions.push_back((now, key));
                changed += 1;
            }
        }
        changed
    }

    /// Evicts what was deleted `grace` ago or more; returns how many, and
    /// when the next one is due.
    fn evict(&mut self, now: Instant, grace: Duration) -> (usize, Option<Instant>) {
        let mut evicted = 0;
        while let Some((at, _)) = self.deletions.front() {
            if *at + grace > now {
                return (evicted, Some(*at + grace));
            }
            let Some((at, key)) = self.deletions.pop_front() else {
                break;
            };
            if !matches!(self.slots.get(&key), Some(s) if s.deleted_at == Some(at)) {
                continue;
            }
            if let Some(slot) = self.slots.remove(&key) {
                evicted += 1;
                if let Some((namespace, name)) = slot.value.alias() {
                    if let Some(names) = self.by_name.get_mut(namespace) {
                        if names.get(name).is_some_and(|k| *k == key) {
                            names.remove(name);
                        }
                        if names.is_empty() {
                            self.by_name.remove(namespace);
                        }
                    }
                }
            }
        }
        (evicted, None)
    }
}

/// The pods and namespaces of one source or filter.
pub struct Store {
    /// By uid, and by namespace and name.
    pods: RwLock<Table<Pod>>,
    /// By name.
    namespaces: RwLock<Table<Namespace>>,
    /// How long a deleted object stays.
    delete_grace: Duration,
    /// Bumped by every change (see [`Store::generation`]).
    generation: AtomicU64,
    /// The first list of pods is in.
    pods_synced: AtomicBool,
    /// True from the start when namespaces are not watched.
    namespaces_synced: AtomicBool,
    /// Wakes the evictor when a deletion arrives.
    deleted: tokio::sync::Notify,
}

impl Store {
    pub fn new(delete_grace: Duration, watch_namespaces: bool) -> Store {
        Store {
            pods: RwLock::default(),
            namespaces: RwLock::default(),
            delete_grace,
            generation: AtomicU64::new(0),
            pods_synced: AtomicBool::new(false),
            namespaces_synced: AtomicBool::new(!watch_namespaces),
            deleted: tokio::sync::Notify::new(),
        }
    }

    fn read<U>(table: &RwLock<Table<U>>) -> std::sync::RwLockReadGuard<'_, Table<U>> {
        table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write<U>(table: &RwLock<Table<U>>) -> std::sync::RwLockWriteGuard<'_, Table<U>> {
        table.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn pod(&self, uid: &str) -> Option<Arc<Pod>> {
        Self::read(&self.pods).get(uid)
    }

    pub fn pod_named(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        Self::read(&self.pods).named(namespace, name)
    }

    pub fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        Self::read(&self.namespaces).get(name)
    }

    /// Pods held (deleted ones in their grace included).
    pub fn pods_held(&self) -> usize {
        Self::read(&self.pods).slots.len()
    }

    /// Namespaces held (deleted ones in their grace included).
    pub fn namespaces_held(&self) -> usize {
        Self::read(&self.namespaces).slots.len()
    }

    /// Pods not deleted, and namespaces not deleted.
    pub fn live(&self) -> (usize, usize) {
        (
            Self::read(&self.pods).live(),
            Self::read(&self.namespaces).live(),
        )
    }

    pub fn synced(&self) -> bool {
        self.pods_synced.load(Ordering::Acquire) && self.namespaces_synced.load(Ordering::Acquire)
    }

    pub fn namespaces_synced(&self) -> bool {
        self.namespaces_synced.load(Ordering::Acquire)
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// After a change: bumps the generation.
    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub fn upsert_pod(&self, pod: Pod, version: String) {
        if Self::write(&self.pods).upsert(pod, version) {
            self.bump();
        }
    }

    pub fn delete_pod(&self, pod: Pod, version: String) {
        if Self::write(&self.pods).delete(pod, version, Instant::now()) {
            self.bump();
            self.deleted.notify_one();
        }
    }

    /// A complete list of pods: see [`Table::replace`].
    pub fn replace_pods(&self, pods: Vec<(Pod, String)>, list_version: &str) {
        let changed = Self::write(&self.pods).replace(pods, list_version, Instant::now());
        self.pods_synced.store(true, Ordering::Release);
        self.after_replace(changed);
    }

    pub fn upsert_namespace(&self, namespace: Namespace, version: String) {
        if Self::write(&self.namespaces).upsert(namespace, version) {
            self.bump();
        }
    }

    pub fn delete_namespace(&self, namespace: Namespace, version: String) {
        if Self::write(&self.namespaces).delete(namespace, version, Instant::now()) {
            self.bump();
            self.deleted.notify_one();
        }
    }

    /// A complete list of namespaces.
    pub fn replace_namespaces(&self, namespaces: Vec<(Namespace, String)>, list_version: &str) {
        let changed =
            Self::write(&self.namespaces).replace(namespaces, list_version, Instant::now());
        self.namespaces_synced.store(true, Ordering::Release);
        self.after_replace(changed);
    }

    fn after_replace(&self, changed: usize) {
        // a first list that brought nothing still ends a wait for sync
        self.bump();
        if changed > 0 {
            self.deleted.notify_one();
        }
    }

    /// Evicts what is past its grace; returns when the next eviction is
    /// due, if any.
    pub fn evict(&self, now: Instant) -> Option<Instant> {
        let (pods, next_pod) = Self::write(&self.pods).evict(now, self.delete_grace);
        let (namespaces, next_namespace) =
            Self::write(&self.namespaces).evict(now, self.delete_grace);
        if pods + namespaces > 0 {
            self.bump();
        }
        match (next_pod, next_namespace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Evicts deleted objects as their grace ends, until `shutdown`.
    pub async fn run_evictions(&self, mut shutdown: crate::component::Shutdown) {
        loop {
            let next = self.evict(Instant::now());
            let wait = crate::timer::sleep_until_opt(next);
            tokio::select! {
                _ = wait => {}
                _ = self.deleted.notified() => {}
                _ = shutdown.wait() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, uid: &str, label: &str) -> Pod {
        Pod {
            namespace: "demo".into(),
            name: name.into(),
            uid: uid.into(),
            labels: [("v".to_string(), label.to_string())].into(),
            ..Pod::default()
        }
    }

    fn label(store: &Store, uid: &str) -> Option<String> {
        store.pod(uid).map(|p| p.labels["v"].clone())
    }

    #[test]
    fn events_no_newer_than_what_is_held_are_not_applied_again() {
        let store = Store::new(Duration::from_secs(60), false);
        store.upsert_pod(pod("a", "u1", "one"), "10".into());
        let g = store.generation();
        // a replayed older or equal event changes nothing
        store.upsert_pod(pod("a", "u1", "stale"), "9".into());
        store.upsert_pod(pod("a", "u1", "again"), "10".into());
        assert_eq!(label(&store, "u1").as_deref(), Some("one"));
        assert_eq!(store.generation(), g);
        store.upsert_pod(pod("a", "u1", "two"), "11".into());
        assert_eq!(label(&store, "u1").as_deref(), Some("two"));
        assert!(store.generation() > g);
        assert_eq!(store.pod_named("demo", "a").unwrap().uid, "u1");
        assert!(!store.synced());
    }

    #[test]
    fn a_fresh_list_replaces_in_place_and_marks_the_missing_deleted() {
        let store = Store::new(Duration::from_secs(60), false);
        store.upsert_pod(pod("a", "u1", "one"), "10".into());
        store.upsert_pod(pod("b", "u2", "one"), "11".into());
        store.upsert_pod(pod("c", "u3", "one"), "12".into());
        // the list after a 410: a changed, b unchanged, c gone, d new
        store.replace_pods(
            vec![
                (pod("a", "u1", "two"), "20".into()),
                (pod("b", "u2", "one"), "11".into()),
                (pod("d", "u4", "one"), "21".into()),
            ],
            "25",
        );
        assert!(store.synced());
        assert_eq!(label(&store, "u1").as_deref(), Some("two"));
        assert_eq!(label(&store, "u4").as_deref(), Some("one"));
        // c is still known (grace), as a deleted pod
        assert_eq!(label(&store, "u3").as_deref(), Some("one"));
        assert_eq!(store.live(), (3, 0));
        assert_eq!(store.pods_held(), 4);
        // its late DELETED event is not a second deletion
        let before = store.generation();
        store.delete_pod(pod("c", "u3", "one"), "13".into());
        assert_eq!(store.generation(), before);
        // and a stale MODIFIED does not bring it back
        store.upsert_pod(pod("c", "u3", "zombie"), "14".into());
        assert_eq!(store.live(), (3, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn deleted_pods_stay_for_the_grace_then_are_evicted_by_the_timer() {
        let store = Arc::new(Store::new(Duration::from_secs(60), false));
        let (trigger, shutdown) = crate::component::shutdown_channel();
        let evictor = tokio::spawn({
            let store = store.clone();
            async move { store.run_evictions(shutdown).await }
        });
        store.upsert_pod(pod("a", "u1", "one"), "1".into());
        store.delete_pod(pod("a", "u1", "one"), "2".into());
        // a pod created and deleted before any event of it was seen
        store.delete_pod(pod("short", "u9", "job"), "3".into());
        // the same name again, a new pod
        store.upsert_pod(pod("a", "u2", "new"), "4".into());
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(store.pod("u1").is_some());
        assert_eq!(label(&store, "u9").as_deref(), Some("job"));
        assert_eq!(store.pod_named("demo", "a").unwrap().uid, "u2");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(store.pod("u1").is_none());
        assert!(store.pod("u9").is_none());
        assert!(store.pod_named("demo", "short").is_none());
        // the newer pod of the same name keeps its name
        assert_eq!(store.pod_named("demo", "a").unwrap().uid, "u2");
        assert_eq!(store.pods_held(), 1);
        trigger.trigger();
        evictor.await.unwrap();
    }

    #[test]
    fn versions_compare_as_numbers() {
        assert!(newer("10", "9"));
        assert!(!newer("9", "10"));
        assert!(!newer("10", "10"));
        assert!(newer("b", "a") && !newer("a", "a"));
    }
}
