//! The plugin in QEMU: callbacks on every guest memory access and on `out` instructions, a fast
//! filter by guest-physical address, and the traced functions' decoders behind one lock.
//!
//! Every load and store the guest's kernel makes (or, with `code=all`, any code) reaches
//! `on_mem`; it looks its guest-physical address up
//! in a table of ranges kept in atomics (the BARs, the responses being awaited, the ECAM window)
//! and returns at once when none holds it, so the lock is taken only for the accesses that
//! matter. `out dx, al|ax|eax` instructions get a callback that reads the port and value
//! registers, for the configuration writes of the legacy mechanism.

use std::cell::RefCell;
use std::ffi::{c_uint, c_void};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use crate::api::{Api, ByteArray, Insn, MemInfo, RegisterHandle, Tb};
use crate::args::{Config, MAX_NICS};
use crate::events::TraceEvent;
use crate::hwrm::GuestMemory;
use crate::nic::{BARS, Nic};
use crate::output::{self, AccessRecord};
use crate::pci::{self, PortDecoder};

/// Where the upper half of the x86-64 address space starts: kernel text and modules run there,
/// user space and the boot-time decompressor below.
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

/// Ranges per function in the filter: its three BARs and its awaited response.
const SLOTS: usize = BARS.len() + 1;

/// The plugin, once installed.
pub struct Plugin {
    api: Api,
    id: u64,
    config: Config,
    /// Whether memory accesses are instrumented (from the first bus-master enable, or always).
    watching: AtomicBool,
    start: Instant,
    /// `[start, end)` pairs, `SLOTS` per function; `end == 0` means empty.
    ranges: [[AtomicU64; 2]; MAX_NICS * SLOTS],
    registers: OnceLock<Option<(RegisterHandle, RegisterHandle)>>,
    state: Mutex<State>,
}

struct State {
    nics: Vec<Nic>,
    ports: PortDecoder,
    transcript: BufWriter<File>,
    accesses: BufWriter<File>,
    raw_lines: u64,
    write_failed: bool,
}

static PLUGIN: OnceLock<Plugin> = OnceLock::new();

thread_local! {
    static SCRATCH: RefCell<Option<ByteArray>> = const { RefCell::new(None) };
}

/// Install the plugin: open its files, write the transcript's header, and register the
/// callbacks. `Err` is the message QEMU shows.
pub fn install(id: u64, config: Config) -> Result<(), String> {
    let api = Api::load().map_err(|e| e.to_string())?;
    let mut transcript = output::create(&config.out).map_err(|e| e.to_string())?;
    let accesses = output::create(&config.accesses).map_err(|e| e.to_string())?;
    let mut header = vec![
        ("target", "guest".to_string()),
        ("recorder", "bnxt-qemu-trace (QEMU TCG plugin)".to_string()),
        ("kernel", config.kernel.clone()),
        ("device", config.device.clone()),
    ];
    for (i, nic) in config.nics.iter().enumerate() {
        let (b, d, f) = nic.bdf;
        header.push(("nic", format!("drv{i} at guest {b:02x}:{d:02x}.{f}")));
    }
    transcript.write_all(output::header(&header).as_bytes()).map_err(|e| format!("{}: {e}", config.out.display()))?;
    let nics = config.nics.iter().map(|n| Nic::new(n.bars, config.sizes, config.msix)).collect();
    let state = State { nics, ports: PortDecoder::default(), transcript, accesses, raw_lines: 0, write_failed: false };
    let watching = AtomicBool::new(config.watch_always);
    let plugin = Plugin {
        api,
        id,
        config,
        watching,
        start: Instant::now(),
        ranges: std::array::from_fn(|_| [AtomicU64::new(0), AtomicU64::new(0)]),
        registers: OnceLock::new(),
        state: Mutex::new(state),
    };
    {
        let state = plugin.lock();
        plugin.publish_ranges(&state);
    }
    PLUGIN.set(plugin).map_err(|_| "installed twice".to_string())?;
    let p = PLUGIN.get().expect("just set");
    p.api.register_vcpu_init(id, on_vcpu_init, std::ptr::null_mut());
    p.register();
    Ok(())
}

impl Plugin {
    fn register(&self) {
        self.api.register_tb_trans(self.id, on_tb_trans, std::ptr::null_mut());
        self.api.register_atexit(self.id, on_exit, std::ptr::null_mut());
    }

    /// Start watching memory accesses: drop the code translated without memory callbacks.
    fn start_watching(&self) {
        if !self.watching.swap(true, Ordering::SeqCst) {
            self.api.reset(self.id, on_reset);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish_ranges(&self, state: &State) {
        for (i, nic) in state.nics.iter().enumerate() {
            let mut slots: Vec<Option<(u64, u64)>> = BARS.iter().map(|b| nic.bar_range(*b)).collect();
            slots.push(nic.response_range());
            for (j, r) in slots.into_iter().enumerate() {
                let (start, end) = r.unwrap_or((0, 0));
                let slot = &self.ranges[i * SLOTS + j];
                slot[0].store(start, Ordering::Relaxed);
                slot[1].store(end, Ordering::Relaxed);
            }
        }
    }

    /// The function and slot whose range holds `phys`.
    fn find(&self, phys: u64) -> Option<(usize, usize)> {
        let n = self.config.nics.len() * SLOTS;
        self.ranges[..n]
            .iter()
            .position(|r| phys < r[1].load(Ordering::Relaxed) && phys >= r[0].load(Ordering::Relaxed))
            .map(|i| (i / SLOTS, i % SLOTS))
    }

    fn event(&self, state: &mut State, nic: usize, event: &TraceEvent) {
        let line = output::line(self.start.elapsed(), nic, &event.to_string());
        if let Err(e) = writeln!(state.transcript, "{line}").and_then(|()| state.transcript.flush()) {
            self.write_failed(state, &e);
        }
    }

    fn raw(&self, state: &mut State, line: &str) {
        state.raw_lines += 1;
        let flush = state.raw_lines.is_multiple_of(256);
        let r = writeln!(state.accesses, "{line}").and_then(|()| if flush { state.accesses.flush() } else { Ok(()) });
        if let Err(e) = r {
            self.write_failed(state, &e);
        }
    }

    fn write_failed(&self, state: &mut State, e: &std::io::Error) {
        if !state.write_failed {
            state.write_failed = true;
            self.api.outs(&format!("bnxt-qemu-trace: writing the trace failed: {e}\n"));
        }
    }

    fn config_write(&self, state: &mut State, w: &pci::ConfigWrite) {
        let Some(i) = self.config.nics.iter().position(|n| n.bdf == w.bdf) else { return };
        let events = state.nics[i].config_write(w);
        for e in &events {
            self.event(state, i, e);
            if let TraceEvent::Command { bus_master: true, .. } = e {
                self.start_watching();
            }
        }
        if !events.is_empty() {
            self.publish_ranges(state);
        }
    }

    fn mem(&self, vcpu: u32, hit: Option<(usize, usize)>, phys: u64, size: u8, store: bool, value: u64) {
        if let Some((nic, slot)) = hit {
            let mut state = self.lock();
            let mut mem = Physical(&self.api);
            let event = if slot < BARS.len() {
                let bar = BARS[slot];
                let Some((base, _)) = state.nics[nic].bar_range(bar) else { return };
                let offset = phys - base;
                let record = AccessRecord { at: self.start.elapsed(), vcpu, nic, bar, offset, size, store, value };
                self.raw(&mut state, &record.to_line());
                state.nics[nic].access(bar, offset, size, store, value, &mut mem)
            } else if store {
                None
            } else {
                state.nics[nic].ram_load(&mut mem)
            };
            if let Some(e) = event {
                self.event(&mut state, nic, &e);
                if let (TraceEvent::HwrmAnswer { seq_id, .. }, Some(body)) = (&e, state.nics[nic].last_response.take())
                {
                    let line = output::response_line(self.start.elapsed(), nic, *seq_id, &body);
                    self.raw(&mut state, &line);
                }
                self.publish_ranges(&state);
            }
            return;
        }
        if store
            && let Some(ecam) = self.config.ecam
            && phys >= ecam
            && let Some(w) = pci::ecam_write(phys - ecam, size, value)
        {
            let mut state = self.lock();
            self.config_write(&mut state, &w);
        }
    }

    fn out(&self, size: u8) {
        let Some(Some((rax, rdx))) = self.registers.get() else { return };
        let (port, value) = with_scratch(&self.api, |buf| {
            (self.api.read_register(*rdx, buf).map(|v| v as u16), self.api.read_register(*rax, buf).map(|v| v as u32))
        });
        let (Some(port), Some(value)) = (port, value) else { return };
        if !(pci::CONFIG_ADDRESS..pci::CONFIG_DATA + 4).contains(&port) {
            return;
        }
        let mut state = self.lock();
        if let Some(w) = state.ports.out(port, size, value) {
            self.config_write(&mut state, &w);
        }
    }

    fn exit(&self) {
        let mut state = self.lock();
        let counts: Vec<String> = state
            .nics
            .iter()
            .enumerate()
            .map(|(i, n)| format!("# drv{i} doorbell stores: {}\n", n.doorbell_stores))
            .collect();
        let r = state
            .transcript
            .write_all(counts.concat().as_bytes())
            .and_then(|()| state.transcript.flush())
            .and_then(|()| state.accesses.flush());
        if let Err(e) = r {
            self.write_failed(&mut state, &e);
        }
    }
}

/// Guest memory through QEMU's physical-address reads.
struct Physical<'a>(&'a Api);

impl GuestMemory for Physical<'_> {
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        with_scratch(self.0, |buf| self.0.read_physical(addr, len, buf))
    }
}

fn with_scratch<T>(api: &Api, f: impl FnOnce(&mut ByteArray) -> T) -> T {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let buf = s.get_or_insert_with(|| api.byte_array());
        f(buf)
    })
}

/// The operand size of an `out dx, al|ax|eax` instruction in 32- or 64-bit code, if `bytes` is
/// one (legacy and REX prefixes skipped; 0xEE is a byte, 0xEF a dword, or a word after 0x66).
pub fn out_dx_size(bytes: &[u8]) -> Option<u8> {
    let mut word = false;
    for b in bytes {
        match b {
            0x66 => word = true,
            0x67 | 0xf0 | 0xf2 | 0xf3 | 0x2e | 0x36 | 0x3e | 0x26 | 0x64 | 0x65 | 0x40..=0x4f => {}
            0xee => return Some(1),
            0xef => return Some(if word { 2 } else { 4 }),
            _ => return None,
        }
    }
    None
}

/// Whether the instruction's only memory accesses are to the stack: `push`/`pop` of a register
/// or an immediate, `call rel32`, `ret`, `leave`, `pushf`/`popf` (after REX or operand-size
/// prefixes). Their memory callbacks are not registered: they cannot reach a BAR or a response.
pub fn stack_only(bytes: &[u8]) -> bool {
    let op = bytes.iter().copied().find(|b| !matches!(b, 0x66 | 0x40..=0x4f));
    matches!(op, Some(0x50..=0x5f | 0x68 | 0x6a | 0x9c | 0x9d | 0xc2 | 0xc3 | 0xc9 | 0xe8))
}

extern "C" fn on_vcpu_init(_vcpu: c_uint, _userdata: *mut c_void) {
    let Some(p) = PLUGIN.get() else { return };
    p.registers.get_or_init(|| match p.api.registers(&["rax", "rdx"]) {
        Ok(r) => Some((r[0], r[1])),
        Err(why) => {
            p.api.outs(&format!(
                "bnxt-qemu-trace: {why}; configuration writes through ports 0xcf8/0xcfc are not followed (give bar= arguments)\n"
            ));
            None
        }
    });
}

extern "C" fn on_tb_trans(tb: *mut Tb, _userdata: *mut c_void) {
    let Some(p) = PLUGIN.get() else { return };
    let insns: Vec<*mut Insn> = p.api.insns(tb).collect();
    let watching = p.watching.load(Ordering::SeqCst);
    for insn in insns {
        let (bytes, n) = p.api.insn_bytes(insn);
        let code = p.config.all_code || p.api.insn_vaddr(insn) >= KERNEL_HALF;
        if watching && code && !stack_only(&bytes[..n]) {
            p.api.register_mem(insn, on_mem, std::ptr::null_mut());
        }
        if let Some(size) = out_dx_size(&bytes[..n]) {
            p.api.register_insn_exec(insn, on_out, true, usize::from(size) as *mut c_void);
        }
    }
}

extern "C" fn on_mem(vcpu: c_uint, info: MemInfo, vaddr: u64, _userdata: *mut c_void) {
    let Some(p) = PLUGIN.get() else { return };
    let Some(phys) = p.api.phys(info, vaddr) else { return };
    let hit = p.find(phys);
    let in_ecam = p.config.ecam.is_some_and(|e| phys >= e && phys - e < pci::ECAM_SIZE);
    if hit.is_none() && !in_ecam {
        return;
    }
    let (size, store, value) = p.api.access(info);
    p.mem(vcpu, hit, phys, size, store, value);
}

extern "C" fn on_out(_vcpu: c_uint, userdata: *mut c_void) {
    if let Some(p) = PLUGIN.get() {
        p.out(userdata as usize as u8);
    }
}

extern "C" fn on_reset(_unused: *mut c_void) {
    if let Some(p) = PLUGIN.get() {
        p.register();
    }
}

extern "C" fn on_exit(_userdata: *mut c_void) {
    if let Some(p) = PLUGIN.get() {
        p.exit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_instructions_are_recognised_with_their_size() {
        assert_eq!(out_dx_size(&[0xef]), Some(4));
        assert_eq!(out_dx_size(&[0x66, 0xef]), Some(2));
        assert_eq!(out_dx_size(&[0xee]), Some(1));
        assert_eq!(out_dx_size(&[0xed]), None, "in eax, dx");
        assert_eq!(out_dx_size(&[0xe7, 0x80]), None, "out imm8 cannot reach 0xcf8");
        assert_eq!(out_dx_size(&[0x89, 0xef]), None, "mov edi, ebp");
    }

    #[test]
    fn only_stack_pushes_pops_calls_and_returns_are_left_out() {
        assert!(stack_only(&[0x41, 0x57]), "push r15");
        assert!(stack_only(&[0xe8, 0, 0, 0, 0]), "call rel32");
        assert!(stack_only(&[0xc3]), "ret");
        assert!(!stack_only(&[0xff, 0x35, 0, 0, 0, 0]), "push [rip+x] reads memory");
        assert!(!stack_only(&[0x8b, 0x07]), "mov eax, [rdi]");
        assert!(!stack_only(&[0x48, 0x89, 0x06]), "mov [rsi], rax");
    }
}
