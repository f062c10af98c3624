//! The RoCE function's command channel as the test driver keeps it: bring-up (reservation, VNIC,
//! L2 filter, context memory, CREQ, CMDQ), commands sent and their CREQ completions read.

use super::*;
use crate::common::{Pages, Rig, roce_filter, roomy_reservation};
use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::roce::command::Command;
use bnxt_hsi::roce::gid::{gid_for_command, ipv4_mapped_gid, mac_for_command};
use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::rcfw::{CMD_DISCR_TLV_ENCAP, TLV_TYPE_MODIFY_ROCE_CC_GEN1, TLV_TYPE_ROCE_SP_COMMAND};
use std::time::Duration;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

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
    pub(super) fn of(b: [u8; 16]) -> Creq {
        Creq { status: b[1], xid: u32::from_le_bytes(b[4..8].try_into().unwrap()), event: b[9], bytes: b }
    }
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
