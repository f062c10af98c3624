//! Receive: a frame from the wire to a VNIC, a ring pair, a buffer and a completion (bnxt.c
//! `bnxt_rx_pkt`, `bnxt_alloc_rx_data`, `bnxt_hwrm_l2_filter_alloc`, `bnxt_cfg_rx_mode`,
//! `bnxt_fill_hw_rss_tbl_p5`).
//!
//! Steering: a frame goes to the VNIC of the first L2 filter that matches its destination MAC
//! (and VLAN); otherwise to a VNIC whose receive mask takes it (PROMISCUOUS: everything; BCAST:
//! broadcast; ALL_MCAST: any multicast; MCAST: the listed multicast addresses). A frame no VNIC
//! takes is dropped, as is one longer than the VNIC's MRU (MTU + 18: frame without FCS, one tag;
//! before VNIC_CFG sets one, the largest the device takes) or arriving before the VNIC has rings. The VNIC's RSS table (or its default ring pair) picks
//! the RX ring and its completion ring ([`super::rss`]); VLAN tags are stripped into the
//! completion when the VNIC asks for it.
//!
//! Placement: the next posted RX BD (type RX_PACKET) gives the buffer; the frame is written at
//! its address (2 bytes further with SOP_PAD). A frame larger than the buffer consumes it and
//! completes with BUFFER_ERROR "did not fit". No posted buffer, or no room for the two-entry
//! completion, drops the frame and counts a discard on the ring's statistics context.
//!
//! The completion is the P7 (v3) RX completion: type 0x17, length, the BD's opaque, RSS hash and
//! hash kind, the stripped tag, and the checksum results (IP_CS_CALC / L4_CS_CALC when the
//! device checked an IPv4 header / TCP or UDP checksum, with the error bits when wrong).

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::HwrmCfaL2SetRxMaskInput as M;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::events::EventKind;
use crate::firmware::func::MAX_MTU;
use crate::firmware::l2_config::Vnic;
use crate::firmware::placement::Placement;
use crate::firmware::vnic::VLAN_ETH_HLEN;

use super::descriptors::*;
use super::engine::{Env, L2Engine, L2Ring};
use super::frame::{self, L3, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP, Parsed, TPID_8021Q};
use super::rss::{self, HashKind};
use super::rx_agg;
use super::stats::cast_of;

/// The v3 "extended op" of an L4 hash (bnxt.h `EXT_OP_INNER_4`).
pub(super) const EXT_OP_L4: u32 = 0x0;
/// The v3 "extended op" the model writes for an address-only hash. bnxt.h names only the L4 and
/// flow-label values (0, 2, 8, 0xa); bnxt_en reads every other value as an L3 hash, and 1 is
/// the model's choice among them.
pub(super) const EXT_OP_L3: u32 = 0x1;

/// Whether `vnic`'s receive mask takes a frame to `dst`.
fn mask_takes(vnic: &Vnic, dst: &[u8; 6]) -> bool {
    let m = vnic.rx_mask;
    if m & M::MASK_PROMISCUOUS != 0 {
        return true;
    }
    if dst == &[0xff; 6] {
        return m & M::MASK_BCAST != 0;
    }
    if dst[0] & 1 != 0 {
        return m & M::MASK_ALL_MCAST != 0 || (m & M::MASK_MCAST != 0 && vnic.mcast.contains(dst));
    }
    false
}

impl L2Engine {
    /// A frame from the wire arrives at `now`.
    pub fn receive(&mut self, now: Duration, f: &[u8], env: &mut Env<'_>) {
        let Some(p) = frame::parse(f) else {
            self.counters.drop_rx("runt");
            return;
        };
        let fw = env.fw;
        let l2 = &fw.l2;
        let vlan_id = p.vlan.map(|(_, tci)| tci & 0xfff);
        let vnic_id = l2.filter_vnic(&p.dst, vlan_id).or_else(|| {
            let mut order: Vec<u16> = l2.default_vnic().into_iter().collect();
            order.extend(l2.vnics().keys().copied().filter(|v| Some(*v) != l2.default_vnic()));
            order.into_iter().find(|v| mask_takes(&l2.vnics()[v], &p.dst))
        });
        let Some(vnic_id) = vnic_id else {
            self.drop_frame(now, f, "no L2 filter or receive mask takes it", None, env);
            return;
        };
        let Some(vnic) = l2.vnics().get(&vnic_id) else {
            self.drop_frame(now, f, "its filter names a VNIC that is gone", None, env);
            return;
        };
        let mru = if vnic.mru == 0 { MAX_MTU + VLAN_ETH_HLEN } else { vnic.mru };
        if f.len() > usize::from(mru) {
            self.drop_frame(now, f, "longer than the VNIC's MRU", None, env);
            return;
        }
        let Some(rss::Steering { rx: rx_id, cmpl: cq_id, hash }) = rss::select(vnic, &p, f) else {
            self.drop_frame(now, f, "VNIC has no RX ring", None, env);
            return;
        };
        let strip = vnic.vlan_strip && p.vlan.is_some();
        let placement = vnic.placement;
        self.place(now, f, &p, (rx_id, cq_id), hash, (strip, placement), env);
    }

    fn drop_frame(&mut self, now: Duration, f: &[u8], why: &'static str, stat: Option<u32>, env: &mut Env<'_>) {
        self.counters.drop_rx(why);
        self.port.rx.discards += 1;
        self.port.rx.discard_bytes += f.len() as u64;
        if let Some(s) = stat.and_then(|s| self.stats.get(s, env.fw, now)) {
            s.rx_discards += 1;
        }
        env.rec.record(now, EventKind::FrameDropped { reason: format!("L2: {why}") });
    }

    /// Put frame `f` into the next buffer of RX ring `rx_id` (continued in the buffers of its
    /// aggregation ring when the VNIC's placement splits it: [`super::rx_agg`]) and complete it
    /// on `cq_id`.
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        now: Duration,
        f: &[u8],
        p: &Parsed,
        (rx_id, cq_id): (u16, u16),
        hash: Option<(u32, HashKind)>,
        (strip, placement): (bool, Placement),
        env: &mut Env<'_>,
    ) {
        let stat = match self.ring(rx_id, env.fw) {
            Some(L2Ring::Rx(rx)) => rx.stat,
            _ => return self.drop_frame(now, f, "RX ring gone", None, env),
        };
        if self.cq_room(cq_id, env.fw) < 2 {
            return self.drop_frame(now, f, "completion ring full", stat, env);
        }
        let Some(L2Ring::Rx(rx)) = self.ring(rx_id, env.fw) else { return };
        if rx.bds.available() == 0 {
            return self.drop_frame(now, f, "no RX buffer posted", stat, env);
        }
        let bd = match rx.bds.peek(env.mem, 0) {
            Ok(b) => RxBd::read_from_bytes(&b).expect("16 bytes"),
            Err(e) => {
                self.counters.dma_errors += 1;
                self.warn_once(format!("RX ring {rx_id}: BD not readable: {e}"));
                return self.drop_frame(now, f, "RX BD not readable", stat, env);
            }
        };
        let bd_flags = bd.len_flags_type.get();
        let (data, tci) = if strip {
            let (tpid, tci) = p.vlan.expect("checked by the caller");
            (frame::strip_vlan(f), Some((tpid, tci)))
        } else {
            (f.to_vec(), None)
        };
        let pad = if bd_flags & RX_BD_FLAGS_SOP_PAD != 0 { 2 } else { 0 };
        let buf_len = (bd_flags >> RX_BD_LEN_SHIFT) as usize;
        let packet_bd = bd_flags & RX_BD_TYPE_MASK == RX_BD_TYPE_RX_PACKET;
        // Split across aggregation buffers, when the VNIC's placement says so and the ring has them.
        let agg = rx_agg::agg_ring_of(env.fw, rx_id)
            .zip(rx_agg::split(&placement, &data, p, buf_len.saturating_sub(pad)))
            .filter(|_| packet_bd);
        let mut aggs: Vec<(RxBd, usize)> = Vec::new();
        if let Some((agg_id, cut)) = agg {
            match self.take_agg_bufs(agg_id, data.len() - cut.head, env) {
                Ok(a) => aggs = a,
                Err(why) => return self.drop_frame(now, f, why, stat, env),
            }
            if self.cq_room(cq_id, env.fw) < 2 + aggs.len() as u32 {
                return self.drop_frame(now, f, "completion ring full", stat, env);
            }
        }
        let head = agg.map_or(data.len(), |(_, cut)| cut.head);
        let Some(L2Ring::Rx(rx)) = self.ring(rx_id, env.fw) else { return };
        rx.bds.advance(1);
        let mut errors = 0u32;
        if !packet_bd {
            self.warn_once(format!(
                "RX ring {rx_id}: BD type 0x{:x} is not an RX packet BD",
                bd_flags & RX_BD_TYPE_MASK
            ));
            errors |= RX_CMP_ERRORS_DID_NOT_FIT;
        } else if head + pad > buf_len {
            errors |= RX_CMP_ERRORS_DID_NOT_FIT;
        } else if let Err(e) = self.place_parts(&data, head, (bd.haddr.get() + pad as u64, &aggs), env) {
            self.counters.dma_errors += 1;
            self.warn_once(format!("RX ring {rx_id}: buffer not writable: {e}"));
            env.rec.record(now, EventKind::DmaFailed { during: "writing a received frame", error: e });
            errors |= RX_CMP_ERRORS_DID_NOT_FIT;
        }
        if let Some((agg_id, _)) = agg
            && let Some(L2Ring::Rx(a)) = self.ring(agg_id, env.fw)
        {
            a.bds.advance(aggs.len() as u32);
        }
        let placed = Placed { head, placement: agg.map_or(0, |(_, c)| c.placement), aggs: &aggs };
        let entries = completion(&data, p, bd.opaque.get(), hash, tci, errors, &placed);
        if !self.write_cq(now, cq_id, &entries, env) {
            return self.drop_frame(now, f, "completion not written", stat, env);
        }
        let s = stat.and_then(|s| self.stats.get(s, env.fw, now));
        if errors != 0 {
            if let Some(s) = s {
                s.rx_errors += 1;
            }
            self.counters.drop_rx("buffer error (did not fit)");
            return;
        }
        let cast = cast_of(&p.dst);
        if let Some(s) = s {
            s.rx_pkts[cast] += 1;
            s.rx_bytes[cast] += data.len() as u64;
        }
        self.port.rx.count(&p.dst, f.len(), p.vlan.is_some(), 0);
        self.counters.rx_frames += 1;
        if !aggs.is_empty() {
            self.counters.rx_agg_bufs += aggs.len() as u64;
        }
        tracing::trace!(rx = rx_id, cq = cq_id, len = f.len(), aggs = aggs.len(), "L2 frame received");
    }

    /// The aggregation BDs `tail` bytes take, in ring order, with the bytes each gets (not yet
    /// consumed), or why they cannot be had.
    fn take_agg_bufs(
        &mut self,
        agg_id: u16,
        tail: usize,
        env: &mut Env<'_>,
    ) -> Result<Vec<(RxBd, usize)>, &'static str> {
        let Some(L2Ring::Rx(a)) = self.ring(agg_id, env.fw) else { return Err("aggregation ring gone") };
        let mut out = Vec::new();
        let mut left = tail;
        while left > 0 {
            if out.len() == rx_agg::MAX_AGG_BUFS {
                return Err("more than 31 aggregation buffers needed");
            }
            if out.len() as u32 >= a.bds.available() {
                return Err("no aggregation buffer posted");
            }
            let bd = a.bds.peek(env.mem, out.len() as u32).map_err(|_| "aggregation BD not readable")?;
            let bd = RxBd::read_from_bytes(&bd).expect("16 bytes");
            let flags = bd.len_flags_type.get();
            let len = (flags >> RX_BD_LEN_SHIFT) as usize;
            if flags & RX_BD_TYPE_MASK != rx_agg::RX_BD_TYPE_RX_AGG || len == 0 {
                return Err("aggregation BD of the wrong type or no length");
            }
            let n = len.min(left);
            out.push((bd, n));
            left -= n;
        }
        Ok(out)
    }

    /// Write `data[..head]` at `at` and the rest into the aggregation buffers `aggs`.
    fn place_parts(
        &mut self,
        data: &[u8],
        head: usize,
        (at, aggs): (u64, &[(RxBd, usize)]),
        env: &mut Env<'_>,
    ) -> Result<(), crate::host_memory::DmaError> {
        env.mem.write(at, &data[..head])?;
        let mut from = head;
        for (bd, n) in aggs {
            env.mem.write(bd.haddr.get(), &data[from..from + n])?;
            from += n;
        }
        Ok(())
    }
}

/// How a frame was placed: the RX buffer's part, the placement code and the aggregation
/// buffers with their lengths.
struct Placed<'a> {
    head: usize,
    placement: u32,
    aggs: &'a [(RxBd, usize)],
}

/// The entries of a v3 RX completion for `data` (as placed) parsed as `p` (as received): the two
/// of the packet, then one per aggregation buffer.
fn completion(
    data: &[u8],
    p: &Parsed,
    opaque: u32,
    hash: Option<(u32, HashKind)>,
    tag: Option<(u16, u16)>,
    errors: u32,
    placed: &Placed<'_>,
) -> Vec<[u8; ENTRY_BYTES]> {
    let itype: u32 = match (p.l3, p.l4(usize::MAX).map(|l| l.0)) {
        (L3::Other, _) => 0,
        (_, Some(PROTO_TCP)) => 2,
        (_, Some(PROTO_UDP)) => 3,
        (_, Some(PROTO_ICMP | PROTO_ICMPV6)) => 7,
        _ => 1,
    };
    let mut lo = RxCmplV3::new_zeroed();
    let mut flags = CMP_TYPE_RX_L2_V3 | (itype << RX_CMP_ITYPE_SHIFT) | (placed.placement << rx_agg::PLACEMENT_SHIFT);
    if errors != 0 {
        flags |= RX_CMP_FLAGS_ERROR;
    }
    let mut misc = (placed.aggs.len() as u32) << rx_agg::AGG_BUFS_SHIFT;
    if let Some((h, kind)) = hash {
        flags |= RX_CMP_FLAGS_RSS_VALID;
        let op = if kind == HashKind::L4 { EXT_OP_L4 } else { EXT_OP_L3 };
        misc |= op << RX_CMP_RSS_EXT_OP_SHIFT;
        lo.rss_hash = h.into();
    }
    let mut hi = RxCmplV3Hi::new_zeroed();
    let mut errs = errors;
    if let Some((tpid, tci)) = tag {
        let sel: u32 = if tpid == TPID_8021Q { 1 } else { 0 };
        misc |= RX_CMP_METADATA1_VALID | (sel << RX_CMP_METADATA1_TPID_SHIFT);
        errs |= u32::from(tci) << RX_CMP_METADATA0_SHIFT;
    }
    lo.len_flags_type = (flags | ((placed.head as u32) << RX_CMP_LEN_SHIFT)).into();
    lo.opaque = opaque.into();
    lo.misc_v1 = misc.into();
    let mut flags2 = 0;
    if errors == 0 {
        let check = frame::check_checksums(data, &frame::parse(data).unwrap_or(*p));
        if let Some(ok) = check.ip {
            flags2 |= RX_CMP_FLAGS2_IP_CS_CALC;
            if !ok {
                errs |= RX_CMP_ERRORS_IP_CS;
            }
        }
        if let Some(ok) = check.l4 {
            flags2 |= RX_CMP_FLAGS2_L4_CS_CALC;
            if !ok {
                errs |= RX_CMP_ERRORS_L4_CS;
            }
        }
    }
    if matches!(p.l3, L3::V6 { .. }) {
        flags2 |= RX_CMP_FLAGS2_IP_TYPE;
    }
    hi.flags2 = flags2.into();
    hi.errors_v2 = errs.into();
    let mut out = vec![lo.as_bytes().try_into().expect("16 bytes"), hi.as_bytes().try_into().expect("16 bytes")];
    out.extend(placed.aggs.iter().map(|(bd, n)| rx_agg::agg_completion(*n, bd.opaque.get())));
    out
}
