//! Surviving a client that shrinks a file it lent as guest memory.
//!
//! A vfio-user client lends guest memory as a file descriptor the server maps shared
//! (`VFIO_USER_DMA_MAP`). When the file can shrink (a memfd without `F_SEAL_SHRINK`: QEMU's
//! `memory-backend-memfd,seal=off`; any hugetlbfs or ordinary file: `memory-backend-file`), the
//! client may truncate it while it is mapped, and the next touch of a page past the new end of
//! the file raises SIGBUS, whose default action ends the process. A hugetlbfs page the kernel
//! cannot supply, or a block a full file system cannot, raises the same signal.
//!
//! The design: every such mapping is registered here (a fixed table of address ranges the
//! signal handler can read without locks). The process's SIGBUS handler looks up the faulting
//! address; if it lies in a registered range, it replaces the whole range, in place, with
//! private anonymous memory of the same protection (`mmap` with `MAP_FIXED`, so the faulting
//! copy resumes on zero pages and finishes), marks the range revoked, and returns. The model's
//! address space checks a mapping's revocation flag after every copy
//! ([`bnxt_model::host_memory::DmaBacking::revocation`]), so the access that ran into the
//! truncation and every later one fail as DMA errors (counted and logged by the model), the
//! data of that copy discarded; nothing the client did not lend is read or written, and the
//! replaced pages are the server's own. `DMA_UNMAP` (or the client leaving) unmaps them as any
//! region. A fault outside every registered range is not ours: the previous handler (Rust's
//! own, which reports stack overflows) or the default action takes it, as without this module.
//!
//! Only memory-mapping DMA regions registers ranges, each with the length the kernel mapped
//! (whole pages of the file's page size, so a hugetlbfs range is replaced whole, as hugetlbfs
//! requires). The table holds [`MAX_GUARDED`] ranges; a map past that is refused.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// Most mappings of files that can shrink held at once (QEMU lends a guest's RAM as a handful
/// of regions).
pub const MAX_GUARDED: usize = 1024;

/// One registered range: its start (0 when free), length, protection and revocation flag.
struct Slot {
    busy: AtomicBool,
    start: AtomicUsize,
    len: AtomicUsize,
    prot: AtomicI32,
    revoked: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    busy: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    prot: AtomicI32::new(0),
    revoked: AtomicBool::new(false),
};

static SLOTS: [Slot; MAX_GUARDED] = [FREE; MAX_GUARDED];

/// The handler that was installed before ours, called for faults that are not ours.
static PREVIOUS: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

static INSTALL: Once = Once::new();

/// Why a range could not be guarded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// Every slot of the table is in use.
    #[error("already {MAX_GUARDED} mappings of files that can shrink")]
    Full,
    /// The SIGBUS handler could not be installed.
    #[error("the SIGBUS handler could not be installed (errno {0})")]
    Handler(i32),
}

/// A registered range; dropping it unregisters the range (before the caller unmaps it).
#[derive(Debug)]
pub struct Guard {
    slot: usize,
}

impl Guard {
    /// Register `len` bytes at `start`, mapped with protection `prot` (`PROT_*`), installing
    /// the SIGBUS handler the first time.
    pub fn new(start: *mut u8, len: usize, prot: i32) -> Result<Guard, GuardError> {
        install()?;
        for (i, s) in SLOTS.iter().enumerate() {
            if s.busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                s.revoked.store(false, Ordering::Relaxed);
                s.prot.store(prot, Ordering::Relaxed);
                s.len.store(len, Ordering::Relaxed);
                s.start.store(start as usize, Ordering::Release);
                return Ok(Guard { slot: i });
            }
        }
        Err(GuardError::Full)
    }

    /// The range's revocation flag.
    pub fn revoked(&self) -> &'static AtomicBool {
        &SLOTS[self.slot].revoked
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let s = &SLOTS[self.slot];
        s.start.store(0, Ordering::Release);
        s.len.store(0, Ordering::Release);
        s.busy.store(false, Ordering::Release);
    }
}

fn install() -> Result<(), GuardError> {
    let mut err = 0;
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; `on_sigbus` has the
        // three-argument signature SA_SIGINFO calls for; `old` receives the previous action.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &act, &mut old) != 0 {
                err = std::io::Error::last_os_error().raw_os_error().unwrap_or(-1);
                return;
            }
            let _ = PREVIOUS.set(old);
        }
    });
    if err != 0 { Err(GuardError::Handler(err)) } else { Ok(()) }
}

/// The SIGBUS handler. Async-signal-safe: atomics, `mmap` (a system call) and errno only.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers; `si_addr` is the
    // faulting address for SIGBUS.
    let addr = unsafe { (*info).si_addr() } as usize;
    // SAFETY: errno is thread-local; saved here and restored below, as a handler must.
    let errno = unsafe { *libc::__errno_location() };
    for s in SLOTS.iter() {
        let start = s.start.load(Ordering::Acquire);
        let len = s.len.load(Ordering::Acquire);
        if start == 0 || addr < start || addr >= start + len {
            continue;
        }
        // SAFETY: `start..start + len` is a mapping this process made and still holds (the slot
        // is registered from mmap to just before munmap); replacing it in place with private
        // anonymous memory of the same protection leaves every pointer into it valid.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len,
                s.prot.load(Ordering::Relaxed),
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            break; // no memory to put there: the fault stays fatal
        }
        s.revoked.store(true, Ordering::Release);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        return;
    }
    // Not ours: hand it to the previous handler, or let the default action take it (the
    // faulting instruction runs again with the default disposition restored).
    // SAFETY: `PREVIOUS` holds what sigaction reported before ours was installed; calling a
    // SA_SIGINFO handler with the arguments we were given, or restoring a disposition, is what
    // the kernel would have done.
    unsafe {
        match PREVIOUS.get() {
            Some(old) if old.sa_sigaction > libc::SIG_IGN && old.sa_flags & libc::SA_SIGINFO != 0 => {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
                f(sig, info, ctx);
            }
            Some(old) if old.sa_sigaction > libc::SIG_IGN => {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                f(sig);
            }
            _ => {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            }
        }
        *libc::__errno_location() = errno;
    }
}
