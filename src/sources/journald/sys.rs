//! libsystemd's journal reader (sd-journal), loaded when a journald source
//! starts: `libsystemd.so.0` is opened with dlopen(3), so the binary runs
//! (and every other source works) on machines without systemd, and only a
//! journald source there fails to start, saying why.
//!
//! [`Journal`] is the one owner of an `sd_journal` handle. sd-journal is
//! not thread-safe: a handle is used only on the thread that opened it,
//! which `Journal` not being `Send` ensures.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// The sd-journal library's name on every distribution that ships it.
const LIBRARY: &CStr = c"libsystemd.so.0";

/// `SD_JOURNAL_LOCAL_ONLY`: this machine's journal, not remote ones.
const LOCAL_ONLY: c_int = 1;

/// An opaque `sd_journal *`.
#[repr(C)]
struct SdJournal {
    _private: [u8; 0],
}

/// `sd_id128_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Id128 {
    bytes: [u8; 16],
}

type J = *mut SdJournal;

/// The functions used, looked up once per process.
struct Lib {
    open: unsafe extern "C" fn(*mut J, c_int) -> c_int,
    open_directory: unsafe extern "C" fn(*mut J, *const c_char, c_int) -> c_int,
    open_files: unsafe extern "C" fn(*mut J, *const *const c_char, c_int) -> c_int,
    close: unsafe extern "C" fn(J),
    next: unsafe extern "C" fn(J) -> c_int,
    previous: unsafe extern "C" fn(J) -> c_int,
    seek_head: unsafe extern "C" fn(J) -> c_int,
    seek_tail: unsafe extern "C" fn(J) -> c_int,
    seek_cursor: unsafe extern "C" fn(J, *const c_char) -> c_int,
    test_cursor: unsafe extern "C" fn(J, *const c_char) -> c_int,
    get_cursor: unsafe extern "C" fn(J, *mut *mut c_char) -> c_int,
    get_realtime_usec: unsafe extern "C" fn(J, *mut u64) -> c_int,
    set_data_threshold: unsafe extern "C" fn(J, usize) -> c_int,
    restart_data: unsafe extern "C" fn(J),
    /// `sd_journal_enumerate_available_data` where the library has it
    /// (systemd 246 and later: a field compressed in a way this build
    /// cannot read is skipped, not an error for the whole entry), else
    /// `sd_journal_enumerate_data`.
    enumerate_data: unsafe extern "C" fn(J, *mut *const c_void, *mut usize) -> c_int,
    add_match: unsafe extern "C" fn(J, *const c_void, usize) -> c_int,
    add_conjunction: unsafe extern "C" fn(J) -> c_int,
    wait: unsafe extern "C" fn(J, u64) -> c_int,
    process: unsafe extern "C" fn(J) -> c_int,
    get_boot: unsafe extern "C" fn(*mut Id128) -> c_int,
}

/// Looks a symbol up as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the function's C signature.
unsafe fn symbol<T: Copy>(handle: *mut c_void, name: &CStr) -> Result<T, String> {
    let p = libc::dlsym(handle, name.as_ptr());
    if p.is_null() {
        return Err(format!(
            "{} has no {}",
            LIBRARY.to_string_lossy(),
            name.to_string_lossy()
        ));
    }
    Ok(std::mem::transmute_copy::<*mut c_void, T>(&p))
}

impl Lib {
    fn load() -> Result<Lib, String> {
        // SAFETY: dlopen with a constant name; the handle is never closed,
        // so the function pointers stay valid for the process's life.
        let handle = unsafe { libc::dlopen(LIBRARY.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns a message owned by libc, or null
            let why = unsafe { libc::dlerror() };
            let why = if why.is_null() {
                "not found".to_string()
            } else {
                unsafe { CStr::from_ptr(why) }
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(format!(
                "cannot load {} (systemd's journal library, package libsystemd0): {why}",
                LIBRARY.to_string_lossy()
            ));
        }
        // SAFETY: each type below is the documented signature of the
        // sd-journal function of that name (sd-journal.h, sd-id128.h).
        unsafe {
            Ok(Lib {
                open: symbol(handle, c"sd_journal_open")?,
                open_directory: symbol(handle, c"sd_journal_open_directory")?,
                open_files: symbol(handle, c"sd_journal_open_files")?,
                close: symbol(handle, c"sd_journal_close")?,
                next: symbol(handle, c"sd_journal_next")?,
                previous: symbol(handle, c"sd_journal_previous")?,
                seek_head: symbol(handle, c"sd_journal_seek_head")?,
                seek_tail: symbol(handle, c"sd_journal_seek_tail")?,
                seek_cursor: symbol(handle, c"sd_journal_seek_cursor")?,
                test_cursor: symbol(handle, c"sd_journal_test_cursor")?,
                get_cursor: symbol(handle, c"sd_journal_get_cursor")?,
                get_realtime_usec: symbol(handle, c"sd_journal_get_realtime_usec")?,
                set_data_threshold: symbol(handle, c"sd_journal_set_data_threshold")?,
                restart_data: symbol(handle, c"sd_journal_restart_data")?,
                enumerate_data: symbol(handle, c"sd_journal_enumerate_available_data")
                    .or_else(|_| symbol(handle, c"sd_journal_enumerate_data"))?,
                add_match: symbol(handle, c"sd_journal_add_match")?,
                add_conjunction: symbol(handle, c"sd_journal_add_conjunction")?,
                wait: symbol(handle, c"sd_journal_wait")?,
                process: symbol(handle, c"sd_journal_process")?,
                get_boot: symbol(handle, c"sd_id128_get_boot")?,
            })
        }
    }
}

/// The library, loaded on first use.
fn lib() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(Lib::load).as_ref().map_err(Clone::clone)
}

/// Whether libsystemd can be loaded here (tests skip where it cannot).
pub fn available() -> Result<(), String> {
    lib().map(|_| ())
}

/// A negative errno from sd-journal, as an error naming the call.
fn check(call: &str, r: c_int) -> Result<c_int, String> {
    if r < 0 {
        Err(format!("{call}: {}", std::io::Error::from_raw_os_error(-r)))
    } else {
        Ok(r)
    }
}

fn c_path(path: &Path) -> Result<CString, String> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{} has a NUL byte", path.display()))
}

/// What [`Journal::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing within the timeout.
    None,
    /// Entries were appended.
    Appended,
    /// Files were added or removed (a rotation, a vacuum).
    Files,
}

/// An open journal: the system's, a directory's or named files.
pub struct Journal {
    lib: &'static Lib,
    j: J,
    /// sd-journal handles belong to the thread that opened them.
    _not_send: PhantomData<*mut ()>,
}

impl Journal {
    fn open_with(
        what: &str,
        open: impl FnOnce(&'static Lib, *mut J) -> c_int,
    ) -> Result<Journal, String> {
        let lib = lib()?;
        let mut j: J = std::ptr::null_mut();
        check(what, open(lib, &mut j))?;
        let journal = Journal {
            lib,
            j,
            _not_send: PhantomData,
        };
        // no field is cut short: the default (64 KiB) would truncate
        // large MESSAGE fields
        // SAFETY: j is an open handle
        check("sd_journal_set_data_threshold", unsafe {
            (lib.set_data_threshold)(j, 0)
        })?;
        Ok(journal)
    }

    /// This machine's journal: the system's and users', persistent
    /// (`/var/log/journal`) and volatile (`/run/log/journal`).
    pub fn open_local() -> Result<Journal, String> {
        // SAFETY: `j` points to a handle slot the call fills
        Self::open_with("sd_journal_open", |lib, j| unsafe {
            (lib.open)(j, LOCAL_ONLY)
        })
    }

    /// The journal files in `dir` (and files added there later).
    pub fn open_directory(dir: &Path) -> Result<Journal, String> {
        let path = c_path(dir)?;
        // SAFETY: `path` is NUL-terminated and outlives the call
        Self::open_with(
            &format!("sd_journal_open_directory {}", dir.display()),
            |lib, j| unsafe { (lib.open_directory)(j, path.as_ptr(), 0) },
        )
    }

    /// The named journal files only.
    pub fn open_files(files: &[std::path::PathBuf]) -> Result<Journal, String> {
        let paths = files
            .iter()
            .map(|p| c_path(p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ptrs: Vec<*const c_char> = paths.iter().map(|p| p.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        // SAFETY: a NULL-terminated array of NUL-terminated strings, all
        // outliving the call
        Self::open_with("sd_journal_open_files", |lib, j| unsafe {
            (lib.open_files)(j, ptrs.as_ptr(), 0)
        })
    }

    /// Only entries with `FIELD=value` (`data`): matches of one field are
    /// alternatives, matches of different fields must all hold.
    pub fn add_match(&mut self, data: &[u8]) -> Result<(), String> {
        // SAFETY: data and its length describe one readable slice
        check("sd_journal_add_match", unsafe {
            (self.lib.add_match)(self.j, data.as_ptr().cast(), data.len())
        })
        .map(drop)
    }

    /// The matches added so far must hold together with the next ones
    /// (`AND`).
    pub fn add_conjunction(&mut self) -> Result<(), String> {
        // SAFETY: an open handle
        check("sd_journal_add_conjunction", unsafe {
            (self.lib.add_conjunction)(self.j)
        })
        .map(drop)
    }

    pub fn seek_head(&mut self) -> Result<(), String> {
        // SAFETY: an open handle
        check("sd_journal_seek_head", unsafe {
            (self.lib.seek_head)(self.j)
        })
        .map(drop)
    }

    /// After the last entry: [`Journal::next`] gives only entries written
    /// from now on.
    pub fn seek_tail(&mut self) -> Result<(), String> {
        // SAFETY: an open handle
        check("sd_journal_seek_tail", unsafe {
            (self.lib.seek_tail)(self.j)
        })?;
        // onto the last entry, so the next step is past it
        // SAFETY: an open handle
        check("sd_journal_previous", unsafe {
            (self.lib.previous)(self.j)
        })
        .map(drop)
    }

    /// At the entry of `cursor` (or where it would be, when it is gone):
    /// the next [`Journal::next`] steps onto it.
    pub fn seek_cursor(&mut self, cursor: &str) -> Result<(), String> {
        let c = CString::new(cursor).map_err(|_| "a cursor with a NUL byte".to_string())?;
        // SAFETY: c is NUL-terminated and outlives the call
        check("sd_journal_seek_cursor", unsafe {
            (self.lib.seek_cursor)(self.j, c.as_ptr())
        })
        .map(drop)
    }

    /// Whether the current entry is the one of `cursor`.
    pub fn test_cursor(&mut self, cursor: &str) -> Result<bool, String> {
        let c = CString::new(cursor).map_err(|_| "a cursor with a NUL byte".to_string())?;
        // SAFETY: c is NUL-terminated and outlives the call
        check("sd_journal_test_cursor", unsafe {
            (self.lib.test_cursor)(self.j, c.as_ptr())
        })
        .map(|r| r > 0)
    }

    /// Steps to the next entry; false at the end.
    pub fn next(&mut self) -> Result<bool, String> {
        // SAFETY: an open handle
        check("sd_journal_next", unsafe { (self.lib.next)(self.j) }).map(|r| r > 0)
    }

    /// The current entry's cursor.
    pub fn cursor(&mut self) -> Result<String, String> {
        let mut p: *mut c_char = std::ptr::null_mut();
        // SAFETY: p receives a malloc'd string that is freed below
        check("sd_journal_get_cursor", unsafe {
            (self.lib.get_cursor)(self.j, &mut p)
        })?;
        // SAFETY: on success p is a NUL-terminated malloc'd string
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        unsafe { libc::free(p.cast()) };
        Ok(s)
    }

    /// The current entry's wall-clock time, in microseconds since the epoch.
    pub fn realtime_usec(&mut self) -> Result<u64, String> {
        let mut t = 0u64;
        // SAFETY: t is a u64 the call fills
        check("sd_journal_get_realtime_usec", unsafe {
            (self.lib.get_realtime_usec)(self.j, &mut t)
        })?;
        Ok(t)
    }

    /// Calls `each` with every `FIELD=value` of the current entry, in the
    /// order stored (the slice is valid only during the call).
    pub fn for_each_field(&mut self, mut each: impl FnMut(&[u8])) -> Result<(), String> {
        // SAFETY: an open handle
        unsafe { (self.lib.restart_data)(self.j) };
        loop {
            let mut data: *const c_void = std::ptr::null();
            let mut len = 0usize;
            // SAFETY: data and len receive a pointer into the journal's
            // map and its length, valid until the next enumeration call
            let r = check("sd_journal_enumerate_data", unsafe {
                (self.lib.enumerate_data)(self.j, &mut data, &mut len)
            })?;
            if r == 0 {
                return Ok(());
            }
            // SAFETY: as above: `len` readable bytes at `data`
            each(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) });
        }
    }

    /// Waits at most `timeout` for the journal to change.
    pub fn wait(&mut self, timeout: Duration) -> Result<Change, String> {
        let usec = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        // SAFETY: an open handle
        let r = check("sd_journal_wait", unsafe { (self.lib.wait)(self.j, usec) })?;
        Ok(change(r))
    }

    /// Takes in the changes that happened since the last look, without
    /// waiting.
    pub fn process(&mut self) -> Result<Change, String> {
        // SAFETY: an open handle
        let r = check("sd_journal_process", unsafe { (self.lib.process)(self.j) })?;
        Ok(change(r))
    }
}

/// `SD_JOURNAL_NOP`, `_APPEND`, `_INVALIDATE`.
fn change(r: c_int) -> Change {
    match r {
        1 => Change::Appended,
        2 => Change::Files,
        _ => Change::None,
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // SAFETY: the handle is open and used nowhere else
        unsafe { (self.lib.close)(self.j) }
    }
}

/// This boot's id, as 32 hex digits (`_BOOT_ID`).
pub fn boot_id() -> Result<String, String> {
    let lib = lib()?;
    let mut id = Id128 { bytes: [0; 16] };
    // SAFETY: id is a 16-byte sd_id128_t the call fills
    check("sd_id128_get_boot", unsafe { (lib.get_boot)(&mut id) })?;
    Ok(id.bytes.iter().map(|b| format!("{b:02x}")).collect())
}
