//! Transmit: taking packets from a TX ring when its SQ doorbell moves the producer (bnxt.c
//! `bnxt_start_xmit`, `bnxt_txr_db_kick`, `__bnxt_tx_int`; bnxt.h `struct tx_bd`, `tx_bd_ext`,
//! `tx_cmp`, `TX_OPAQUE_*`).
//!
//! A packet is a first BD, long (type 0x10, followed by an extended BD with the offload flags) or
//! short (type 0x00), then fragment BDs; the first BD's BD count covers them all (the extended BD
//! included) and the last carries PACKET_END. The device reads the buffers, applies the
//! offloads (VLAN insertion from `cfa_meta`, TCP/UDP and IPv4 checksums, LSO with the header
//! length and MSS of the extended BD), pads the frame to 60 bytes, sends it, and writes a
//! `tx_cmp` with the first BD's opaque to the ring's completion ring unless the packet asked for
//! none (NO_CMPL: bnxt_en counts its BDs off the next completion's opaque). A packet whose BDs are
//! malformed or unreadable completes with an error and sends nothing. When the completion ring
//! has no room the ring stops until the driver gives completions back.

use std::time::Duration;

use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::events::EventKind;

use super::descriptors::*;
use super::doorbell::L2Doorbell;
use super::engine::{Env, L2Engine, L2Ring};
use super::frame::{self, MIN_FRAME, TPID_8021AD, TPID_8021Q};
use super::stats::cast_of;

/// Largest packet the engine gathers from BDs (an LSO super-frame of 64 KiB plus headers).
pub(super) const MAX_PACKET: usize = 65_536 + 1024;
/// Largest BD count of a packet (bnxt.h `TX_MAX_BD_CNT`).
pub(super) const MAX_BDS: u32 = 32;

/// A packet taken from the ring, or why it could not be.
enum Gathered {
    /// The frames to send, the first BD's opaque and flags.
    Sent { frames: Vec<Vec<u8>>, opaque: u32, no_cmpl: bool },
    /// A packet that completes with error bits (and its opaque, and NO_CMPL).
    Failed { errors: u32, opaque: u32, no_cmpl: bool, why: String, unimplemented: bool },
}

impl L2Engine {
    /// An SQ doorbell: move the producer and send what was posted.
    pub(super) fn tx_doorbell(&mut self, now: Duration, db: &L2Doorbell, env: &mut Env<'_>) -> Result<(), String> {
        match self.ring(db.xid, env.fw) {
            Some(L2Ring::Tx(tx)) => tx.bds.set_producer(db.index, db.epoch).map_err(|e| e.to_string())?,
            Some(_) => return Err("not a TX ring".into()),
            None => return Err("no such ring".into()),
        }
        self.service_tx(now, db.xid, env);
        Ok(())
    }

    /// Send every whole packet posted on TX ring `id`.
    pub(super) fn service_tx(&mut self, now: Duration, id: u16, env: &mut Env<'_>) {
        loop {
            let Some(L2Ring::Tx(tx)) = self.ring(id, env.fw) else { return };
            let (cmpl, stat) = (tx.cmpl, tx.stat);
            let avail = tx.bds.available();
            if avail == 0 {
                return;
            }
            let first = match tx.bds.peek(env.mem, 0) {
                Ok(b) => TxBd::read_from_bytes(&b).expect("16 bytes"),
                Err(e) => {
                    self.counters.dma_errors += 1;
                    self.warn_once(format!("TX ring {id}: BD not readable ({e}); the ring stops"));
                    return;
                }
            };
            let flags = first.len_flags_type.get();
            let cnt = ((flags & TX_BD_FLAGS_BD_CNT_MASK) >> TX_BD_FLAGS_BD_CNT_SHIFT).max(1);
            if cnt > avail {
                if cnt > MAX_BDS || cnt > tx.bds.len() {
                    // Can never become whole: complete what is there as malformed.
                } else {
                    return; // the rest of the packet is not posted yet
                }
            }
            let no_cmpl = flags & TX_BD_FLAGS_NO_CMPL != 0;
            if !no_cmpl {
                match cmpl {
                    Some(c) if self.cq_room(c, env.fw) == 0 => {
                        self.blocked_tx.insert(id);
                        return;
                    }
                    _ => {}
                }
            }
            let take = cnt.min(avail);
            let gathered = self.gather(id, take, &first, env);
            let Some(L2Ring::Tx(tx)) = self.ring(id, env.fw) else { return };
            tx.bds.advance(take);
            self.counters.tx_packets += 1;
            let (opaque, no_cmpl, errors) = match gathered {
                Gathered::Sent { frames, opaque, no_cmpl } => {
                    for f in frames {
                        self.send_frame(now, f, stat, env);
                    }
                    (opaque, no_cmpl, 0)
                }
                Gathered::Failed { errors, opaque, no_cmpl, why, unimplemented } => {
                    self.counters.tx_errors += 1;
                    if unimplemented {
                        self.counters.unimplemented_offloads += 1;
                    }
                    if let Some(s) = stat.and_then(|s| self.stats.get(s, env.fw, now)) {
                        s.tx_errors += 1;
                    }
                    self.warn_once(format!("TX ring {id}: packet not sent: {why}"));
                    env.rec.record(now, EventKind::FrameDropped { reason: format!("TX ring {id}: {why}") });
                    (opaque, no_cmpl, errors)
                }
            };
            if !no_cmpl && let Some(c) = cmpl {
                let mut cmp = TxCmpl::new_zeroed();
                let err_flag = if errors != 0 { TX_CMP_FLAGS_ERROR } else { 0 };
                cmp.flags_type = (CMP_TYPE_TX_L2 | err_flag).into();
                cmp.opaque = opaque.into();
                cmp.errors_v = errors.into();
                let entry: [u8; ENTRY_BYTES] = cmp.as_bytes().try_into().expect("16 bytes");
                if self.write_cq(now, c, &[entry], env) {
                    self.counters.tx_completions += 1;
                }
            }
        }
    }

    /// Read the `cnt` BDs of the packet starting with `first`, gather its bytes and apply the
    /// offloads.
    fn gather(&mut self, id: u16, cnt: u32, first: &TxBd, env: &mut Env<'_>) -> Gathered {
        let flags = first.len_flags_type.get();
        let opaque = first.opaque.get();
        let no_cmpl = flags & TX_BD_FLAGS_NO_CMPL != 0;
        let fail = |errors: u32, why: String| Gathered::Failed { errors, opaque, no_cmpl, why, unimplemented: false };
        let declared = ((flags & TX_BD_FLAGS_BD_CNT_MASK) >> TX_BD_FLAGS_BD_CNT_SHIFT).max(1);
        if declared != cnt {
            return fail(TX_CMP_ERRORS_BAD_FORMAT, format!("BD count {declared} but only {cnt} BDs posted"));
        }
        let long = match flags & TX_BD_TYPE_MASK {
            TX_BD_TYPE_LONG => true,
            TX_BD_TYPE_SHORT => false,
            t => {
                return Gathered::Failed {
                    errors: TX_CMP_ERRORS_BAD_FORMAT,
                    opaque,
                    no_cmpl,
                    why: format!("first BD type 0x{t:x} (inline and push BDs are not modelled)"),
                    unimplemented: true,
                };
            }
        };
        if long && cnt < 2 {
            return fail(TX_CMP_ERRORS_BAD_FORMAT, "long BD without its extended BD".into());
        }
        let Some(L2Ring::Tx(tx)) = self.rings.get(&id) else {
            return fail(TX_CMP_ERRORS_BAD_FORMAT, "ring gone".into());
        };
        let mut bufs: Vec<(u64, usize)> = vec![(first.haddr.get(), (flags >> TX_BD_LEN_SHIFT) as usize)];
        let mut ext = None;
        let mut last_flags = flags;
        for i in 1..cnt {
            let raw = match tx.bds.peek(env.mem, i) {
                Ok(b) => b,
                Err(e) => return fail(TX_CMP_ERRORS_DMA_ERROR, format!("BD {i} not readable: {e}")),
            };
            if long && i == 1 {
                ext = Some(TxBdExt::read_from_bytes(&raw).expect("16 bytes"));
                continue;
            }
            let bd = TxBd::read_from_bytes(&raw).expect("16 bytes");
            let f = bd.len_flags_type.get();
            bufs.push((bd.haddr.get(), (f >> TX_BD_LEN_SHIFT) as usize));
            last_flags = f;
        }
        if last_flags & TX_BD_FLAGS_PACKET_END == 0 {
            return fail(TX_CMP_ERRORS_BAD_FORMAT, "last BD lacks PACKET_END".into());
        }
        let total: usize = bufs.iter().map(|b| b.1).sum();
        if total == 0 {
            return fail(TX_CMP_ERRORS_ZERO_LENGTH_PKT, "zero-length packet".into());
        }
        if total > MAX_PACKET {
            return fail(TX_CMP_ERRORS_EXCESSIVE_BD_LEN, format!("{total} bytes"));
        }
        let mut pkt = Vec::with_capacity(total);
        for (addr, len) in bufs {
            let start = pkt.len();
            pkt.resize(start + len, 0);
            if let Err(e) = env.mem.read(addr, &mut pkt[start..]) {
                self.counters.dma_errors += 1;
                return fail(TX_CMP_ERRORS_DMA_ERROR, format!("buffer not readable: {e}"));
            }
        }
        if pkt.len() < 14 {
            return fail(
                TX_CMP_ERRORS_BAD_FORMAT,
                format!("{}-byte packet is shorter than an Ethernet header", pkt.len()),
            );
        }
        match ext.map_or(Ok(vec![pkt.clone()]), |e| offloads(pkt, &e)) {
            Ok(frames) => Gathered::Sent { frames, opaque, no_cmpl },
            Err((why, unimplemented)) => {
                Gathered::Failed { errors: TX_CMP_ERRORS_BAD_FORMAT, opaque, no_cmpl, why, unimplemented }
            }
        }
    }

    /// Put a frame on the wire and count it.
    fn send_frame(&mut self, now: Duration, mut f: Vec<u8>, stat: Option<u32>, env: &mut Env<'_>) {
        if f.len() < MIN_FRAME {
            f.resize(MIN_FRAME, 0);
        }
        let dst: [u8; 6] = f[..6].try_into().expect("6 bytes");
        let tagged = frame::parse(&f).is_some_and(|p| p.vlan.is_some());
        self.port.tx.count(&dst, f.len(), tagged, 0);
        if let Some(s) = stat.and_then(|s| self.stats.get(s, env.fw, now)) {
            let c = cast_of(&dst);
            s.tx_pkts[c] += 1;
            s.tx_bytes[c] += f.len() as u64;
        }
        self.counters.tx_frames += 1;
        self.counters.tx_bytes += f.len() as u64;
        tracing::trace!(len = f.len(), "L2 frame sent");
        self.frames.push(f);
    }
}

/// Apply the extended BD's offloads to a gathered packet: the frames to send, or why not (and
/// whether the reason is an offload the model does not implement).
fn offloads(mut pkt: Vec<u8>, ext: &TxBdExt) -> Result<Vec<Vec<u8>>, (String, bool)> {
    let lflags = ext.hsize_lflags.get();
    let unsupported = TX_BD_FLAGS_STAMP | TX_BD_FLAGS_T_IP_CHKSUM | TX_BD_FLAGS_NO_CRC;
    if lflags & unsupported != 0 {
        return Err((
            format!(
                "offload flags 0x{:x} (timestamps, tunnel checksums, no-CRC) are not modelled",
                lflags & unsupported
            ),
            true,
        ));
    }
    let meta = ext.cfa_meta.get();
    let tag = match meta & TX_BD_CFA_META_KEY_MASK {
        0 => None,
        TX_BD_CFA_META_KEY_VLAN => {
            let tpid = match (meta & TX_BD_CFA_META_TPID_MASK) >> TX_BD_CFA_META_TPID_SHIFT {
                0 => TPID_8021AD,
                1 => TPID_8021Q,
                t => return Err((format!("VLAN TPID selector {t} (only 0x88a8 and 0x8100 are modelled)"), true)),
            };
            Some((tpid, (meta & (TX_BD_CFA_META_VID_MASK | TX_BD_CFA_META_PRI_MASK)) as u16))
        }
        k => return Err((format!("cfa_meta key 0x{:x} is not modelled", k >> 28), true)),
    };
    if ext.cfa_action.get() != 0 {
        return Err((format!("cfa_action 0x{:x} (switchdev steering) is not modelled", ext.cfa_action.get()), true));
    }
    // Offloads work on the packet as the driver built it; the tag goes in last (the LSO header
    // length counts the driver's headers only).
    let frames = if lflags & TX_BD_FLAGS_LSO != 0 {
        let hdr_len = ((lflags & TX_BD_HSIZE_MASK) >> TX_BD_HSIZE_SHIFT) as usize * 2;
        let mss = (ext.mss.get() & 0x7fff) as usize;
        frame::segment(&pkt, hdr_len, mss).map_err(|e| (format!("LSO: {e}"), false))?
    } else {
        if lflags & TX_BD_FLAGS_IP_CKSUM != 0 && !frame::fill_ipv4_checksum(&mut pkt) {
            return Err(("IP checksum asked for a packet without IPv4".into(), false));
        }
        if lflags & TX_BD_FLAGS_TCP_UDP_CHKSUM != 0 && !frame::fill_l4_checksum(&mut pkt) {
            return Err(("TCP/UDP checksum asked for a packet without TCP or UDP".into(), false));
        }
        vec![pkt]
    };
    Ok(match tag {
        Some((tpid, tci)) => frames.iter().map(|f| frame::insert_vlan(f, tpid, tci)).collect(),
        None => frames,
    })
}
