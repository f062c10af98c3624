//! A machine brought up once and run again from that state for every input, as snapshot fuzzers
//! do: building a machine (a world, its memory, the HWRM bring-up with context memory, the RoCE
//! channel, connected QPs) costs far more than most inputs do with it.
//!
//! The machine's state is copied ([`Clone`]: the world's NICs, switch and clock, and the test
//! driver's bookkeeping); its memory, which the copy shares with the original, is restored to
//! the image saved after the bring-up. That memory ([`CowMemory`]) is a private mapping of a
//! memory file holding the image: what an input writes lands in private copies of the pages it
//! touches, and dropping them (`madvise(MADV_DONTNEED)`) brings back the file's pages, so a
//! restore costs what the input touched, not the 16 MiB per NIC.
//!
//! Nothing of one input may reach the next (libFuzzer replays a crash on a fresh process and
//! expects the same crash). With `BNXT_FUZZ_CHECK_RESTORE=1` in the environment every input also
//! runs on a machine built afresh, and the two must end in the same state (every NIC's whole
//! device state, the events, the clock and every byte of memory): see [`Snapshot::run`].
//!
//! With `BNXT_FUZZ_FRESH=1` every input runs on a machine built afresh instead, its memory on the
//! heap, as the targets ran before they had snapshots: what the snapshots save is measured by
//! running the same binary both ways.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::Arc;

use bnxt_model::host_memory::{DmaBacking, HeapBacking};
use rustix::fs::{MemfdFlags, ftruncate, memfd_create};
use rustix::mm::{Advice, MapFlags, ProtFlags, madvise, mmap, munmap};

/// Memory lent to a NIC that can go back to a saved image: a private mapping of a memory file.
pub struct CowMemory {
    ptr: NonNull<u8>,
    len: usize,
    file: OwnedFd,
}

// SAFETY: the mapping is owned by this value and only reached through raw pointers by its users
// (the DmaBacking contract); moving or sharing the handle between threads is sound.
unsafe impl Send for CowMemory {}
// SAFETY: see Send.
unsafe impl Sync for CowMemory {}

impl CowMemory {
    /// `len` bytes of zeroes (a whole number of pages).
    pub fn new(len: usize) -> CowMemory {
        assert!(len > 0 && len % 4096 == 0, "memory of whole pages");
        let file = memfd_create("bnxt-fuzz-memory", MemfdFlags::CLOEXEC).expect("memfd_create");
        ftruncate(&file, len as u64).expect("ftruncate of the memory file");
        // SAFETY: a new mapping chosen by the kernel (no address given), of a file of `len`
        // bytes; nothing else refers to it.
        let ptr =
            unsafe { mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE, &file, 0) }
                .expect("mmap of the memory file");
        CowMemory { ptr: NonNull::new(ptr.cast()).expect("mmap returns no null pointer"), len, file }
    }

    /// Make the memory's bytes as they are now the image [`CowMemory::restore`] goes back to.
    pub fn save(&self) {
        let mut done = 0;
        while done < self.len {
            // SAFETY: `done < len`, so the `len - done` bytes from `ptr + done` lie inside the
            // mapping; nothing writes them while the slice lives (the machine is not running:
            // the caller saves between inputs, on the one thread that runs it).
            let rest = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(done), self.len - done) };
            done += rustix::io::pwrite(&self.file, rest, done as u64).expect("pwrite of the memory image");
        }
        self.restore();
    }

    /// Every byte back to the saved image (zeroes if none was saved).
    pub fn restore(&self) {
        // SAFETY: the range is exactly this value's own mapping. Dropping the private pages of a
        // private file mapping makes the next access read the file's (the saved image); no
        // Rust reference to the bytes is held (the DmaBacking contract).
        unsafe { madvise(self.ptr.as_ptr().cast(), self.len, Advice::LinuxDontNeed) }.expect("madvise(MADV_DONTNEED)");
    }

    /// A hash of every byte, to compare two memories.
    pub fn digest(&self) -> u64 {
        let mut h = DefaultHasher::new();
        // SAFETY: the whole mapping, read while the machine is not running (see `save`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }.hash(&mut h);
        h.finish()
    }
}

impl Drop for CowMemory {
    fn drop(&mut self) {
        // SAFETY: this value's own mapping, unmapped once; the world that lent it is gone (it
        // held an `Arc` to this value).
        let _ = unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

// SAFETY: the mapping is valid for `len` bytes until drop and never moves; the type hands out
// no references to the bytes but for the moments `save` and `digest` document.
unsafe impl DmaBacking for CowMemory {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// What of a machine is compared between a restored copy and one built afresh.
pub trait Observe {
    /// A description of the machine's whole state (besides its memory), for comparison:
    /// every NIC's device state, the events not yet taken and the clock.
    fn state(&mut self) -> String;
}

/// Makes memories for a machine being built, and keeps them.
pub struct Memories {
    len: usize,
    /// Heap memory, as the targets had before snapshots, rather than restorable memory.
    heap: bool,
    made: Vec<Arc<CowMemory>>,
}

impl Memories {
    /// Another memory of the size this machine's NICs get.
    pub fn make(&mut self) -> Arc<dyn DmaBacking> {
        if self.heap {
            return Arc::new(HeapBacking::new(self.len));
        }
        let m = Arc::new(CowMemory::new(self.len));
        self.made.push(m.clone());
        m
    }
}

/// How inputs are run (chosen by the environment, see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// On a restored copy.
    Restore,
    /// On a machine built afresh and on a restored copy, compared.
    Check,
    /// On a machine built afresh, with heap memory.
    Fresh,
}

/// A machine as it was brought up, with its memories, to run inputs on.
pub struct Snapshot<M> {
    build: fn(&mut Memories) -> M,
    len: usize,
    /// The machine and its memories (none when every input gets a fresh machine).
    saved: Option<(M, Vec<Arc<CowMemory>>)>,
    mode: Mode,
}

impl<M: Clone + Observe> Snapshot<M> {
    /// Bring a machine up with `build`, whose NICs each get `len` bytes of memory from the
    /// [`Memories`] it is given, and save it.
    pub fn take(len: usize, build: fn(&mut Memories) -> M) -> Snapshot<M> {
        let set = |name| std::env::var_os(name).is_some_and(|v| v == "1");
        let mode = match (set("BNXT_FUZZ_CHECK_RESTORE"), set("BNXT_FUZZ_FRESH")) {
            (true, _) => Mode::Check,
            (false, true) => Mode::Fresh,
            (false, false) => Mode::Restore,
        };
        let saved = (mode != Mode::Fresh).then(|| {
            let (machine, memory) = Snapshot::build(len, build, false);
            for m in &memory {
                m.save();
            }
            (machine, memory)
        });
        Snapshot { build, len, saved, mode }
    }

    fn build(len: usize, build: fn(&mut Memories) -> M, heap: bool) -> (M, Vec<Arc<CowMemory>>) {
        let mut memories = Memories { len, heap, made: Vec::new() };
        let machine = build(&mut memories);
        (machine, memories.made)
    }

    /// A copy of the machine as it was saved, its memory restored.
    fn restore(&self) -> M {
        let (machine, memory) = self.saved.as_ref().expect("a machine saved when inputs run on copies");
        for m in memory {
            m.restore();
        }
        machine.clone()
    }

    /// Run `input` on a restored copy (with `BNXT_FUZZ_CHECK_RESTORE=1`, first on a machine
    /// built afresh, then on the copy, and panic unless both end in the same state and memory;
    /// with `BNXT_FUZZ_FRESH=1`, on a machine built afresh only).
    pub fn run(&self, input: impl Fn(&mut M)) {
        match self.mode {
            Mode::Restore => return input(&mut self.restore()),
            Mode::Fresh => return input(&mut Snapshot::build(self.len, self.build, true).0),
            Mode::Check => {}
        }
        let (mut fresh, fresh_memory) = Snapshot::build(self.len, self.build, false);
        input(&mut fresh);
        let mut copy = self.restore();
        input(&mut copy);
        let (a, b) = (fresh.state(), copy.state());
        if a != b {
            let at = a.chars().zip(b.chars()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            let from = at.saturating_sub(200);
            panic!(
                "a restored machine ended unlike a fresh one, first at byte {at} of its state:\n fresh:    {}\n restored: {}",
                a.get(from..(at + 200).min(a.len())).unwrap_or(""),
                b.get(from..(at + 200).min(b.len())).unwrap_or(""),
            );
        }
        let (_, memory) = self.saved.as_ref().expect("a machine saved when inputs run on copies");
        for (i, (f, r)) in fresh_memory.iter().zip(memory).enumerate() {
            assert_eq!(f.digest(), r.digest(), "memory {i} of a restored machine ended unlike a fresh one's");
        }
    }
}
