//! A small hand-written driver for the model's tests: maps host memory, writes HWRM requests into
//! the BAR0 window (or a short command naming them), rings the trigger, lets virtual time pass
//! and reads the response back from memory.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::hwrm::Request;
use bnxt_hsi::hwrm::layouts::{HwrmCfaL2FilterAllocInput, HwrmFuncCfgInput, HwrmShortInput, HwrmVnicAllocInput};
use bnxt_model::config_space::{COMMAND, COMMAND_MASTER, COMMAND_MEMORY};
use bnxt_model::faults::FaultPlan;
use bnxt_model::host_memory::{DmaBacking, HeapBacking, HostMemory, Iommu};
use bnxt_model_host::world::{World, WorldConfig};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Bus address of the memory every NIC gets.
pub const BASE: u64 = 0x1_0000_0000;
/// Bytes of memory mapped per NIC.
pub const MEM_LEN: usize = 16 << 20;
/// Where requests for short commands go.
pub const REQ: u64 = BASE;
/// Where responses go.
pub const RESP: u64 = BASE + 0x1000;
/// Free memory for rings, tables and context pages.
pub const SCRATCH: u64 = BASE + 0x10000;
/// How long the rig waits for a response before giving up (bnxt_en's longest timeout).
pub const TIMEOUT: Duration = Duration::from_secs(40);

/// A response: its error code and bytes.
#[derive(Debug, Clone)]
pub struct Answer {
    /// `error_code`.
    pub code: u16,
    /// Every byte up to `resp_len`.
    pub bytes: Vec<u8>,
}

impl Answer {
    /// The response as layout `T` (zero-extended).
    pub fn as_<T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(&self) -> T {
        let mut buf = vec![0u8; size_of::<T>()];
        let n = self.bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        T::read_from_bytes(&buf).unwrap()
    }

    /// `cmd_err` of an `hwrm_err_output`.
    pub fn cmd_err(&self) -> u8 {
        self.bytes[14]
    }
}

/// A world plus the host side of its memory.
#[derive(Clone)]
pub struct Rig {
    pub world: World,
    /// The same memory as the NICs see it, mapped on the host side for the test to read/write.
    pub host: Vec<Iommu>,
    pub seq: u16,
}

impl Rig {
    /// `nics` NICs, memory mapped for each, memory space and bus mastering on.
    pub fn new(nics: usize) -> Rig {
        Rig::with(nics, 1, FaultPlan::default())
    }

    /// As [`Rig::new`] with a seed and a fault plan.
    pub fn with(nics: usize, seed: u64, faults: FaultPlan) -> Rig {
        Rig::with_config(WorldConfig { nics, seed, faults, ..WorldConfig::default() })
    }

    /// As [`Rig::new`] with a whole world configuration (firmware options, say).
    pub fn with_config(config: WorldConfig) -> Rig {
        Rig::with_memory(config, &mut || Arc::new(HeapBacking::new(MEM_LEN)))
    }

    /// As [`Rig::with_config`], each NIC's [`MEM_LEN`] bytes of memory made by `memory`.
    pub fn with_memory(config: WorldConfig, memory: &mut dyn FnMut() -> Arc<dyn DmaBacking>) -> Rig {
        let nics = config.nics;
        let mut world = World::new(config);
        let mut host = Vec::new();
        for nic in 0..nics {
            let mem = memory();
            assert_eq!(mem.len(), MEM_LEN, "a NIC's memory is MEM_LEN bytes");
            world.map_dma(nic, BASE, mem.clone()).unwrap();
            let mut h = Iommu::new();
            h.map(BASE, mem, 0, MEM_LEN as u64).unwrap();
            host.push(h);
            world.config_write(nic, COMMAND, &(COMMAND_MEMORY | COMMAND_MASTER).to_le_bytes());
        }
        let mut rig = Rig { world, host, seq: 0 };
        rig.world.take_events();
        rig
    }

    /// Write `bytes` at `addr` of NIC `nic`'s memory.
    pub fn poke(&self, nic: usize, addr: u64, bytes: &[u8]) {
        self.host[nic].view(true).write(addr, bytes).unwrap();
    }

    /// Read `len` bytes at `addr` of NIC `nic`'s memory.
    pub fn peek(&self, nic: usize, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.host[nic].view(true).read(addr, &mut out).unwrap();
        out
    }

    /// Write little-endian u64 entries at `addr`.
    pub fn poke_u64s(&self, nic: usize, addr: u64, entries: &[u64]) {
        let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_le_bytes()).collect();
        self.poke(nic, addr, &bytes);
    }

    /// Fill in the common header of request `bytes` (`req_type` already set): the next `seq_id`,
    /// no completion ring, HWRM target, response at [`RESP`].
    pub fn stamp(&mut self, bytes: &mut [u8]) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        bytes[2..4].copy_from_slice(&0xffffu16.to_le_bytes());
        bytes[4..6].copy_from_slice(&self.seq.to_le_bytes());
        bytes[6..8].copy_from_slice(&0xffffu16.to_le_bytes());
        bytes[8..16].copy_from_slice(&RESP.to_le_bytes());
        self.seq
    }

    /// Clear the response area, write `bytes` into the window (zero-filled to 128 bytes, as
    /// bnxt_en does) and ring the trigger.
    pub fn submit_direct(&mut self, nic: usize, bytes: &[u8]) {
        self.poke(nic, RESP, &[0; 1024]);
        let mut window = [0u8; 128];
        window[..bytes.len()].copy_from_slice(bytes);
        for (i, dw) in window.chunks(4).enumerate() {
            self.world.bar_write(nic, 0, 4 * i as u64, dw);
        }
        self.world.bar_write(nic, 0, 0x100, &1u32.to_le_bytes());
    }

    /// Clear the response area, put `bytes` at [`REQ`], write a short input naming `size` bytes
    /// there with `signature`, and ring the trigger.
    pub fn submit_short(&mut self, nic: usize, bytes: &[u8], size: u16, signature: u16) {
        self.poke(nic, RESP, &[0; 1024]);
        self.poke(nic, REQ, bytes);
        let mut short = HwrmShortInput::new_zeroed();
        short.req_type = u16::from_le_bytes([bytes[0], bytes[1]]).into();
        short.signature = signature.into();
        short.size = size.into();
        short.req_addr = REQ.into();
        for (i, dw) in short.as_bytes().chunks(4).enumerate() {
            self.world.bar_write(nic, 0, 4 * i as u64, dw);
        }
        self.world.bar_write(nic, 0, 0x100, &1u32.to_le_bytes());
    }

    /// The response at [`RESP`] if it is complete (resp_len set, seq_id matching, valid byte
    /// set).
    pub fn response(&self, nic: usize, seq: u16) -> Option<Answer> {
        let hdr = self.peek(nic, RESP, 8);
        let len = u16::from_le_bytes([hdr[6], hdr[7]]) as usize;
        let rseq = u16::from_le_bytes([hdr[4], hdr[5]]);
        if len == 0 || rseq != seq {
            return None;
        }
        let bytes = self.peek(nic, RESP, len);
        if bytes[len - 1] != 1 {
            return None;
        }
        Some(Answer { code: u16::from_le_bytes([bytes[0], bytes[1]]), bytes })
    }

    /// Poll for the response to `seq` as bnxt_en does, advancing virtual time, up to `timeout`.
    pub fn wait(&mut self, nic: usize, seq: u16, timeout: Duration) -> Option<Answer> {
        let deadline = self.world.now() + timeout;
        loop {
            if let Some(a) = self.response(nic, seq) {
                return Some(a);
            }
            if self.world.now() >= deadline {
                return None;
            }
            // Jump to the next work if there is any before the deadline, else to the deadline.
            let now = self.world.now();
            let step = match self.world.next_deadline() {
                Some(t) if t > now && t <= deadline => t - now,
                _ => deadline - now,
            };
            self.world.advance(step);
        }
    }

    /// Send request `req` (header stamped here) directly and wait for the answer.
    pub fn call_raw(&mut self, nic: usize, mut bytes: Vec<u8>) -> Answer {
        let seq = self.stamp(&mut bytes);
        self.submit_direct(nic, &bytes[..bytes.len().min(128)]);
        self.wait(nic, seq, TIMEOUT).expect("the firmware answers")
    }

    /// Send `req` (direct if it fits the window, short otherwise) and wait for the answer.
    pub fn call<T: Request>(&mut self, nic: usize, req: T) -> Answer {
        let mut bytes = req.as_bytes().to_vec();
        bytes[0..2].copy_from_slice(&T::REQ_TYPE.to_le_bytes());
        if bytes.len() <= 128 {
            self.call_raw(nic, bytes)
        } else {
            let seq = self.stamp(&mut bytes);
            let size = bytes.len() as u16;
            self.submit_short(nic, &bytes, size, 0x4321);
            self.wait(nic, seq, TIMEOUT).expect("the firmware answers")
        }
    }

    /// Send `req` and expect success; the typed response.
    pub fn ok<T: Request>(&mut self, nic: usize, req: T) -> T::Response {
        let a = self.call(nic, req);
        assert_eq!(a.code, 0, "{} refused with 0x{:x}: {:?}", T::NAME, a.code, self.last_reason());
        a.as_::<T::Response>()
    }

    /// The machine's whole state but its memory, as text to compare: the clock, the sequence
    /// number, every NIC's device state (firmware, RoCE engine, L2 engine, registers, ...) and
    /// the events not yet taken (which this takes).
    pub fn describe(&mut self) -> String {
        use std::fmt::Write;
        let mut s = format!("now {:?}, seq {}\n", self.world.now(), self.seq);
        for nic in 0..self.world.nic_count() {
            let _ = writeln!(s, "NIC {nic}: {:?}", self.world.device(nic));
        }
        let _ = write!(s, "events: {:?}", self.world.take_events());
        s
    }

    /// The reason the last refused response carried, from the event log (drains it).
    pub fn last_reason(&mut self) -> Option<String> {
        self.world.take_events().into_iter().rev().find_map(|e| match e.kind {
            bnxt_model::events::EventKind::HwrmResponse { reason, .. } if !reason.is_empty() => Some(reason),
            _ => None,
        })
    }
}

/// A zeroed request layout.
pub fn req<T: FromZeros>() -> T {
    T::new_zeroed()
}

/// Hands out 4-KiB pages of a NIC's scratch memory, upward.
#[derive(Clone)]
pub struct Pages {
    next: u64,
}

impl Default for Pages {
    fn default() -> Pages {
        Pages { next: SCRATCH }
    }
}

impl Pages {
    /// `n` contiguous pages.
    pub fn take(&mut self, n: u64) -> u64 {
        let at = self.next;
        self.next += n * 4096;
        assert!(self.next <= BASE + MEM_LEN as u64, "test ran out of scratch memory");
        at
    }
}

/// Build page tables of `level` (0, 1 or 2) over fresh 4-KiB pages holding `bytes` bytes, as
/// bnxt_en does (PTEs = page | valid); the root address.
pub fn page_tables(rig: &Rig, nic: usize, pages: &mut Pages, bytes: u64, level: u8) -> u64 {
    let n = bytes.div_ceil(4096);
    let data: Vec<u64> = (0..n).map(|_| pages.take(1)).collect();
    match level {
        0 => {
            assert_eq!(n, 1);
            data[0]
        }
        1 => {
            let table = pages.take(1);
            rig.poke_u64s(nic, table, &data.iter().map(|a| a | 1).collect::<Vec<_>>());
            table
        }
        _ => {
            let root = pages.take(1);
            let mut dirs = Vec::new();
            for chunk in data.chunks(512) {
                let table = pages.take(1);
                rig.poke_u64s(nic, table, &chunk.iter().map(|a| a | 1).collect::<Vec<_>>());
                dirs.push(table | 1);
            }
            rig.poke_u64s(nic, root, &dirs);
            root
        }
    }
}

/// FUNC_CFG reserving, for this function (fid 0xffff), `tx`, `rx` and `cp` TX, RX and completion
/// rings, `msix` vectors, `stat` statistics contexts, `vnic` VNICs and `rss` RSS contexts, as
/// bnxt_en's `__bnxt_reserve_rings` asks.
pub fn reserve_rings(tx: u16, rx: u16, cp: u16, msix: u16, stat: u16, vnic: u16, rss: u16) -> HwrmFuncCfgInput {
    type F = HwrmFuncCfgInput;
    let mut c: F = req();
    c.fid = 0xffff.into();
    c.enables = (F::ENABLES_NUM_TX_RINGS
        | F::ENABLES_NUM_RX_RINGS
        | F::ENABLES_NUM_CMPL_RINGS
        | F::ENABLES_NUM_MSIX
        | F::ENABLES_NUM_STAT_CTXS
        | F::ENABLES_NUM_VNICS
        | F::ENABLES_NUM_RSSCOS_CTXS)
        .into();
    (c.num_tx_rings, c.num_rx_rings, c.num_cmpl_rings, c.num_msix) = (tx.into(), rx.into(), cp.into(), msix.into());
    (c.num_stat_ctxs, c.num_vnics, c.num_rsscos_ctxs) = (stat.into(), vnic.into(), rss.into());
    c
}

/// A reservation that covers what the tests allocate (FUNC_CFG; the firmware refuses rings,
/// statistics contexts, VNICs and RSS contexts past it).
pub fn roomy_reservation() -> HwrmFuncCfgInput {
    reserve_rings(8, 8, 16, 32, 16, 4, 4)
}

/// The default VNIC and an L2 filter steering `mac` to it, with RoCE traffic (as bnxt_en gives a
/// RoCE function before bnxt_re's traffic flows): RoCE frames reach the NIC's RoCE engine only
/// through such a filter. The VNIC's id and the filter's.
pub fn roce_filter(rig: &mut Rig, nic: usize, mac: [u8; 6]) -> (u32, u64) {
    type F = HwrmCfaL2FilterAllocInput;
    let mut v: HwrmVnicAllocInput = req();
    v.flags = HwrmVnicAllocInput::FLAGS_DEFAULT.into();
    let vnic = rig.ok(nic, v).vnic_id.get();
    let mut f: F = req();
    f.flags = (F::FLAGS_PATH_RX | F::FLAGS_OUTERMOST | F::FLAGS_TRAFFIC_ROCE).into();
    f.enables = (F::ENABLES_L2_ADDR | F::ENABLES_L2_ADDR_MASK | F::ENABLES_DST_ID).into();
    f.l2_addr = mac;
    f.l2_addr_mask = [0xff; 6];
    f.dst_id = (vnic as u16).into();
    (vnic, rig.ok(nic, f).l2_filter_id.get())
}
