//! The fake function's RoCE command channel: it reads commands from the CMDQ the driver
//! announced at BAR0 0x600 when BAR0 0x700 is written, asks a closure for each answer, and
//! writes the answer to the CREQ ring (found through the ring table of the NQ-type ring whose
//! id `cmdq_init` names) with the valid bit of the producer's pass.

use std::collections::HashMap;

use bnxt_hsi::hwrm::layouts::{HwrmRingAllocInput, HwrmRingAllocOutput};
use bnxt_hsi::roce::layouts::{CmdqInit, CreqQueryFuncRespSb as Sb};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::FakeState;

/// One command as the fake firmware read it.
#[derive(Debug, Clone)]
pub(crate) struct RoceCmd {
    /// `cmdq_base.opcode`.
    pub opcode: u8,
    /// The whole command (its slots).
    pub bytes: Vec<u8>,
}

impl RoceCmd {
    /// The command as layout `T` (zero-extended).
    pub(crate) fn parse<T: FromBytes>(&self) -> T {
        super::parse(&self.bytes)
    }
}

/// What the fake firmware does with a command.
pub(crate) enum RoceReply {
    /// Answer with this status and xid, writing `side` to the command's side buffer.
    Answer {
        /// `creq_qp_event.status`.
        status: u8,
        /// `xid` (the id of what the command made).
        xid: u32,
        /// Bytes for the side buffer.
        side: Vec<u8>,
    },
    /// Never answer.
    Never,
}

impl RoceReply {
    /// Success with `xid`.
    pub(crate) fn ok(xid: u32) -> RoceReply {
        RoceReply::Answer { status: 0, xid, side: Vec::new() }
    }
}

pub(crate) type RoceFirmware = Box<dyn FnMut(&RoceCmd) -> RoceReply + Send>;

/// The channel's state.
pub(crate) struct FakeRcfw {
    pub firmware: RoceFirmware,
    pub mailbox: [u8; 16],
    pub commands: Vec<RoceCmd>,
    pub doorbells: Vec<(u8, u64, u64)>,
    rings: HashMap<u16, (u64, u8)>,
    cons: u32,
    creq_prod: u32,
}

/// QUERY_FUNC's side buffer as a P7 with host MSN tables and unified MR registration answers.
pub(crate) fn query_func_sb() -> Sb {
    let mut sb = Sb::new_zeroed();
    sb.max_mr_size = (1u64 << 40).into();
    sb.max_qp = 65_536.into();
    sb.max_qp_wr = 65_535.into();
    sb.dev_cap_flags = (Sb::MR_REGISTER_ALLOC | Sb::HW_REQUESTER_RETX_ENABLED).into();
    sb.dev_cap_ext_flags_2 = Sb::REQ_RETRANSMISSION_SUPPORT_HOST_MSN_TABLE.into();
    sb.max_cq = 131_072.into();
    sb.max_cqe = (1 << 20).into();
    sb.max_sge = 6;
    sb.max_qp_rd_atom = 16;
    sb.max_qp_init_rd_atom = 16;
    sb.max_mr = 262_144.into();
    sb.max_gid = 128.into();
    sb
}

/// A firmware that answers every command: QUERY_FUNC with [`query_func_sb`], CREATE_QP with
/// QPNs from 0x100, CREATE_CQ with ids from 1, REGISTER_MR with keys from 0x1000, ADD_GID with
/// index 0, anything else with xid 0.
pub(crate) fn standard() -> impl FnMut(&RoceCmd) -> RoceReply + Send + 'static {
    let mut next: HashMap<u8, u32> = HashMap::new();
    move |cmd| {
        let mut id = |op: u8, first: u32| {
            let n = next.entry(op).or_insert(first);
            *n += 1;
            *n - 1
        };
        match cmd.opcode {
            0x83 => RoceReply::Answer { status: 0, xid: 0, side: query_func_sb().as_bytes().to_vec() },
            0x01 => RoceReply::ok(id(0x01, 0x100)),
            0x09 => RoceReply::ok(id(0x09, 1)),
            0x0f => RoceReply::ok(id(0x0f, 0x1000)),
            _ => RoceReply::ok(0),
        }
    }
}

impl FakeRcfw {
    pub(crate) fn new(firmware: RoceFirmware) -> FakeRcfw {
        FakeRcfw {
            firmware,
            mailbox: [0; 16],
            commands: Vec::new(),
            doorbells: Vec::new(),
            rings: HashMap::new(),
            cons: 0,
            creq_prod: 0,
        }
    }

    /// Note the table of every ring HWRM_RING_ALLOC makes.
    pub(crate) fn snoop_hwrm(&mut self, request: &[u8], response: &[u8]) {
        if super::req_type(request) != 0x50 {
            return;
        }
        let req: HwrmRingAllocInput = super::parse(request);
        let resp: HwrmRingAllocOutput = super::parse(response);
        if u16::from_le_bytes([response[0], response[1]]) == 0 {
            self.rings.insert(resp.ring_id.get(), (req.page_tbl_addr.get(), req.page_tbl_depth));
        }
    }

    /// Forget the channel (a function-level reset).
    pub(crate) fn reset(&mut self) {
        self.mailbox = [0; 16];
        self.rings.clear();
        self.cons = 0;
        self.creq_prod = 0;
    }

    /// Take every command between the consumer and the producer the driver wrote.
    pub(crate) fn trigger(&mut self, mem: &mut FakeState) {
        let init = CmdqInit::read_from_bytes(&self.mailbox).unwrap();
        let prod = init.prod_idx.get() & 0xffff;
        let slots = u32::from(init.cmdq_size_cmdq_lvl.get() >> 2);
        let base = init.cmdq_pbl.get();
        while self.cons != prod {
            let at = |i: u32| base + u64::from(i % slots) * 16;
            let head = mem.read_dma(at(self.cons), 16);
            let n = u32::from(head[1].max(1));
            let mut bytes = Vec::new();
            for i in 0..n {
                bytes.extend(mem.read_dma(at(self.cons + i), 16));
            }
            self.cons = (self.cons + n) & 0xffff;
            let cmd = RoceCmd { opcode: bytes[0], bytes };
            self.commands.push(cmd.clone());
            let RoceReply::Answer { status, xid, side } = (self.firmware)(&cmd) else { continue };
            let resp_addr = u64::from_le_bytes(cmd.bytes[8..16].try_into().unwrap());
            if !side.is_empty() && resp_addr != 0 {
                mem.write_dma(resp_addr, &side);
            }
            let mut entry = [0u8; 16];
            entry[0] = 0x38;
            entry[1] = status;
            entry[2..4].copy_from_slice(&cmd.bytes[4..6]);
            entry[4..8].copy_from_slice(&xid.to_le_bytes());
            let epoch = (self.creq_prod / 65_536) % 2 == 1;
            entry[8] = u8::from(!epoch);
            entry[9] = cmd.opcode;
            let addr = self.creq_addr(mem, init.creq_ring_id.get(), self.creq_prod % 65_536);
            mem.write_dma(addr, &entry);
            self.creq_prod += 1;
        }
    }

    /// Bus address of CREQ entry `i`, through its level-1 ring table.
    fn creq_addr(&self, mem: &FakeState, ring: u16, i: u32) -> u64 {
        let (table, depth) = self.rings[&ring];
        assert_eq!(depth, 1, "the CREQ has a one-level table");
        let byte = u64::from(i) * 16;
        let pte = u64::from_le_bytes(mem.read_dma(table + (byte / 4096) * 8, 8).try_into().unwrap());
        (pte & !0xfff) + byte % 4096
    }
}

impl Default for FakeRcfw {
    fn default() -> FakeRcfw {
        FakeRcfw::new(Box::new(standard()))
    }
}
