//! The command queue (CMDQ) side of the RoCE firmware channel (hardware-map §4.1-4.2; bnxt_re
//! qplib_rcfw.c `bnxt_qplib_start_rcfw`, `__send_message`).
//!
//! The driver writes `cmdq_init` (16 bytes: CMDQ address, size in 16-byte slots and page-table
//! level, the CREQ's ring id, a producer of 0) to BAR0 0x600-0x60f, then for every command copies
//! it into consecutive CMDQ slots (wrapping), writes its free-running producer (`prod & 0xffff`)
//! to 0x60c and 1 to the trigger at 0x700. The first producer write after starting the channel
//! carries bit 31 (`FIRMWARE_FIRST_FLAG`): the firmware then (re)reads `cmdq_init` and resets its
//! consumer to 0. On each trigger the firmware reads every command between its consumer and the
//! producer (`cmd_size` slots each, from the command's own header) by DMA. A command may come
//! TLV-encapsulated (its first 16 bits `CMD_DISCR_TLV_ENCAP`): a 16-byte `roce_tlv` header giving
//! the whole size in slots, then the command itself, then extension TLVs; the firmware answers
//! it with the inner command's opcode and cookie.
//!
//! The model takes the channel only if `cmdq_init` is sound: a power-of-two size up to
//! [`MAX_CMDQ_SLOTS`] (the 16-bit producer wraps cleanly only then), level 0 (one contiguous
//! buffer, as bnxt_re allocates it) or a level-1/2 page table of 4-KiB pages, every byte
//! reachable, and a CREQ ring id that HWRM RING_ALLOC made as an NQ-type ring. Anything else is
//! refused loudly: there is no CREQ to answer on.
//!
//! The channel also holds the NIC's injected command faults ([`CommandFaults`]): which of the
//! commands it takes are swallowed, refused or answered late. They outlive a function reset, so
//! a fault's `nth` counts commands since the model was made.

use bnxt_hsi::hwrm::layouts::Tlv;
use bnxt_hsi::roce::layouts::{CmdqBase, CmdqInit};
use bnxt_hsi::roce::rcfw::{
    CMD_DISCR_TLV_ENCAP, CMDQ_INIT_SIZE_SHIFT, CMDQ_PROD_MASK, CMDQE_BYTES, FIRMWARE_FIRST_FLAG, TLV_HEADER_BYTES,
    TLV_TOTAL_SIZE_BYTE,
};
use zerocopy::FromBytes;

use crate::firmware::state::{FwState, RingType};
use crate::host_memory::HostMemory;

use super::caps::{MAX_CMD_SLOTS, MAX_CMDQ_SLOTS};
use super::cmd::faults::CommandFaults;
use super::pages::{PageList, PblSpec};

/// Why the firmware could not take the channel or a trigger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// A trigger came before any producer write with `FIRMWARE_FIRST_FLAG`.
    #[error("CMDQ trigger before the channel was started (no producer write with bit 31 since reset)")]
    NotStarted,
    /// `cmdq_init` names an unusable CMDQ or CREQ.
    #[error("cmdq_init refused: {0}")]
    BadInit(String),
    /// The producer runs further ahead of the consumer than the queue holds.
    #[error("CMDQ producer {prod} is {ahead} slots ahead of the consumer {cons}; the queue holds {depth}")]
    ProducerAhead {
        /// Producer written.
        prod: u16,
        /// Firmware's consumer.
        cons: u16,
        /// Distance.
        ahead: u32,
        /// Queue slots.
        depth: u32,
    },
    /// The CMDQ could not be read.
    #[error("CMDQ slot {slot} could not be read: {error}")]
    Unreadable {
        /// Slot index.
        slot: u32,
        /// The refusal.
        error: String,
    },
}

/// The CMDQ as `cmdq_init` described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdqConfig {
    /// Its memory.
    pub mem: PageList,
    /// Slots.
    pub depth: u32,
    /// The CREQ's ring id.
    pub creq_ring: u16,
}

/// A command read from the CMDQ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCommand {
    /// `opcode`.
    pub opcode: u8,
    /// `cookie`, echoed in the completion.
    pub cookie: u16,
    /// Slots it occupied.
    pub slots: u8,
    /// Every byte of it (`slots` × 16; without the TLV header when encapsulated), or why it
    /// could not be taken whole.
    pub bytes: Result<Vec<u8>, String>,
    /// The `tlv` part of its `roce_tlv` header (qplib_tlv.h) when it came TLV-encapsulated: the
    /// command's length in bytes and whether extension TLVs follow it.
    pub tlv: Option<Tlv>,
}

/// The firmware's side of the CMDQ.
#[derive(Debug, Default, Clone)]
pub struct Channel {
    config: Option<CmdqConfig>,
    cons: u16,
    /// The NIC's injected command faults, with their occurrence counts (kept across resets).
    pub(super) faults: CommandFaults,
}

impl Channel {
    /// Forget the channel (function reset); the fault plan and its counts stay.
    pub fn reset(&mut self) {
        let faults = std::mem::take(&mut self.faults);
        *self = Channel { faults, ..Channel::default() };
    }

    /// How many commands with `opcode` the firmware took since the model was made.
    pub fn commands_seen(&self, opcode: u8) -> u32 {
        self.faults.seen(opcode)
    }

    /// The CMDQ, once started.
    pub fn config(&self) -> Option<&CmdqConfig> {
        self.config.as_ref()
    }

    /// The CREQ's ring id, once started.
    pub fn creq_ring(&self) -> Option<u16> {
        self.config.as_ref().map(|c| c.creq_ring)
    }

    /// The firmware's consumer (free-running, 16 bits).
    pub fn consumer(&self) -> u16 {
        self.cons
    }

    /// A trigger with the mailbox holding `mailbox` (0x600-0x60f; the producer is its last
    /// dword): every command between the consumer and the producer, in order.
    pub fn trigger(
        &mut self,
        mailbox: &[u8; 16],
        mem: &dyn HostMemory,
        fw: &FwState,
    ) -> Result<Vec<RawCommand>, ChannelError> {
        let prod_reg = u32::from_le_bytes([mailbox[12], mailbox[13], mailbox[14], mailbox[15]]);
        if prod_reg & FIRMWARE_FIRST_FLAG != 0 {
            self.config = None;
            self.cons = 0;
            self.config = Some(start(mailbox, mem, fw)?);
        }
        let Some(cfg) = &self.config else { return Err(ChannelError::NotStarted) };
        let prod = (prod_reg & CMDQ_PROD_MASK) as u16;
        let ahead = u32::from(prod.wrapping_sub(self.cons));
        if ahead > cfg.depth {
            return Err(ChannelError::ProducerAhead { prod, cons: self.cons, ahead, depth: cfg.depth });
        }
        let mut out = Vec::new();
        let mut left = ahead;
        while left > 0 {
            let slot = u32::from(self.cons) % cfg.depth;
            let mut head = [0u8; CMDQE_BYTES];
            read_slot(cfg, mem, slot, &mut head)?;
            let encapsulated = u16::from_le_bytes([head[0], head[1]]) == CMD_DISCR_TLV_ENCAP;
            let size = if encapsulated {
                head[TLV_TOTAL_SIZE_BYTE]
            } else {
                CmdqBase::ref_from_bytes(&head).expect("16 bytes").cmd_size
            };
            let (slots, bytes) = if size == 0 {
                (1, Err("cmd_size 0".to_string()))
            } else if encapsulated && size < 2 {
                (1, Err(format!("TLV total_size {size} slot leaves no room for the command it carries")))
            } else if size > MAX_CMD_SLOTS {
                let n = left.min(u32::from(size)) as u8;
                (n, Err(format!("cmd_size {size} slots exceeds the {MAX_CMD_SLOTS} the firmware takes")))
            } else if u32::from(size) > left {
                (left as u8, Err(format!("cmd_size {size} slots, but only {left} were produced")))
            } else {
                let mut bytes = vec![0u8; usize::from(size) * CMDQE_BYTES];
                bytes[..CMDQE_BYTES].copy_from_slice(&head);
                for k in 1..u32::from(size) {
                    let s = (slot + k) % cfg.depth;
                    let at = k as usize * CMDQE_BYTES;
                    let mut b = [0u8; CMDQE_BYTES];
                    read_slot(cfg, mem, s, &mut b)?;
                    bytes[at..at + CMDQE_BYTES].copy_from_slice(&b);
                }
                if encapsulated {
                    bytes.drain(..TLV_HEADER_BYTES);
                }
                (size, Ok(bytes))
            };
            // The opcode and cookie are the inner command's when encapsulated: from the bytes
            // taken, or, for a command refused whole, from its second slot if it was produced
            // (bnxt_re's __get_cmdq_base_cookie reads the inner header whenever the command is
            // longer than the TLV header). Otherwise what the first slot holds.
            let mut inner = [0u8; CMDQE_BYTES];
            let base_bytes: &[u8] = match (&bytes, encapsulated) {
                (Ok(b), true) => &b[..CMDQE_BYTES],
                (Err(_), true) if size >= 2 && left >= 2 => {
                    read_slot(cfg, mem, (slot + 1) % cfg.depth, &mut inner)?;
                    &inner
                }
                _ => &head,
            };
            let base = CmdqBase::ref_from_bytes(base_bytes).expect("16-byte header");
            let tlv = encapsulated.then(|| Tlv::read_from_prefix(&head).expect("16-byte slot").0);
            out.push(RawCommand { opcode: base.opcode, cookie: base.cookie.get(), slots, bytes, tlv });
            self.cons = self.cons.wrapping_add(u16::from(slots));
            left -= u32::from(slots);
        }
        Ok(out)
    }
}

fn read_slot(
    cfg: &CmdqConfig,
    mem: &dyn HostMemory,
    slot: u32,
    out: &mut [u8; CMDQE_BYTES],
) -> Result<(), ChannelError> {
    cfg.mem
        .read(mem, u64::from(slot) * CMDQE_BYTES as u64, out)
        .map_err(|e| ChannelError::Unreadable { slot, error: e.to_string() })
}

/// Check `cmdq_init` and map the CMDQ it names.
fn start(mailbox: &[u8; 16], mem: &dyn HostMemory, fw: &FwState) -> Result<CmdqConfig, ChannelError> {
    let init = CmdqInit::read_from_bytes(mailbox).expect("16-byte cmdq_init");
    let size_lvl = init.cmdq_size_cmdq_lvl.get();
    let depth = u32::from((size_lvl & CmdqInit::CMDQ_SIZE_MASK) >> CMDQ_INIT_SIZE_SHIFT);
    let level = (size_lvl & CmdqInit::CMDQ_LVL_MASK) as u8;
    let bad = |s: String| ChannelError::BadInit(s);
    if depth == 0 || !depth.is_power_of_two() || depth > MAX_CMDQ_SLOTS {
        return Err(bad(format!("CMDQ size {depth} slots is not a power of two in 1..={MAX_CMDQ_SLOTS}")));
    }
    let creq_ring = init.creq_ring_id.get();
    match fw.rings.get(&creq_ring) {
        Some(r) if r.ty == RingType::Nq => {}
        Some(r) => return Err(bad(format!("creq_ring_id {creq_ring} is a {} ring, not an NQ", r.ty.name()))),
        None => return Err(bad(format!("creq_ring_id {creq_ring} is not an allocated ring"))),
    }
    let bytes = u64::from(depth) * CMDQE_BYTES as u64;
    let root = init.cmdq_pbl.get();
    let pages = match level {
        0 => PageList::contiguous(mem, root, bytes),
        1 | 2 => PageList::walk(mem, PblSpec { root, level, page_shift: 12, table_shift: 12 }, bytes),
        l => return Err(bad(format!("CMDQ level {l} is not 0, 1 or 2"))),
    }
    .map_err(|e| bad(format!("CMDQ memory: {e}")))?;
    Ok(CmdqConfig { mem: pages, depth, creq_ring })
}
