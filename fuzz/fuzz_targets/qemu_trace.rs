//! The QEMU plugin's decoder (crate bnxt-qemu-trace) against a hostile guest: sequences of
//! configuration writes (legacy ports and ECAM), loads and stores of every size into the traced
//! function's BARs, and loads of the pending HWRM response, with guest memory whose bytes the
//! input gives. The plugin runs inside QEMU, so a panic there ends the guest.
//! Invariants: no panic; the decoder never asks for more guest memory than one request or
//! response can hold; the transcript it writes (the header and one line per event, as the
//! plugin writes them) parses as a bnxt-rig transcript, prints back to itself and differs from
//! itself in nothing, as `bnxt-rig diff` compares it.
#![no_main]

use std::time::Duration;

use arbitrary::Arbitrary;
use bnxt_qemu_trace::args::Config;
use bnxt_qemu_trace::hwrm::GuestMemory;
use bnxt_qemu_trace::nic::{BARS, Nic};
use bnxt_qemu_trace::output;
use bnxt_qemu_trace::pci::{self, PortDecoder};
use bnxt_rig::transcript::Transcript;
use bnxt_rig::transcript::diff::{DiffOptions, diff};
use libfuzzer_sys::fuzz_target;

/// The longest read the decoder may ask for: a short-form request's header or a response
/// (`HWRM_MAX_RESP_LEN` is the larger).
const MAX_READ: usize = bnxt_hsi::hwrm::MAX_RESP_LEN;

#[derive(Debug, Arbitrary)]
enum Op {
    /// An `out` to the legacy configuration ports (0xcf8..0xcff, or any port).
    Port { port: u8, size: u8, value: u32 },
    /// A store into the ECAM window.
    Ecam { offset: u32, size: u8, value: u64 },
    /// A load or store into one of the function's BARs, at an offset inside it.
    Access { bar: u8, offset: u32, size: u8, store: bool, value: u64 },
    /// A load inside the pending response's range.
    ResponseLoad,
}

/// Guest memory: the input's bytes repeated over the whole address space, or nothing there.
struct Ram<'a> {
    bytes: &'a [u8],
    asked: usize,
}

impl GuestMemory for Ram<'_> {
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
        assert!(len <= MAX_READ, "the decoder asked for {len} bytes of guest memory");
        self.asked += len;
        if self.bytes.is_empty() || addr.is_multiple_of(4099) {
            return None;
        }
        let start = (addr % self.bytes.len() as u64) as usize;
        Some((0..len).map(|i| self.bytes[(start + i) % self.bytes.len()]).collect())
    }
}

#[derive(Debug, Arbitrary)]
struct Input {
    memory: Vec<u8>,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let config = Config::parse(["out=/dev/null", "nic=00:05.0", "bar=00:05.0/0/0xfe000000"]).expect("good arguments");
    let bdf = config.nics[0].bdf;
    let mut nic = Nic::new(config.nics[0].bars, config.sizes, config.msix);
    let mut ports = PortDecoder::default();
    let mut mem = Ram { bytes: &input.memory, asked: 0 };
    let mut text = output::header(&[("target", "guest".to_string()), ("nic", "drv0 at guest 00:05.0".to_string())]);
    let mut lines = 0usize;
    for (i, op) in input.ops.iter().take(256).enumerate() {
        let at = Duration::from_micros(i as u64);
        let size = |s: u8| [1u8, 2, 4, 8][usize::from(s % 4)];
        let events = match *op {
            Op::Port { port, size: s, value } => {
                let port = if port < 8 { pci::CONFIG_ADDRESS + u16::from(port) } else { u16::from(port) << 4 };
                match ports.out(port, size(s).min(4), value) {
                    Some(w) if w.bdf == bdf => nic.config_write(&w),
                    _ => Vec::new(),
                }
            }
            Op::Ecam { offset, size: s, value } => {
                let offset = u64::from(offset) % pci::ECAM_SIZE;
                match pci::ecam_write(offset, size(s), value) {
                    Some(w) if w.bdf == bdf => nic.config_write(&w),
                    _ => Vec::new(),
                }
            }
            Op::Access { bar, offset, size: s, store, value } => {
                let bar = BARS[usize::from(bar) % BARS.len()];
                match nic.bar_range(bar) {
                    Some((start, end)) if end > start => {
                        let offset = u64::from(offset) % (end - start);
                        nic.access(bar, offset, size(s), store, value, &mut mem).into_iter().collect()
                    }
                    _ => Vec::new(),
                }
            }
            Op::ResponseLoad => nic.ram_load(&mut mem).into_iter().collect(),
        };
        for e in events {
            text.push_str(&output::line(at, 0, &e.to_string()));
            text.push('\n');
            lines += 1;
        }
    }
    let t = Transcript::parse(&text)
        .unwrap_or_else(|e| panic!("the plugin wrote a transcript bnxt-rig cannot read: {e}\n{text}"));
    assert_eq!(t.to_text(), Transcript::parse(&t.to_text()).expect("a printed transcript parses").to_text());
    assert!(t.lines.len() <= lines, "no more lines than events");
    let d = diff(&t, &t, DiffOptions { all: true, exact: false, context: 2, by_source: true });
    assert!(d.same(), "a trace differs from itself: {}", d.text);
});
