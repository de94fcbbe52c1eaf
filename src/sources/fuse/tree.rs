//! The directory tree of the mount: names, sizes and times only. File
//! contents are never kept (they are shipped, and optionally mirrored).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

use fuser::{Errno, FileAttr, FileType, INodeNo};

pub const ROOT: u64 = 1;

/// Longest name a directory entry may have (as on most filesystems).
const NAME_MAX: usize = 255;

#[derive(Debug)]
pub struct Node {
    /// Parent directory (the root is its own parent).
    pub parent: u64,
    /// Name in the parent.
    pub name: OsString,
    /// `Some` for a directory: its entries.
    pub children: Option<Dir>,
    /// Bytes written (the largest end of a write), or what a truncate set.
    pub size: u64,
    pub perm: u16,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
    /// Kernel references (lookups not yet forgotten).
    pub lookups: u64,
    /// Open descriptors.
    pub open: u64,
    /// Removed from its directory; kept while the kernel or a descriptor
    /// still refers to it.
    pub unlinked: bool,
}

impl Node {
    pub fn is_dir(&self) -> bool {
        self.children.is_some()
    }
}

/// The entries of a directory.
#[derive(Debug, Default)]
pub struct Dir {
    /// Entries by name, for lookups.
    names: BTreeMap<OsString, u64>,
    /// The same entries by inode number: `readdir` resumes after the last
    /// inode it returned, so a listing neither copies the directory nor
    /// skips or repeats entries when others are created or removed
    /// meanwhile (inode numbers are never reused).
    inodes: BTreeSet<u64>,
}

impl Dir {
    fn insert(&mut self, name: OsString, ino: u64) {
        self.names.insert(name, ino);
        self.inodes.insert(ino);
    }

    fn remove(&mut self, name: &OsStr) -> Option<u64> {
        let ino = self.names.remove(name)?;
        self.inodes.remove(&ino);
        Some(ino)
    }

    fn get(&self, name: &OsStr) -> Option<u64> {
        self.names.get(name).copied()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// `readdir` offsets: `.` is 1, `..` is 2, an entry is its inode number
/// plus `ENTRY_OFFSET` (inode numbers start at 2, so they never meet).
const ENTRY_OFFSET: u64 = 2;

/// Inodes by number.
#[derive(Debug)]
pub struct Tree {
    nodes: HashMap<u64, Node>,
    next: u64,
    /// Most inodes at once (`max_inodes`); creating more fails with ENOSPC.
    max: usize,
    uid: u32,
    gid: u32,
}

impl Tree {
    /// An empty tree (the root directory) of at most `max` inodes.
    pub fn new(max: usize) -> Self {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let now = SystemTime::now();
        let mut nodes = HashMap::new();
        nodes.insert(
            ROOT,
            Node {
                parent: ROOT,
                name: OsString::new(),
                children: Some(Dir::default()),
                size: 0,
                perm: 0o755,
                mtime: now,
                ctime: now,
                lookups: 1,
                open: 0,
                unlinked: false,
            },
        );
        Tree {
            nodes,
            next: ROOT + 1,
            max,
            uid,
            gid,
        }
    }

    /// Inodes held now (removed ones still referenced included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    #[cfg(test)]
    pub fn get(&self, ino: u64) -> Option<&Node> {
        self.nodes.get(&ino)
    }

    pub fn get_mut(&mut self, ino: u64) -> Option<&mut Node> {
        self.nodes.get_mut(&ino)
    }

    fn dir(&self, ino: u64) -> Result<&Dir, Errno> {
        let n = self.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        n.children.as_ref().ok_or(Errno::ENOTDIR)
    }

    fn dir_mut(&mut self, ino: u64) -> Result<&mut Dir, Errno> {
        let n = self.nodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        n.children.as_mut().ok_or(Errno::ENOTDIR)
    }

    /// The entry `name` of directory `parent`, counting a kernel reference.
    pub fn lookup(&mut self, parent: u64, name: &OsStr) -> Result<u64, Errno> {
        let ino = self.dir(parent)?.get(name).ok_or(Errno::ENOENT)?;
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.lookups += 1;
        }
        Ok(ino)
    }

    /// Creates a file (`dir == false`) or directory, counting a kernel
    /// reference. ENOSPC when the tree holds `max_inodes` already.
    pub fn create(
        &mut self,
        parent: u64,
        name: &OsStr,
        dir: bool,
        perm: u16,
    ) -> Result<u64, Errno> {
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if self.dir(parent)?.get(name).is_some() {
            return Err(Errno::EEXIST);
        }
        if self.nodes.len() >= self.max {
            return Err(Errno::ENOSPC);
        }
        let ino = self.next;
        self.next += 1;
        let now = SystemTime::now();
        self.nodes.insert(
            ino,
            Node {
                parent,
                name: name.to_owned(),
                children: dir.then(Dir::default),
                size: 0,
                perm,
                mtime: now,
                ctime: now,
                lookups: 1,
                open: 0,
                unlinked: false,
            },
        );
        self.dir_mut(parent)?.insert(name.to_owned(), ino);
        self.touch(parent);
        Ok(ino)
    }

    fn touch(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            let now = SystemTime::now();
            n.mtime = now;
            n.ctime = now;
        }
    }

    /// Removes a file (`dir == false`) or an empty directory.
    pub fn remove(&mut self, parent: u64, name: &OsStr, dir: bool) -> Result<(), Errno> {
        let ino = self.dir(parent)?.get(name).ok_or(Errno::ENOENT)?;
        let node = self.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        match (&node.children, dir) {
            (Some(_), false) => return Err(Errno::EISDIR),
            (None, true) => return Err(Errno::ENOTDIR),
            (Some(c), true) if !c.is_empty() => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        self.dir_mut(parent)?.remove(name);
        self.touch(parent);
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.unlinked = true;
        }
        self.collect(ino);
        Ok(())
    }

    /// Moves `name` in `parent` to `new_name` in `new_parent`, replacing a
    /// file there (or an empty directory, when moving a directory).
    pub fn rename(
        &mut self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        no_replace: bool,
    ) -> Result<(), Errno> {
        if new_name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let ino = self.dir(parent)?.get(name).ok_or(Errno::ENOENT)?;
        let moving_dir = self.nodes.get(&ino).is_some_and(Node::is_dir);
        self.dir(new_parent)?;
        // a directory cannot move into itself or below itself
        let mut up = new_parent;
        loop {
            if up == ino {
                return Err(Errno::EINVAL);
            }
            if up == ROOT {
                break;
            }
            up = self.nodes.get(&up).map_or(ROOT, |n| n.parent);
        }
        if let Some(old) = self.dir(new_parent)?.get(new_name) {
            if old == ino {
                return Ok(());
            }
            if no_replace {
                return Err(Errno::EEXIST);
            }
            self.remove(new_parent, new_name, moving_dir)?;
        }
        self.dir_mut(parent)?.remove(name);
        self.dir_mut(new_parent)?.insert(new_name.to_owned(), ino);
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.parent = new_parent;
            n.name = new_name.to_owned();
            n.ctime = SystemTime::now();
        }
        self.touch(parent);
        self.touch(new_parent);
        Ok(())
    }

    /// The kernel dropped `n` references.
    pub fn forget(&mut self, ino: u64, n: u64) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.lookups = node.lookups.saturating_sub(n);
        }
        self.collect(ino);
    }

    /// Frees a removed inode nobody refers to any more.
    pub fn collect(&mut self, ino: u64) {
        let gone = self
            .nodes
            .get(&ino)
            .is_some_and(|n| n.unlinked && n.lookups == 0 && n.open == 0);
        if gone && ino != ROOT {
            self.nodes.remove(&ino);
        }
    }

    /// The path of `ino` inside the mount, without a leading `/`
    /// (`app/web.log`). A removed file still open keeps the path it had.
    pub fn path(&self, ino: u64) -> Option<String> {
        let mut parts = Vec::new();
        let mut cur = ino;
        while cur != ROOT {
            let Some(n) = self.nodes.get(&cur) else {
                break; // a removed directory: the path as far as known
            };
            parts.push(n.name.to_string_lossy());
            cur = n.parent;
        }
        if parts.is_empty() && ino != ROOT {
            return None;
        }
        parts.reverse();
        Some(parts.join("/"))
    }

    pub fn attr(&self, ino: u64) -> Option<FileAttr> {
        let n = self.nodes.get(&ino)?;
        let (kind, nlink) = match &n.children {
            Some(c) => (FileType::Directory, 2 + c.len() as u32),
            None => (FileType::RegularFile, u32::from(!n.unlinked)),
        };
        Some(FileAttr {
            ino: INodeNo(ino),
            size: n.size,
            blocks: n.size.div_ceil(512),
            atime: n.mtime,
            mtime: n.mtime,
            ctime: n.ctime,
            crtime: n.ctime,
            kind,
            perm: n.perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 1024 * 1024,
            flags: 0,
        })
    }

    /// Hands the entries of a directory after `offset` (0 at first, then
    /// the offset of the last entry taken) to `add`, `.` and `..` first,
    /// until `add` says it is full (returns true). Copies nothing: `add`
    /// runs under the caller's lock for as many entries as one reply holds.
    pub fn read_dir(
        &self,
        ino: u64,
        offset: u64,
        mut add: impl FnMut(u64, FileType, &OsStr, u64) -> bool,
    ) -> Result<(), Errno> {
        let dir = self.dir(ino)?;
        let parent = self.nodes.get(&ino).map_or(ROOT, |n| n.parent);
        if offset < 1 && add(ino, FileType::Directory, OsStr::new("."), 1) {
            return Ok(());
        }
        if offset < 2 && add(parent, FileType::Directory, OsStr::new(".."), 2) {
            return Ok(());
        }
        let after = offset.saturating_sub(ENTRY_OFFSET);
        for &child in dir.inodes.range(after + 1..) {
            let Some(n) = self.nodes.get(&child) else {
                continue;
            };
            let kind = match n.is_dir() {
                true => FileType::Directory,
                false => FileType::RegularFile,
            };
            if add(child, kind, &n.name, child + ENTRY_OFFSET) {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    /// Every entry of a directory, read `per_call` at a time as the
    /// kernel does.
    fn list(t: &Tree, ino: u64, per_call: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let mut got = 0;
            t.read_dir(ino, offset, |_, _, name, next| {
                out.push(name.to_string_lossy().into_owned());
                offset = next;
                got += 1;
                got == per_call
            })
            .unwrap();
            if got < per_call {
                return out;
            }
        }
    }

    #[test]
    fn paths_follow_renames_and_removals() {
        let mut t = Tree::new(100);
        let d = t.create(ROOT, os("app"), true, 0o755).unwrap();
        let f = t.create(d, os("a.log"), false, 0o644).unwrap();
        assert_eq!(t.path(f).as_deref(), Some("app/a.log"));
        t.rename(d, os("a.log"), ROOT, os("b.log"), false).unwrap();
        assert_eq!(t.path(f).as_deref(), Some("b.log"));
        t.rename(ROOT, os("b.log"), d, os("c.log"), false).unwrap();
        t.rename(ROOT, os("app"), ROOT, os("web"), false).unwrap();
        assert_eq!(t.path(f).as_deref(), Some("web/c.log"));
        assert_eq!(t.remove(ROOT, os("web"), true), Err(Errno::ENOTEMPTY));
        t.remove(d, os("c.log"), false).unwrap();
        assert_eq!(
            t.path(f).as_deref(),
            Some("web/c.log"),
            "the last path, while open"
        );
        assert_eq!(t.lookup(d, os("c.log")), Err(Errno::ENOENT));
        assert!(t.get(f).is_some(), "the kernel still refers to it");
        t.forget(f, 1);
        assert!(t.get(f).is_none(), "freed once forgotten");
        t.remove(ROOT, os("web"), true).unwrap();
        assert_eq!(list(&t, ROOT, 10), [".", ".."]);
    }

    #[test]
    fn rename_replaces_files_and_refuses_loops() {
        let mut t = Tree::new(100);
        let a = t.create(ROOT, os("a"), false, 0o644).unwrap();
        let b = t.create(ROOT, os("b"), false, 0o644).unwrap();
        assert_eq!(
            t.rename(ROOT, os("a"), ROOT, os("b"), true),
            Err(Errno::EEXIST)
        );
        t.rename(ROOT, os("a"), ROOT, os("b"), false).unwrap();
        assert_eq!(t.path(a).as_deref(), Some("b"));
        assert!(t.get(b).unwrap().unlinked, "the replaced file is gone");
        assert_eq!(list(&t, ROOT, 10), [".", "..", "b"]);
        let d = t.create(ROOT, os("d"), true, 0o755).unwrap();
        let e = t.create(d, os("e"), true, 0o755).unwrap();
        assert_eq!(
            t.rename(ROOT, os("d"), e, os("x"), false),
            Err(Errno::EINVAL)
        );
        assert_eq!(t.create(ROOT, os("d"), false, 0o644), Err(Errno::EEXIST));
        assert_eq!(t.lookup(ROOT, os("nope")), Err(Errno::ENOENT));
    }

    #[test]
    fn readdir_resumes_after_the_last_entry_whatever_changes_meanwhile() {
        let mut t = Tree::new(1000);
        for i in 0..10 {
            t.create(ROOT, os(&format!("f{i}")), false, 0o644).unwrap();
        }
        let all = list(&t, ROOT, 3);
        assert_eq!(all.len(), 12);
        assert_eq!(&all[..3], [".", "..", "f0"]);
        // a listing interrupted by a removal and a creation: nothing that
        // stayed is skipped or repeated
        let mut first = Vec::new();
        let mut offset = 0;
        t.read_dir(ROOT, 0, |_, _, name, next| {
            first.push(name.to_string_lossy().into_owned());
            offset = next;
            first.len() == 5
        })
        .unwrap();
        assert_eq!(first, [".", "..", "f0", "f1", "f2"]);
        t.remove(ROOT, os("f1"), false).unwrap();
        t.remove(ROOT, os("f5"), false).unwrap();
        t.create(ROOT, os("new"), false, 0o644).unwrap();
        let mut rest = Vec::new();
        t.read_dir(ROOT, offset, |_, _, name, _| {
            rest.push(name.to_string_lossy().into_owned());
            false
        })
        .unwrap();
        assert_eq!(rest, ["f3", "f4", "f6", "f7", "f8", "f9", "new"]);
        assert_eq!(t.read_dir(99, 0, |_, _, _, _| false), Err(Errno::ENOENT));
    }

    #[test]
    fn the_inode_limit_refuses_with_enospc_until_one_is_freed() {
        // the root and two more
        let mut t = Tree::new(3);
        let a = t.create(ROOT, os("a"), false, 0o644).unwrap();
        let b = t.create(ROOT, os("b"), true, 0o755).unwrap();
        assert_eq!(t.create(ROOT, os("c"), false, 0o644), Err(Errno::ENOSPC));
        assert_eq!(t.create(b, os("c"), false, 0o644), Err(Errno::ENOSPC));
        assert_eq!(t.len(), 3);
        // a removed file still referenced by the kernel holds its inode
        t.remove(ROOT, os("a"), false).unwrap();
        assert_eq!(t.create(ROOT, os("c"), false, 0o644), Err(Errno::ENOSPC));
        t.forget(a, 1);
        t.create(ROOT, os("c"), false, 0o644).unwrap();
    }
}
