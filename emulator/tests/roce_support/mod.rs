//! A small RoCE driver for the model's tests, written from the public interface (bnxt_re's
//! qplib_rcfw.c / qplib_fp.c protocol, roce_hsi.h layouts), not from the model: it configures
//! context memory over HWRM, brings up the command channel (CREQ as an NQ ring, CMDQ, cmdq_init,
//! the first producer write with bit 31), sends commands and reads their completions by the
//! CREQ's valid bit, creates objects, writes WQEs and MSN entries, rings doorbells and polls CQs
//! by their toggle bit.

#![allow(dead_code)]

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::roce::command::Command;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::gid::{gid_for_command, ipv4_mapped_gid, mac_for_command};
use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::msn::{MsnEntry, table_entries};
use bnxt_hsi::roce::rcfw::{CMD_DISCR_TLV_ENCAP, TLV_TYPE_MODIFY_ROCE_CC_GEN1, TLV_TYPE_ROCE_SP_COMMAND};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::common::{Pages, Rig, req, roce_filter, roomy_reservation};

/// BAR2 offset of the kernel doorbell page (FUNC_QCFG legacy_l2_db_size_kb × 1024).
pub const DB: u64 = 0x10000;
/// Context memory the tests configure: QP entries (16 L2 + 4 QP1 + 6 RoCE), CQs (8 L2 + 8 RoCE),
/// MRAV (8 AVs + 24 regions).
pub const QP_ENTRIES: u32 = 26;
/// RoCE QPs the context memory above holds.
pub const ROCE_QPS: u32 = 6;
/// CQ entries.
pub const CQ_ENTRIES: u32 = 16;
/// MRAV entries.
pub const MRAV_ENTRIES: u32 = 32;
/// Regions the context memory above holds.
pub const REGIONS: u32 = 24;

/// CREQ statuses the tests expect (roce_hsi.h `CREQ_QP_EVENT_STATUS_*`).
pub const FAIL: u8 = 1;
/// RESOURCES.
pub const RESOURCES: u8 = 2;
/// NOT_IMPLEMENTED.
pub const NOT_IMPLEMENTED: u8 = 4;
/// INVALID_PARAMETER.
pub const INVALID_PARAMETER: u8 = 5;

/// One NIC with its RoCE function brought up (CREQ of 1024 entries, CMDQ of 256 slots) and
/// initialized.
pub fn up() -> (Rig, Func) {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 1024, 256);
    f.initialize(&mut rig);
    (rig, f)
}

/// A CREQ completion as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creq {
    /// `status`.
    pub status: u8,
    /// `xid` (or size).
    pub xid: u32,
    /// `event` (the opcode).
    pub event: u8,
    /// The whole entry.
    pub bytes: [u8; 16],
}

impl Creq {
    /// The entry `b` as read from the CREQ.
    fn of(b: [u8; 16]) -> Creq {
        Creq { status: b[1], xid: u32::from_le_bytes(b[4..8].try_into().unwrap()), event: b[9], bytes: b }
    }
}

/// An NQ-type ring the test consumes.
#[derive(Debug, Clone, Copy)]
pub struct NqRing {
    /// HWRM ring id.
    pub id: u16,
    /// First data byte (the data pages are contiguous).
    pub base: u64,
    /// Entries.
    pub len: u32,
    /// Consumer.
    pub cons: u32,
    /// Consumer epoch.
    pub epoch: bool,
}

/// A CQ the test polls.
#[derive(Debug, Clone, Copy)]
pub struct TCq {
    /// CQ id.
    pub id: u32,
    /// First CQE byte.
    pub base: u64,
    /// Entries.
    pub size: u32,
    /// Consumer.
    pub cons: u32,
    /// Consumer epoch.
    pub epoch: bool,
    /// Latest NQ toggle.
    pub toggle: u8,
}

/// A QP as the test driver keeps it.
#[derive(Debug, Clone)]
pub struct TQp {
    /// QP number.
    pub id: u32,
    /// Variable WQE mode.
    pub variable: bool,
    /// `sq_size` (WQEs or slots).
    pub sq_size: u32,
    /// SQ slots.
    pub depth: u32,
    /// First SQ byte.
    pub sq_base: u64,
    /// MSN entries.
    pub msn_entries: u32,
    /// Next MSN entry.
    pub msn: u32,
    /// SQ producer (WQE index in static mode, slot in variable mode) and epoch.
    pub sq_prod: u32,
    /// SQ epoch.
    pub sq_epoch: bool,
    /// WQEs posted.
    pub posted: u64,
    /// Next PSN.
    pub psn: u32,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// First RQ byte.
    pub rq_base: u64,
    /// RQ WQEs.
    pub rq_size: u32,
    /// RQ WQE stride in bytes.
    pub rq_stride: u64,
    /// RQ producer.
    pub rq_prod: u32,
    /// RQ epoch.
    pub rq_epoch: bool,
    /// Send CQ.
    pub scq: u32,
    /// Receive CQ.
    pub rcq: u32,
    /// `qp_handle`.
    pub handle: u64,
}

/// One NIC's RoCE side as the test driver holds it.
#[derive(Clone)]
pub struct Func {
    /// NIC index.
    pub nic: usize,
    /// Page allocator of its memory.
    pub pages: Pages,
    /// Statistics context.
    pub stat_ctx: u32,
    /// The CREQ.
    pub creq: NqRing,
    /// CMDQ memory.
    pub cmdq: u64,
    /// CMDQ slots.
    pub cmdq_slots: u32,
    /// Free-running producer.
    pub prod: u32,
    /// Whether the next producer write carries bit 31.
    pub first: bool,
    /// Next cookie.
    pub cookie: u16,
    /// Side-buffer page.
    pub sb: u64,
    /// Asynchronous CREQ entries seen while waiting for completions.
    pub async_events: Vec<Creq>,
    /// The NIC's MAC.
    pub mac: [u8; 6],
    /// The L2 filter steering the MAC to the default VNIC.
    pub filter: u64,
}

/// Contiguous pages holding `bytes` and a level-1 page table naming them: (table, first data
/// byte).
pub fn pbl(rig: &Rig, nic: usize, pages: &mut Pages, bytes: u64) -> (u64, u64) {
    let n = bytes.div_ceil(4096).max(1);
    let base = pages.take(n);
    let table = pages.take(n.div_ceil(512));
    let ptes: Vec<u64> = (0..n).map(|i| (base + i * 4096) | 1).collect();
    rig.poke_u64s(nic, table, &ptes);
    (table, base)
}

/// Store a 64-bit doorbell on the kernel page.
pub fn ring(rig: &mut Rig, nic: usize, db: Doorbell) {
    rig.world.bar_write(nic, 2, DB, &db.encode().to_le_bytes());
}

/// Let time pass until `done` holds, stepping to the next piece of work; panics after `limit`.
pub fn run_until(rig: &mut Rig, limit: Duration, mut done: impl FnMut(&mut Rig) -> bool) {
    let end = rig.world.now() + limit;
    loop {
        if done(rig) {
            return;
        }
        let now = rig.world.now();
        assert!(now < end, "condition not reached within {limit:?}");
        let step = match rig.world.next_deadline() {
            Some(t) if t > now && t <= end => t - now,
            Some(t) if t <= now => Duration::from_nanos(1),
            _ => end - now,
        };
        rig.world.advance(step);
    }
}

/// Configure context memory (QP, SRQ, CQ, MRAV, the last with ALL_DONE) and a statistics
/// context on `nic`; the statistics context id.
pub fn context_memory(rig: &mut Rig, nic: usize, pages: &mut Pages) -> u32 {
    let types: [(u16, u32, u16, u8, [u32; 2]); 4] = [
        (0, QP_ENTRIES, 448, 2, [16, 4]),
        (1, 4, 64, 1, [2, 0]),
        (2, CQ_ENTRIES, 64, 1, [8, 0]),
        (0xe, MRAV_ENTRIES, 128, 1, [8, 0]),
    ];
    for (i, (ty, entries, size, cnt, splits)) in types.iter().enumerate() {
        let (root, _) = pbl(rig, nic, pages, u64::from(*entries) * u64::from(*size));
        let mut r: HwrmFuncBackingStoreCfgV2Input = req();
        r.type_ = (*ty).into();
        r.num_entries = (*entries).into();
        r.entry_size = (*size).into();
        r.page_size_pbl_level = 1;
        r.page_dir = root.into();
        r.subtype_valid_cnt = *cnt;
        r.split_entry_0 = splits[0].into();
        r.split_entry_1 = splits[1].into();
        if i == types.len() - 1 {
            r.flags = HwrmFuncBackingStoreCfgV2Input::FLAGS_BS_CFG_ALL_DONE.into();
        }
        rig.ok(nic, r);
    }
    let stats = pages.take(1);
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = stats.into();
    s.stats_dma_length = 256.into();
    s.stat_ctx_flags = 1;
    rig.ok(nic, s).stat_ctx_id.get()
}

/// Allocate an NQ-type ring of `len` entries on MSI-X vector `vector`.
pub fn nq_ring(rig: &mut Rig, nic: usize, pages: &mut Pages, len: u32, vector: u16) -> NqRing {
    let (table, base) = pbl(rig, nic, pages, u64::from(len) * 16);
    let mut r: HwrmRingAllocInput = req();
    r.ring_type = HwrmRingAllocInput::RING_TYPE_NQ;
    r.page_tbl_addr = table.into();
    r.page_size = 12;
    r.page_tbl_depth = 1;
    r.length = len.into();
    r.logical_id = vector.into();
    r.int_mode = HwrmRingAllocInput::INT_MODE_MSIX;
    let id = rig.ok(nic, r).ring_id.get();
    NqRing { id, base, len, cons: 0, epoch: false }
}

impl NqRing {
    /// The next entry if the producer has written it (valid bit differs from the epoch).
    pub fn peek(&self, rig: &Rig, nic: usize) -> Option<[u8; 16]> {
        let b: [u8; 16] = rig.peek(nic, self.base + u64::from(self.cons) * 16, 16).try_into().unwrap();
        (((b[8] & 1) == 1) != self.epoch).then_some(b)
    }

    /// Consume one entry.
    pub fn pop(&mut self) {
        self.cons += 1;
        if self.cons == self.len {
            self.cons = 0;
            self.epoch = !self.epoch;
        }
    }

    /// The doorbell returning entries up to the consumer (arming when `arm`).
    pub fn doorbell(&self, arm: bool) -> Doorbell {
        Doorbell::roce(if arm { DbType::NqArm } else { DbType::Nq }, self.id.into(), self.cons, self.epoch, 0)
    }
}

impl Func {
    /// A reservation, the default VNIC with an L2 filter for the NIC's MAC, context memory,
    /// statistics context, CREQ (`creq_len` entries, vector 0) and a CMDQ of
    /// `cmdq_slots`, the CREQ armed and `cmdq_init` written; no command sent yet.
    pub fn bring_up(rig: &mut Rig, nic: usize, creq_len: u32, cmdq_slots: u32) -> Func {
        let mut pages = Pages::default();
        rig.ok(nic, roomy_reservation());
        let mac = rig.world.nic_state(nic).mac;
        let (_, filter) = roce_filter(rig, nic, mac);
        let stat_ctx = context_memory(rig, nic, &mut pages);
        let creq = nq_ring(rig, nic, &mut pages, creq_len, 0);
        let cmdq = pages.take((u64::from(cmdq_slots) * 16).div_ceil(4096));
        let sb = pages.take(1);
        let f = Func {
            nic,
            pages,
            stat_ctx,
            creq,
            cmdq,
            cmdq_slots,
            prod: 0,
            first: true,
            cookie: 0,
            sb,
            async_events: Vec::new(),
            mac,
            filter,
        };
        ring(rig, nic, f.creq.doorbell(true));
        f.write_init(rig, cmdq, cmdq_slots, 0, f.creq.id);
        f
    }

    /// Write `cmdq_init` (4 dwords) to BAR0 0x600.
    pub fn write_init(&self, rig: &mut Rig, pbl: u64, slots: u32, level: u16, creq: u16) {
        let mut init = CmdqInit::new_zeroed();
        init.cmdq_pbl = pbl.into();
        init.cmdq_size_cmdq_lvl = (((slots as u16) << 2) | level).into();
        init.creq_ring_id = creq.into();
        for (i, dw) in init.as_bytes().chunks(4).enumerate() {
            rig.world.bar_write(self.nic, 0, 0x600 + 4 * i as u64, dw);
        }
    }

    /// Copy `bytes` (cmd_size and cookie already set) into the CMDQ and ring the trigger.
    pub fn submit(&mut self, rig: &mut Rig, bytes: &[u8]) {
        for slot in bytes.chunks(16) {
            let at = self.cmdq + u64::from(self.prod % self.cmdq_slots) * 16;
            let mut s = [0u8; 16];
            s[..slot.len()].copy_from_slice(slot);
            rig.poke(self.nic, at, &s);
            self.prod = self.prod.wrapping_add(1);
        }
        let mut p = self.prod & 0xffff;
        if self.first {
            p |= 1 << 31;
            self.first = false;
        }
        rig.world.bar_write(self.nic, 0, 0x60c, &p.to_le_bytes());
        rig.world.bar_write(self.nic, 0, 0x700, &1u32.to_le_bytes());
    }

    /// Give `bytes` (a command layout) its cmd_size and a cookie, submit it; the cookie.
    pub fn send(&mut self, rig: &mut Rig, mut bytes: Vec<u8>) -> u16 {
        bytes.resize(bytes.len().div_ceil(16) * 16, 0);
        bytes[1] = (bytes.len() / 16) as u8;
        self.cookie = self.cookie.wrapping_add(1);
        let cookie = self.cookie;
        bytes[4..6].copy_from_slice(&cookie.to_le_bytes());
        self.submit(rig, &bytes);
        cookie
    }

    /// The next CREQ entry, waiting for it up to 1 s of virtual time; the CREQ doorbell is rung
    /// (NQ_ARM) after it is consumed.
    pub fn next_creq(&mut self, rig: &mut Rig) -> Creq {
        let nic = self.nic;
        let creq = self.creq;
        run_until(rig, Duration::from_secs(1), |rig| creq.peek(rig, nic).is_some());
        let b = self.creq.peek(rig, nic).unwrap();
        self.creq.pop();
        ring(rig, nic, self.creq.doorbell(true));
        Creq::of(b)
    }

    /// Run until the NIC has nothing due within `limit` of virtual time, keeping every CREQ
    /// entry that came meanwhile as an asynchronous event. After a command whose size the
    /// driver misstated, the slots the stated size did not cover are read as commands of their
    /// own (their bytes, cookies included, are whatever the driver wrote there) and answered
    /// after it; a driver waiting for its next command's cookie must not take one of theirs.
    pub fn settle(&mut self, rig: &mut Rig, limit: Duration) {
        let end = rig.world.now() + limit;
        loop {
            while let Some(b) = self.creq.peek(rig, self.nic) {
                self.creq.pop();
                ring(rig, self.nic, self.creq.doorbell(true));
                self.async_events.push(Creq::of(b));
            }
            let now = rig.world.now();
            match rig.world.next_deadline() {
                Some(t) if t <= end => rig.world.advance(t.saturating_sub(now).max(Duration::from_nanos(1))),
                _ => return,
            }
        }
    }

    /// Wait for the completion with `cookie`, keeping asynchronous events seen meanwhile.
    pub fn wait(&mut self, rig: &mut Rig, cookie: u16) -> Creq {
        loop {
            let c = self.next_creq(rig);
            if c.event < 0xc0 && u16::from_le_bytes([c.bytes[2], c.bytes[3]]) == cookie {
                return c;
            }
            self.async_events.push(c);
        }
    }

    /// Send command `cmd` and wait for its completion.
    pub fn call<C: Command>(&mut self, rig: &mut Rig, mut cmd: C) -> Creq {
        let b = cmd.as_mut_bytes();
        b[0] = C::OPCODE;
        let cookie = self.send(rig, b.to_vec());
        let c = self.wait(rig, cookie);
        assert_eq!(c.event, C::OPCODE, "completion of {}", C::NAME);
        c
    }

    /// Send `cmd` and expect success; the completion.
    pub fn ok<C: Command>(&mut self, rig: &mut Rig, cmd: C) -> Creq {
        let c = self.call(rig, cmd);
        assert_eq!(c.status, 0, "{} refused with status {}: {:?}", C::NAME, c.status, last_refusal(rig));
        c
    }

    /// Send `cmd` with a side buffer of `sb_len` bytes at the side-buffer page; the completion and
    /// the side buffer.
    pub fn query<C: Command>(&mut self, rig: &mut Rig, mut cmd: C, sb_len: usize) -> (Creq, Vec<u8>) {
        rig.poke(self.nic, self.sb, &[0u8; 4096]);
        let b = cmd.as_mut_bytes();
        b[6] = (sb_len / 16) as u8;
        b[8..16].copy_from_slice(&self.sb.to_le_bytes());
        let c = self.call(rig, cmd);
        (c, rig.peek(self.nic, self.sb, sb_len))
    }

    /// MODIFY_ROCE_CC TLV-encapsulated as bnxt_re sends it on P5/P7 (qplib_sp.c
    /// `bnxt_qplib_modify_cc`; qplib_tlv.h `ROCE_1ST_TLV_PREP`): a `roce_tlv` header (CMD_DISCR_TLV_ENCAP,
    /// REQUIRED, MORE when extensions follow, type ROCE_SP_COMMAND, length 56, total_size), the
    /// command (its `cmd_size` in bytes, as bnxt_re leaves it inside a TLV), 8 bytes of padding,
    /// then `exts` (whole extension TLVs, each padded to 16 bytes); the cookie.
    pub fn send_modify_cc_tlv(&mut self, rig: &mut Rig, mut base: CmdqModifyRoceCc, exts: &[Vec<u8>]) -> u16 {
        self.cookie = self.cookie.wrapping_add(1);
        base.opcode = CmdqModifyRoceCc::OPCODE_MODIFY_ROCE_CC;
        base.cmd_size = size_of::<CmdqModifyRoceCc>() as u8;
        base.cookie = self.cookie.into();
        let mut cmd = vec![0u8; 16];
        cmd.extend_from_slice(base.as_bytes());
        cmd.extend_from_slice(&[0u8; 8]);
        for e in exts {
            cmd.extend_from_slice(e);
            cmd.resize(cmd.len().div_ceil(16) * 16, 0);
        }
        cmd[0..2].copy_from_slice(&CMD_DISCR_TLV_ENCAP.to_le_bytes());
        cmd[3] = Tlv::FLAGS_REQUIRED | if exts.is_empty() { 0 } else { Tlv::FLAGS_MORE };
        cmd[4..6].copy_from_slice(&TLV_TYPE_ROCE_SP_COMMAND.to_le_bytes());
        cmd[6..8].copy_from_slice(&(size_of::<CmdqModifyRoceCc>() as u16).to_le_bytes());
        cmd[8] = (cmd.len() / 16) as u8;
        self.submit(rig, &cmd);
        self.cookie
    }

    /// QUERY_ROCE_CC with the side buffer bnxt_re gives on P5/P7 (`resp_size` 9); the completion,
    /// the base parameters' TLV and the generation-1 TLV.
    pub fn query_cc(&mut self, rig: &mut Rig) -> (Creq, CreqQueryRoceCcRespSbTlv, CreqQueryRoceCcGen1RespSbTlv) {
        let (c, sb) = self.query(rig, CmdqQueryRoceCc::new_zeroed(), 144);
        let base = CreqQueryRoceCcRespSbTlv::read_from_prefix(&sb).unwrap().0;
        let gen1 =
            CreqQueryRoceCcGen1RespSbTlv::read_from_prefix(&sb[size_of::<CreqQueryRoceCcRespSbTlv>()..]).unwrap().0;
        (c, base, gen1)
    }

    /// QUERY_FUNC's side buffer.
    pub fn query_func(&mut self, rig: &mut Rig) -> CreqQueryFuncRespSb {
        let (c, sb) = self.query(rig, CmdqQueryFunc::new_zeroed(), size_of::<CreqQueryFuncRespSb>());
        assert_eq!(c.status, 0);
        CreqQueryFuncRespSb::read_from_bytes(&sb).unwrap()
    }

    /// QUERY_FUNC, INITIALIZE_FW with the statistics context and HW requester retransmission.
    pub fn initialize(&mut self, rig: &mut Rig) {
        let caps = self.query_func(rig);
        let mut init = CmdqInitializeFw::new_zeroed();
        if caps.dev_cap_flags.get() & CreqQueryFuncRespSb::HW_REQUESTER_RETX_ENABLED != 0 {
            init.flags = CmdqInitializeFw::FLAGS_HW_REQUESTER_RETX_SUPPORTED.into();
        }
        init.stat_ctx_id = self.stat_ctx.into();
        self.ok(rig, init);
    }

    /// The NIC's IPv4-mapped GID.
    pub fn gid(&self) -> [u8; 16] {
        ipv4_mapped_gid([10, self.mac[3], self.mac[4], self.mac[5]])
    }

    /// ADD_GID of the NIC's own GID and MAC; the hardware GID index.
    pub fn add_own_gid(&mut self, rig: &mut Rig) -> u16 {
        let mut g = CmdqAddGid::new_zeroed();
        g.gid.as_mut_bytes().copy_from_slice(&gid_for_command(self.gid()));
        g.src_mac.as_mut_bytes().copy_from_slice(&mac_for_command(self.mac));
        self.ok(rig, g).xid as u16
    }

    /// CREATE_CQ of `size` entries notifying NQ `nq`; the CQ, armed for enabling (CQ_ARMENA).
    pub fn create_cq(&mut self, rig: &mut Rig, size: u32, nq: u16) -> TCq {
        let (table, base) = pbl(rig, self.nic, &mut self.pages, u64::from(size) * 32);
        let mut c = CmdqCreateCq::new_zeroed();
        c.cq_handle = (0x00c0_ffee_0000 + u64::from(size)).into();
        c.pg_size_lvl = CmdqCreateCq::LVL_LVL_1.into();
        c.cq_fco_cnq_id = u32::from(nq).into();
        c.dpi = 16.into();
        c.cq_size = size.into();
        c.pbl = table.into();
        let id = self.ok(rig, c).xid;
        let cq = TCq { id, base, size, cons: 0, epoch: false, toggle: 0 };
        ring(rig, self.nic, Doorbell::roce(DbType::CqArmEna, id, 0, false, 0));
        cq
    }

    /// A buffer of `len` bytes of this NIC's memory registered with ALLOC_MR (PD 1, `access` in
    /// REGISTER_MR order); (key, address).
    pub fn region(&mut self, rig: &mut Rig, len: u64, access: u8) -> (u32, u64) {
        let (table, base) = pbl(rig, self.nic, &mut self.pages, len);
        let mut r = CmdqRegisterMr::new_zeroed();
        r.flags = CmdqRegisterMr::FLAGS_ALLOC_MR.into();
        r.log2_pg_size_lvl = CmdqRegisterMr::LVL_LVL_1 | CmdqRegisterMr::LOG2_PG_SIZE_PG_4K;
        r.access = access;
        r.log2_pbl_pg_size = CmdqRegisterMr::LOG2_PBL_PG_SIZE_PG_4K.into();
        r.key = 1.into();
        r.pbl = table.into();
        r.va = base.into();
        r.mr_size = len.into();
        (self.ok(rig, r).xid, base)
    }

    /// A CREATE_QP request for an RC QP (PD 1) with fresh SQ/RQ memory; the request and the QP
    /// as the driver keeps it.
    pub fn qp_request(
        &mut self,
        rig: &Rig,
        variable: bool,
        sq_size: u32,
        rq_size: u32,
        scq: &TCq,
        rcq: &TCq,
    ) -> (CmdqCreateQp, TQp) {
        let depth = if variable { sq_size } else { sq_size * 8 };
        let msn_entries = table_entries(sq_size, variable);
        let (sq_table, sq_base) =
            pbl(rig, self.nic, &mut self.pages, u64::from(depth) * 16 + u64::from(msn_entries) * 8);
        let rq_sge = 6u16;
        let stride = 32 + 16 * u64::from(rq_sge);
        let (rq_table, rq_base) = pbl(rig, self.nic, &mut self.pages, u64::from(rq_size) * stride);
        let orrq = self.pages.take(1);
        let irrq = self.pages.take(1);
        let mut c = CmdqCreateQp::new_zeroed();
        let handle = 0x9900_0000 + rq_base;
        c.qp_handle = handle.into();
        let mut flags = CmdqCreateQp::QP_FLAGS_RESERVED_LKEY_ENABLE | CmdqCreateQp::QP_FLAGS_FR_PMR_ENABLED;
        if variable {
            flags |= CmdqCreateQp::QP_FLAGS_VARIABLE_SIZED_WQE_ENABLED;
        }
        c.qp_flags = flags.into();
        c.type_ = CmdqCreateQp::TYPE_RC;
        c.sq_pg_size_sq_lvl = CmdqCreateQp::SQ_LVL_LVL_1;
        c.rq_pg_size_rq_lvl = CmdqCreateQp::RQ_LVL_LVL_1;
        c.dpi = 16.into();
        c.sq_size = sq_size.into();
        c.rq_size = rq_size.into();
        c.sq_fwo_sq_sge = 6.into();
        c.rq_fwo_rq_sge = rq_sge.into();
        c.scq_cid = scq.id.into();
        c.rcq_cid = rcq.id.into();
        c.pd_id = 1.into();
        c.sq_pbl = sq_table.into();
        c.rq_pbl = rq_table.into();
        c.irrq_addr = irrq.into();
        c.orrq_addr = orrq.into();
        let qp = TQp {
            id: 0,
            variable,
            sq_size,
            depth,
            sq_base,
            msn_entries,
            msn: 0,
            sq_prod: 0,
            sq_epoch: false,
            posted: 0,
            psn: 0,
            mtu: 4096,
            rq_base,
            rq_size,
            rq_stride: stride,
            rq_prod: 0,
            rq_epoch: false,
            scq: scq.id,
            rcq: rcq.id,
            handle,
        };
        (c, qp)
    }

    /// CREATE_QP; the QP.
    pub fn create_qp(
        &mut self,
        rig: &mut Rig,
        variable: bool,
        sq_size: u32,
        rq_size: u32,
        scq: &TCq,
        rcq: &TCq,
    ) -> TQp {
        let (c, mut qp) = self.qp_request(rig, variable, sq_size, rq_size, scq, rcq);
        qp.id = self.ok(rig, c).xid;
        qp
    }

    /// A CREATE_QP request for the GSI QP (QP1) as bnxt_re sends it on P5/P7 (qplib_fp.c
    /// `bnxt_qplib_create_qp` with type GSI): SQ memory for the ring alone (no MSN table), no
    /// ORRQ/IRRQ; the request and the QP as the driver keeps it.
    pub fn gsi_request(
        &mut self,
        rig: &Rig,
        variable: bool,
        sq_size: u32,
        rq_size: u32,
        scq: &TCq,
        rcq: &TCq,
    ) -> (CmdqCreateQp, TQp) {
        let (mut c, mut qp) = self.qp_request(rig, variable, sq_size, rq_size, scq, rcq);
        let (sq_table, sq_base) = pbl(rig, self.nic, &mut self.pages, u64::from(qp.depth) * 16);
        c.type_ = CmdqCreateQp::TYPE_GSI;
        c.sq_pbl = sq_table.into();
        c.orrq_addr = 0.into();
        c.irrq_addr = 0.into();
        qp.sq_base = sq_base;
        qp.msn_entries = 0;
        (c, qp)
    }

    /// MODIFY_QP of the GSI QP through RESET→INIT→RTR→RTS as ib_mad asks and bnxt_re sends it
    /// (mad.c `ib_mad_port_start`: PKEY_INDEX and QKEY, then the state alone, then SQ_PSN;
    /// qplib_fp.c `__filter_modify_flags` adds PATH_MTU and SGID_INDEX at INIT→RTR).
    pub fn gsi_to_rts(&mut self, rig: &mut Rig, qp: &TQp, qkey: u32, sq_psn: u32) {
        type M = CmdqModifyQp;
        let step = |state: u8, mask: u32| {
            let mut m = M::new_zeroed();
            m.qp_cid = qp.id.into();
            m.modify_mask = (M::MODIFY_MASK_STATE | mask).into();
            m.network_type_en_sqd_async_notify_new_state = state;
            m
        };
        let mut init = step(M::NEW_STATE_INIT, M::MODIFY_MASK_PKEY | M::MODIFY_MASK_QKEY);
        init.pkey = 0xffff.into();
        init.qkey = qkey.into();
        self.ok(rig, init);
        let mut rtr = step(M::NEW_STATE_RTR, M::MODIFY_MASK_PATH_MTU | M::MODIFY_MASK_SGID_INDEX);
        rtr.path_mtu_pingpong_push_enable = M::PATH_MTU_MTU_1024;
        self.ok(rig, rtr);
        let mut rts = step(M::NEW_STATE_RTS, M::MODIFY_MASK_SQ_PSN);
        rts.sq_psn = sq_psn.into();
        self.ok(rig, rts);
    }

    /// MODIFY_QP RESET→INIT→RTR→RTS towards `peer` (its GID, MAC and QP number), as bnxt_re sends
    /// the three transitions; `psn` is both directions' starting PSN.
    pub fn connect(&mut self, rig: &mut Rig, qp: &mut TQp, sgid_index: u16, peer: (&[u8; 16], [u8; 6], u32), psn: u32) {
        self.connect_rtr(rig, qp, sgid_index, peer, psn);
        self.connect_rts(rig, qp, psn);
    }

    /// MODIFY_QP RESET→INIT→RTR towards `peer` (its GID, MAC and QP number) expecting `rq_psn`
    /// first: a responder, as perftest's bandwidth servers leave their QPs.
    pub fn connect_rtr(
        &mut self,
        rig: &mut Rig,
        qp: &mut TQp,
        sgid_index: u16,
        peer: (&[u8; 16], [u8; 6], u32),
        rq_psn: u32,
    ) {
        type M = CmdqModifyQp;
        let mut m = M::new_zeroed();
        m.qp_cid = qp.id.into();
        m.modify_mask = (M::MODIFY_MASK_STATE | M::MODIFY_MASK_ACCESS | M::MODIFY_MASK_PKEY).into();
        m.network_type_en_sqd_async_notify_new_state = M::NEW_STATE_INIT;
        m.access = M::ACCESS_LOCAL_WRITE | M::ACCESS_REMOTE_WRITE | M::ACCESS_REMOTE_READ | M::ACCESS_REMOTE_ATOMIC;
        m.pkey = 0xffff.into();
        self.ok(rig, m);
        let mut m = M::new_zeroed();
        m.qp_cid = qp.id.into();
        m.modify_mask = (M::MODIFY_MASK_STATE
            | M::MODIFY_MASK_DGID
            | M::MODIFY_MASK_FLOW_LABEL
            | M::MODIFY_MASK_SGID_INDEX
            | M::MODIFY_MASK_HOP_LIMIT
            | M::MODIFY_MASK_DEST_MAC
            | M::MODIFY_MASK_PATH_MTU
            | M::MODIFY_MASK_DEST_QP_ID
            | M::MODIFY_MASK_RQ_PSN
            | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
            | M::MODIFY_MASK_MIN_RNR_TIMER)
            .into();
        m.network_type_en_sqd_async_notify_new_state = M::NEW_STATE_RTR | M::NETWORK_TYPE_ROCEV2_IPV4;
        m.dgid.as_mut_bytes().copy_from_slice(peer.0);
        m.sgid_index = sgid_index.into();
        m.hop_limit = 64;
        m.dest_mac.as_mut_bytes().copy_from_slice(&peer.1);
        m.path_mtu_pingpong_push_enable = M::PATH_MTU_MTU_4096;
        m.dest_qp_id = peer.2.into();
        m.rq_psn = rq_psn.into();
        m.max_dest_rd_atomic = 2 * 4 + 2;
        m.min_rnr_timer = 1;
        self.ok(rig, m);
        qp.mtu = 4096;
    }

    /// MODIFY_QP RTR→RTS sending from `sq_psn` on.
    pub fn connect_rts(&mut self, rig: &mut Rig, qp: &mut TQp, sq_psn: u32) {
        type M = CmdqModifyQp;
        let mut m = M::new_zeroed();
        m.qp_cid = qp.id.into();
        m.modify_mask = (M::MODIFY_MASK_STATE
            | M::MODIFY_MASK_TIMEOUT
            | M::MODIFY_MASK_RETRY_CNT
            | M::MODIFY_MASK_RNR_RETRY
            | M::MODIFY_MASK_SQ_PSN
            | M::MODIFY_MASK_MAX_RD_ATOMIC)
            .into();
        m.network_type_en_sqd_async_notify_new_state = M::NEW_STATE_RTS;
        m.timeout = 10;
        m.retry_cnt = 7;
        m.rnr_retry = 7;
        m.sq_psn = sq_psn.into();
        m.max_rd_atomic = 4 + 1;
        self.ok(rig, m);
        qp.psn = sq_psn;
    }

    /// Write a send WQE (`wqe_type`, `flags`) with SGEs `(va, lkey, len)` (or inline `data`),
    /// its MSN entry, and ring the SQ doorbell. RDMA WQEs carry `remote` (va, rkey).
    #[allow(clippy::too_many_arguments)]
    pub fn post_send(
        &mut self,
        rig: &mut Rig,
        qp: &mut TQp,
        wqe_type: u8,
        flags: u8,
        sges: &[(u64, u32, u32)],
        inline: Option<&[u8]>,
        remote: Option<(u64, u32)>,
        imm: u32,
    ) {
        let data_slots = match inline {
            Some(d) => d.len().div_ceil(16),
            None => sges.len(),
        };
        let wqe_size = 2 + data_slots as u8;
        let length: u32 = match inline {
            Some(d) => d.len() as u32,
            None => sges.iter().map(|s| s.2).sum(),
        };
        let mut w = vec![0u8; usize::from(wqe_size) * 16];
        w[0] = wqe_type;
        w[1] = flags | if inline.is_some() { SqSendHdr::FLAGS_INLINE } else { 0 };
        w[2] = wqe_size;
        w[4..8].copy_from_slice(&imm.to_le_bytes());
        w[8..12].copy_from_slice(&length.to_le_bytes());
        if let Some((va, rkey)) = remote {
            w[16..24].copy_from_slice(&va.to_le_bytes());
            w[24..28].copy_from_slice(&rkey.to_le_bytes());
        }
        match inline {
            Some(d) => w[32..32 + d.len()].copy_from_slice(d),
            None => {
                for (i, &(va, lkey, len)) in sges.iter().enumerate() {
                    let at = 32 + 16 * i;
                    w[at..at + 8].copy_from_slice(&va.to_le_bytes());
                    w[at + 8..at + 12].copy_from_slice(&lkey.to_le_bytes());
                    w[at + 12..at + 16].copy_from_slice(&len.to_le_bytes());
                }
            }
        }
        self.post_wqe(rig, qp, &w, length.div_ceil(qp.mtu).max(1));
    }

    /// An atomic WQE (`sq_atomic_hdr` then one SGE of 8 bytes at `local`), as libbnxt_re writes
    /// it (its slot count, 3, in `wqe_size`) or, with `kernel`, as bnxt_re does (`wqe_size` 0);
    /// `cmp_swap` picks ATOMIC_CS (with `compare`) over ATOMIC_FA.
    #[allow(clippy::too_many_arguments)]
    pub fn post_atomic(
        &mut self,
        rig: &mut Rig,
        qp: &mut TQp,
        kernel: bool,
        cmp_swap: Option<u64>,
        swap_add: u64,
        remote: (u64, u32),
        local: (u64, u32),
    ) {
        let mut w = vec![0u8; 48];
        w[0] = if cmp_swap.is_some() { SqBase::WQE_TYPE_ATOMIC_CS } else { SqBase::WQE_TYPE_ATOMIC_FA };
        w[1] = SqSendHdr::FLAGS_SIGNAL_COMP;
        w[2] = if kernel { 0 } else { 3 };
        w[4..8].copy_from_slice(&remote.1.to_le_bytes());
        w[8..16].copy_from_slice(&remote.0.to_le_bytes());
        w[16..24].copy_from_slice(&swap_add.to_le_bytes());
        w[24..32].copy_from_slice(&cmp_swap.unwrap_or(0).to_le_bytes());
        w[32..40].copy_from_slice(&local.0.to_le_bytes());
        w[40..44].copy_from_slice(&local.1.to_le_bytes());
        w[44..48].copy_from_slice(&8u32.to_le_bytes());
        self.post_wqe(rig, qp, &w, 1);
    }

    /// Write WQE `w` (whole slots) at the SQ producer, its MSN entry (`packets` PSNs), and ring
    /// the SQ doorbell.
    pub fn post_wqe(&mut self, rig: &mut Rig, qp: &mut TQp, w: &[u8], packets: u32) {
        let wqe_size = (w.len() / 16) as u8;
        let start_slot = if qp.variable { qp.sq_prod } else { qp.sq_prod * 8 };
        for (k, slot) in w.chunks(16).enumerate() {
            let s = (start_slot + k as u32) % qp.depth;
            rig.poke(self.nic, qp.sq_base + u64::from(s) * 16, slot);
        }
        // RC QPs have an MSN table after the ring; the GSI QP has none.
        if qp.msn_entries > 0 {
            let entry =
                MsnEntry { start_psn: qp.psn, next_psn: (qp.psn + packets) & 0xff_ffff, start_slot: start_slot as u16 };
            let msn_at = qp.sq_base + u64::from(qp.depth) * 16 + u64::from(qp.msn) * 8;
            rig.poke(self.nic, msn_at, &entry.encode().to_le_bytes());
            qp.msn = (qp.msn + 1) % qp.msn_entries;
        }
        qp.psn = (qp.psn + packets) & 0xff_ffff;
        let step = if qp.variable { u32::from(wqe_size) } else { 1 };
        qp.sq_prod += step;
        if qp.sq_prod >= qp.sq_size {
            qp.sq_prod -= qp.sq_size;
            qp.sq_epoch = !qp.sq_epoch;
        }
        qp.posted += 1;
        ring(rig, self.nic, Doorbell::roce(DbType::Sq, qp.id, qp.sq_prod, qp.sq_epoch, 0));
    }

    /// Write a receive WQE with `wr_id` and SGEs, and ring the RQ doorbell.
    pub fn post_recv(&mut self, rig: &mut Rig, qp: &mut TQp, wr_id: u32, sges: &[(u64, u32, u32)]) {
        let sges: Vec<(u64, u32, u32)> = if sges.is_empty() { vec![(0, 0, 0)] } else { sges.to_vec() };
        let mut w = vec![0u8; 32 + 16 * sges.len()];
        w[0] = RqWqeHdr::WQE_TYPE_RCV;
        w[2] = (2 + sges.len()) as u8;
        w[8..12].copy_from_slice(&wr_id.to_le_bytes());
        for (i, &(va, lkey, len)) in sges.iter().enumerate() {
            let at = 32 + 16 * i;
            w[at..at + 8].copy_from_slice(&va.to_le_bytes());
            w[at + 8..at + 12].copy_from_slice(&lkey.to_le_bytes());
            w[at + 12..at + 16].copy_from_slice(&len.to_le_bytes());
        }
        rig.poke(self.nic, qp.rq_base + u64::from(qp.rq_prod) * qp.rq_stride, &w);
        qp.rq_prod += 1;
        if qp.rq_prod == qp.rq_size {
            qp.rq_prod = 0;
            qp.rq_epoch = !qp.rq_epoch;
        }
        ring(rig, self.nic, Doorbell::roce(DbType::Rq, qp.id, qp.rq_prod, qp.rq_epoch, 0));
    }
}

/// CREATE_AH of a RoCE v2 IPv4 address handle from GID index `sgid` to `dgid` at `dmac` in PD 1.
pub fn create_ah(sgid: u16, dgid: [u8; 16], dmac: [u8; 6]) -> CmdqCreateAh {
    let mut a = CmdqCreateAh::new_zeroed();
    a.ah_handle = 0x77.into();
    a.dgid.as_mut_bytes().copy_from_slice(&dgid);
    a.type_ = CmdqCreateAh::TYPE_V2IPV4;
    a.hop_limit = 64;
    a.sgid_index = sgid.into();
    // bnxt_re sets the VLAN id bits to all ones (no VLAN): qplib_sp.c `bnxt_qplib_create_ah`.
    a.dest_vlan_id_flow_label = CmdqCreateAh::DEST_VLAN_ID_MASK.into();
    a.pd_id = 1.into();
    a.dest_mac.as_mut_bytes().copy_from_slice(&dmac);
    a
}

/// A UD SEND WQE (static mode) as libbnxt_re and bnxt_re write it for UD and GSI QPs: `sq_send`
/// with q_key, dst_qp and avid (`sge` is (va, lkey, len), `dst` (dst_qp, avid, q_key)); rings the
/// SQ doorbell.
pub fn post_ud(
    f: &mut Func,
    rig: &mut Rig,
    qp: &mut TQp,
    sge: (u64, u32, u32),
    dst: (u32, u32, u32),
    imm: Option<u32>,
) {
    let (dst_qp, avid, qkey) = dst;
    let mut w = [0u8; 48];
    w[0] = if imm.is_some() { SqBase::WQE_TYPE_SEND_W_IMMEAD } else { SqBase::WQE_TYPE_SEND };
    w[1] = SqSendHdr::FLAGS_SIGNAL_COMP;
    w[2] = 3;
    w[4..8].copy_from_slice(&imm.unwrap_or(0).to_le_bytes());
    w[8..12].copy_from_slice(&sge.2.to_le_bytes());
    w[12..16].copy_from_slice(&qkey.to_le_bytes());
    w[16..20].copy_from_slice(&dst_qp.to_le_bytes());
    w[20..24].copy_from_slice(&avid.to_le_bytes());
    w[32..40].copy_from_slice(&sge.0.to_le_bytes());
    w[40..44].copy_from_slice(&sge.1.to_le_bytes());
    w[44..48].copy_from_slice(&sge.2.to_le_bytes());
    rig.poke(f.nic, qp.sq_base + u64::from(qp.sq_prod * 8) * 16, &w);
    qp.sq_prod += 1;
    if qp.sq_prod >= qp.sq_size {
        qp.sq_prod -= qp.sq_size;
        qp.sq_epoch = !qp.sq_epoch;
    }
    ring(rig, f.nic, Doorbell::roce(DbType::Sq, qp.id, qp.sq_prod, qp.sq_epoch, 0));
}

/// MODIFY_ROCE_CC's generation-1 extension TLV as bnxt_re fills it (qplib_tlv.h
/// `ROCE_EXT_TLV_PREP`: CMD_DISCR_TLV_ENCAP, type MODIFY_ROCE_CC_GEN1, length 80, REQUIRED, MORE
/// when `more`).
pub fn gen1_tlv(mut ext: CmdqModifyRoceCcGen1Tlv, more: bool) -> Vec<u8> {
    ext.cmd_discr = CMD_DISCR_TLV_ENCAP.into();
    ext.tlv_type = TLV_TYPE_MODIFY_ROCE_CC_GEN1.into();
    ext.length = ((size_of::<CmdqModifyRoceCcGen1Tlv>() - 16) as u16).into();
    ext.tlv_flags = Tlv::FLAGS_REQUIRED | if more { Tlv::FLAGS_MORE } else { 0 };
    ext.as_bytes().to_vec()
}

/// The reason the last refused RoCE command gave, from the event log.
pub fn last_refusal(rig: &mut Rig) -> Option<String> {
    rig.world.take_events().into_iter().rev().find_map(|e| match e.kind {
        bnxt_model::events::EventKind::RoceCompletion { reason, .. } if !reason.is_empty() => Some(reason),
        _ => None,
    })
}

impl TCq {
    /// The next CQE if the producer wrote it (toggle bit differs from the epoch).
    pub fn peek(&self, rig: &Rig, nic: usize) -> Option<[u8; 32]> {
        let b: [u8; 32] = rig.peek(nic, self.base + u64::from(self.cons) * 32, 32).try_into().unwrap();
        (((b[0x18] & 1) == 1) != self.epoch).then_some(b)
    }

    /// Take the next CQE, if any.
    pub fn poll(&mut self, rig: &Rig, nic: usize) -> Option<[u8; 32]> {
        let b = self.peek(rig, nic)?;
        self.cons += 1;
        if self.cons == self.size {
            self.cons = 0;
            self.epoch = !self.epoch;
        }
        Some(b)
    }

    /// Return consumed CQEs (CQ doorbell).
    pub fn release(&self, rig: &mut Rig, nic: usize) {
        ring(rig, nic, Doorbell::roce(DbType::Cq, self.id, self.cons, self.epoch, 0));
    }

    /// Wait for the next CQE (up to `limit` of virtual time) and release it.
    pub fn wait(&mut self, rig: &mut Rig, nic: usize, limit: Duration) -> [u8; 32] {
        let me = *self;
        run_until(rig, limit, |rig| me.peek(rig, nic).is_some());
        let b = self.poll(rig, nic).unwrap();
        self.release(rig, nic);
        b
    }
}

/// Status byte of a CQE.
pub fn cqe_status(c: &[u8; 32]) -> u8 {
    c[0x19]
}

/// Type of a CQE (bits 4:1 of byte 0x18).
pub fn cqe_type(c: &[u8; 32]) -> u8 {
    (c[0x18] >> 1) & 0xf
}

/// `sq_cons_idx` of a requester CQE.
pub fn sq_cons_idx(c: &[u8; 32]) -> u16 {
    u16::from_le_bytes([c[8], c[9]])
}

/// `length` of a responder CQE.
pub fn res_length(c: &[u8; 32]) -> u32 {
    u32::from_le_bytes(c[0..4].try_into().unwrap())
}

/// `srq_or_rq_wr_id` of a responder CQE.
pub fn res_wr_id(c: &[u8; 32]) -> u32 {
    u32::from_le_bytes(c[0x1c..0x20].try_into().unwrap()) & 0xf_ffff
}
