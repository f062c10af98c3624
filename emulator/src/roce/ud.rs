//! The unreliable-datagram data path: UD SEND Only packets out of a UD QP's send WQEs and into
//! its receive WQEs (IBA Vol 1 §9.2-9.3: BTH + DETH, no acknowledgements; §10.2.4 Q_Keys).
//!
//! Sending (roce_hsi.h `sq_send`; bnxt_re qplib_fp.c `bnxt_qplib_post_send` for UD: `q_key`,
//! `dst_qp`, `avid`): each SEND (or SEND with immediate) WQE, read in RTS, becomes one packet to
//! the address vector `avid` names (CREATE_AH: destination MAC and GID, source GID) and QP
//! `dst_qp`, with the WQE's Q_Key in the DETH (the QP's own when the WQE's has its high bit set,
//! IBA §10.2.4) and the QP's next PSN. It completes as soon as it is sent (nothing acknowledges
//! it). A message longer than the path MTU completes with LOCAL_LENGTH_ERR; an AV id that names
//! no AH of the QP's PD, a WQE type other than SEND and a source GID that is gone complete with
//! LOCAL_QP_OPERATION_ERR; memory the SGEs cannot reach with LOCAL_PROTECTION_ERR.
//!
//! A send error moves the QP from RTS to SQE, the send queue error state (IBA Vol 1 §10.3.1: a
//! UD QP's failed send completes in error and takes the QP to SQE; its receive queue goes on
//! working): WQEs posted after the failed one complete flushed, receives still take packets, and
//! MODIFY_QP SQE→RTS starts the send queue again. That is the recovery ib_mad carries out on QP1
//! (Linux mad.c `ib_mad_send_error`: "Send errors will transition the QP to SQE", then RTS with
//! `cur_qp_state` SQE, then the flushed MADs posted again). No QP error notification goes to the
//! CREQ: IBA reports a send queue error through the completion alone (the affiliated
//! asynchronous "local work queue catastrophic error" is for QPs that enter ERR, §11.6.3), and
//! bnxt_re passes a notification on as IB_EVENT_QP_FATAL (ib_verbs.c
//! `bnxt_re_handle_qp_async_event`), which ib_mad logs as a fatal error on the MAD QP.
//!
//! The GSI QP (QP1) is a datagram QP too: on P5 and P7 bnxt_re creates it as CREATE_QP type GSI
//! in "UD mode" (ib_verbs.c `bnxt_re_init_qp_type`: "For Thor always force UD mode",
//! `BNXT_RE_GSI_MODE_UD`), writes its sends as the same `sq_send` + `sq_ud_ext_hdr` WQE as a UD
//! QP's (ib_verbs.c `bnxt_re_build_send_wqe` fills the AV, remote QPN and Q_Key for both,
//! `is_ud_qp`; qplib_fp.c `bnxt_qplib_post_send`: q_key, dst_qp, avid for TYPE_UD and TYPE_GSI alike;
//! the raw `sq_send_raweth_qp1` WQE with driver-built headers, `bnxt_re_build_qp1_send_v2`, is
//! only for the older chips' CREATE_QP1 type), and reads its receives as `cq_res_ud`
//! (`bnxt_qplib_cq_process_res_ud`; ib_verbs.c `bnxt_re_process_res_ud_wc` marks them IB_WC_GRH
//! with the source MAC and the network header type on the GSI QP; `cq_res_raweth_qp1` is the
//! older chips' format). So ib_mad's MADs are UD SEND Only packets from QP 1 with ib_mad's Q_Key
//! (the WQE's 0x80010000, `IB_QP1_QKEY`, whose high bit asks for the QP's own, also 0x80010000)
//! and the default P_Key, which rdma_rxe and other RoCE v2 stacks take as GSI datagrams.
//!
//! Receiving: a packet for a UD QP in RTR, RTS, SQD or SQE with a UD opcode and the QP's Q_Key takes the
//! next receive WQE; one with another Q_Key, another opcode, a QP not ready or no receive WQE
//! posted is dropped and counted (UD has no RNR NAK). The receive buffer gets the 40-byte GRH
//! area first, then the payload: for RoCE v2 over IPv4 the area's last 20 bytes are the IPv4
//! header as received and the rest is zero (the layout ib_core's `ib_get_rdma_header_version`
//! and rdma-core's `ibv_init_ah_from_wc` read; libbnxt_re reports every UD receive with
//! IBV_WC_GRH). The CQE (`cq_res_ud`) carries the length including those 40 bytes, the sender's
//! QP (`src_qp_low` and the top 8 bits above the wr_id), its MAC, immediate data and the RoCE v2
//! IPv4 flag (libbnxt_re verbs.c `bnxt_re_fill_ud_cqe`; bnxt_re qplib_fp.c
//! `bnxt_qplib_cq_process_res_ud`). A buffer too small for GRH and payload completes with
//! LOCAL_LENGTH_ERR and moves the QP to ERR.
//!
//! Not modelled: the AH's hop limit, traffic class and flow label (frames carry the defaults of
//! [`crate::net`]), P_Key checks beyond the default partition (every packet carries 0xffff),
//! and SRQs on UD QPs (CREATE_QP refuses them).

use std::net::Ipv4Addr;
use std::time::Duration;

use bnxt_hsi::roce::cqe::{CQE_BYTES, CqeType, type_toggle};
use bnxt_hsi::roce::gid::ipv4_of_gid;
use bnxt_hsi::roce::layouts::{CmdqCreateQp, CqResUd, CreqQpErrorNotification as QpErr, SqBase};
use bnxt_hsi::roce::qp::QpState;
use zerocopy::{FromZeros, IntoBytes};

use crate::events::EventKind;
use crate::net::bth::BthRepr;
use crate::net::ext::DethRepr;
use crate::net::ipv4::Ipv4Packet;
use crate::net::sealed::WireFrame;
use crate::net::source_port::roce_source_port;
use crate::net::{MacAddr, Opcode, Path, RoceFrame, Transport, build_frame_with};
use crate::roce::transport::memory::{gather_sges, scatter_sges};
use crate::roce::transport::{AccessError, RecvCompletion, RecvKind, ReqStatus, RespStatus, SendCompletion, SendOp};

use super::ah::AhTable;
use super::datapath::{DataPath, Done, complete, flushed_recv};
use super::engine::Env;
use super::gid::GidTable;
use super::memory::QpMemory;
use super::qp::Qp;
use super::shared::Shared;
use super::state::RoceState;
use super::wqe::SqWqe;

/// Bytes of the GRH area at the start of a UD receive buffer (the size of an IBA GRH; Linux
/// rdma/ib_verbs.h `union rdma_network_hdr`).
pub(super) const GRH_BYTES: usize = 40;
/// Where the IPv4 header sits in the GRH area for RoCE v2 over IPv4 (its last 20 bytes:
/// `rdma_network_hdr.roce4grh` after 20 reserved bytes).
pub(super) const GRH_IPV4_OFFSET: usize = 20;
/// The Q_Key bit that asks for the QP's own Q_Key instead of the WQE's (IBA §10.2.4).
const QKEY_USE_QP: u32 = 0x8000_0000;

/// A UD receive completion: what a `cq_res_ud` carries besides the common fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UdRecv {
    /// The common part (wr_id, status, bytes, immediate data, solicited).
    pub common: RecvCompletion,
    /// The sending QP (DETH source QP).
    pub src_qp: u32,
    /// The sender's MAC.
    pub src_mac: [u8; 6],
}

/// Why a UD send failed: the completion status and what was wrong.
type SendFailure = (ReqStatus, String);

impl DataPath {
    /// Take the send WQEs posted to datagram QP `qpn` (in RTS, SQE or ERR) off its ring: sent in
    /// RTS, flushed in SQE and ERR; and, in ERR, flush the receive WQEs it holds.
    pub(super) fn ud_sends(
        &mut self,
        sh: &mut Shared,
        now: Duration,
        qpn: u32,
        env: &mut Env<'_>,
        done: &mut Vec<Done>,
    ) {
        let RoceState { qps, keys, gids, ahs, .. } = &mut sh.st;
        let Some(qp) = qps.get_mut(&qpn) else { return };
        if qp.state == QpState::Err {
            done.extend(qp.early_recvs.drain(..).map(|w| Done::Recv(flushed_recv(w.id))));
        }
        if !matches!(qp.state, QpState::Rts | QpState::Sqe | QpState::Err) {
            return;
        }
        let force = qp.flags & CmdqCreateQp::QP_FLAGS_FORCE_COMPLETION != 0;
        while let Some(taken) = qp.take_send_wqe(env.mem) {
            sh.report.counters.wqes += 1;
            let (seq, w) = match taken {
                Ok((seq, _, w)) => (seq, w),
                Err((seq, slot, e)) => {
                    sh.report.counters.bad_wqes += 1;
                    let reason = format!("SQ WQE at slot {slot}: {e}");
                    env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason });
                    done.push(Done::Refused { send: true, id: seq });
                    send_queue_error(qp);
                    continue;
                }
            };
            let imm = (w.wqe_type == SqBase::WQE_TYPE_SEND_W_IMMEAD).then_some(w.imm);
            let op = SendOp::Send { imm };
            if qp.state != QpState::Rts {
                done.push(Done::Send(SendCompletion { id: seq, status: ReqStatus::Flushed, op, bytes: 0 }));
                continue;
            }
            // Inline data comes with the WQE itself (`w.inline`), not through the memory view.
            let no_inline = std::collections::BTreeMap::new();
            let mut mem = QpMemory { keys, mem: env.mem, pd: qp.pd, inline: &no_inline, dma_errors: 0 };
            let mut frame = Vec::new();
            let sent = ud_packet(qp, &w, ahs, gids, &mut mem, &mut frame);
            sh.report.counters.dma_errors += mem.dma_errors;
            match sent {
                Ok(()) => {
                    sh.report.counters.frames_sent += 1;
                    if sh.report.data_path_events {
                        let psn = qp.attrs.sq_psn.wrapping_sub(1) & 0xff_ffff;
                        let opcode = if imm.is_some() { Opcode::UdSendOnlyImm } else { Opcode::UdSendOnly };
                        let len = frame.len();
                        env.rec
                            .record(now, EventKind::FrameSent { qp: qpn, opcode: opcode.code(), psn, len, aeth: None });
                    }
                    self.route(gids, &mut sh.report.counters, now, WireFrame::Plain(frame));
                    if w.signaled() || force {
                        done.push(Done::Send(SendCompletion { id: seq, status: ReqStatus::Ok, op, bytes: w.length }));
                    }
                }
                Err((status, what)) => {
                    let why = format!("UD send WQE {seq}: {} ({what})", status.name());
                    env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason: why });
                    done.push(Done::Send(SendCompletion { id: seq, status, op, bytes: 0 }));
                    send_queue_error(qp);
                }
            }
        }
    }

    /// A checked RoCE frame for UD QP `qpn`.
    pub(super) fn ud_frame(
        &mut self,
        sh: &mut Shared,
        now: Duration,
        qpn: u32,
        frame: &RoceFrame<'_>,
        env: &mut Env<'_>,
    ) {
        let mut done = Vec::new();
        let RoceState { qps, keys, .. } = &mut sh.st;
        let Some(qp) = qps.get_mut(&qpn) else { return };
        let why = match (frame.transport.deth, qp.state) {
            (None, _) => Some("not a UD opcode".to_string()),
            (_, s) if !matches!(s, QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe) => {
                Some(format!("QP in {}", s.name()))
            }
            (Some(d), _) if d.qkey != qp.attrs.qkey => Some(format!("Q_Key 0x{:x} is not the QP's", d.qkey)),
            _ if qp.early_recvs.is_empty() => Some("no receive WQE posted".to_string()),
            _ => None,
        };
        if let Some(why) = why {
            sh.report.counters.ud_dropped += 1;
            env.rec.record(now, EventKind::FrameDropped { reason: format!("UD QP {qpn}: {why}") });
            return;
        }
        sh.report.counters.frames_received += 1;
        let deth = frame.transport.deth.expect("checked above");
        let wqe = qp.early_recvs.pop_front().expect("checked above");
        let mut grh = [0u8; GRH_BYTES];
        let ip = &frame_ipv4_header(frame);
        grh[GRH_IPV4_OFFSET..].copy_from_slice(ip);
        let mut mem = QpMemory { keys, mem: env.mem, pd: qp.pd, inline: &qp.inline, dma_errors: 0 };
        let wrote = scatter_sges(&mut mem, &wqe.sges, 0, &grh)
            .and_then(|ok| Ok(ok && scatter_sges(&mut mem, &wqe.sges, GRH_BYTES as u64, frame.payload)?));
        sh.report.counters.dma_errors += mem.dma_errors;
        let status = match wrote {
            Ok(true) => RespStatus::Ok,
            Ok(false) => RespStatus::LocalLength,
            Err(AccessError::Dma { .. }) => RespStatus::LocalAccess,
            Err(_) => RespStatus::LocalProtection,
        };
        let bytes = if status == RespStatus::Ok { (GRH_BYTES + frame.payload.len()) as u32 } else { 0 };
        let common = RecvCompletion {
            id: wqe.id,
            status,
            kind: RecvKind::Send,
            bytes,
            imm: frame.transport.immdt,
            solicited: frame.transport.bth.solicited,
        };
        done.push(Done::UdRecv(UdRecv { common, src_qp: deth.src_qp, src_mac: frame.eth.src.0 }));
        if status != RespStatus::Ok {
            let reason = match status {
                RespStatus::LocalLength => QpErr::RES_ERR_STATE_REASON_RES_EXCEEDS_WQE,
                _ => QpErr::RES_ERR_STATE_REASON_RES_MEMORY_ERROR,
            };
            qp.state = QpState::Err;
            self.queue_qp_error(qpn, 0, reason);
            done.extend(qp.early_recvs.drain(..).map(|w| Done::Recv(flushed_recv(w.id))));
            sh.st.dirty.insert(qpn);
        }
        if sh.report.data_path_events {
            let b = &frame.transport.bth;
            let len = frame.payload.len();
            env.rec.record(now, EventKind::FrameReceived { qp: qpn, opcode: b.opcode.code(), psn: b.psn, len });
        }
        for d in done {
            complete(sh, now, qpn, d, env);
        }
        self.post_qp_errors(sh, now, env);
        self.service_dirty(sh, now, env);
        sh.collect_irqs(now, env.rec);
    }
}

/// A send queue error (the failed WQE's refusal is already recorded): a QP in RTS moves to SQE
/// (IBA Vol 1 §10.3.1); in SQE or ERR it stays where it is.
fn send_queue_error(qp: &mut Qp) {
    if qp.state == QpState::Rts {
        qp.state = QpState::Sqe;
        tracing::debug!(qp = qp.id, "send queue error: SQE");
    }
}

/// The received frame's IPv4 header, written again from its checked fields (the parsed frame
/// keeps no bytes of it; the header has no options, so the fields are all of it): what the GRH
/// area's last 20 bytes hold.
fn frame_ipv4_header(frame: &RoceFrame<'_>) -> [u8; 20] {
    let mut b = [0u8; 20];
    // A parsed header re-emits (its length fit when it was received).
    let _ = frame.ip.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
    b
}

/// Build the packet UD send WQE `w` of `qp` asks for into `out`, and move the QP's PSN on.
fn ud_packet(
    qp: &mut Qp,
    w: &SqWqe,
    ahs: &AhTable,
    gids: &GidTable,
    mem: &mut QpMemory<'_>,
    out: &mut Vec<u8>,
) -> Result<(), SendFailure> {
    let bad_av = |what: String| (ReqStatus::LocalQpOperation, what);
    let format = |what: String| (ReqStatus::LocalQpOperation, what);
    let opcode = match w.wqe_type {
        SqBase::WQE_TYPE_SEND => Opcode::UdSendOnly,
        SqBase::WQE_TYPE_SEND_W_IMMEAD => Opcode::UdSendOnlyImm,
        t => return Err(format(format!("WQE type 0x{t:x} on a UD QP (only SEND)"))),
    };
    let avid = w.avid;
    let ah = ahs.get(avid).ok_or_else(|| bad_av(format!("avid {avid} is not an AH")))?;
    if ah.pd != qp.pd {
        return Err(bad_av(format!("AH {avid} is in PD {}, the QP in PD {}", ah.pd, qp.pd)));
    }
    let sgid = gids
        .get(ah.sgid_index)
        .ok_or_else(|| bad_av(format!("AH {avid}: sgid_index {} holds no GID", ah.sgid_index)))?;
    let (src_ip, dst_ip) = match (ipv4_of_gid(&sgid.gid), ipv4_of_gid(&ah.dgid)) {
        (Some(s), Some(d)) => (Ipv4Addr::from(s), Ipv4Addr::from(d)),
        _ => return Err(bad_av(format!("AH {avid}: a GID is not IPv4-mapped"))),
    };
    // A UD message is one packet (IBA: UD has SEND Only opcodes alone): at most the path MTU.
    let mtu = if qp.set_mask & bnxt_hsi::roce::layouts::CmdqModifyQp::MODIFY_MASK_PATH_MTU != 0 {
        256u32 << qp.attrs.path_mtu.min(4)
    } else {
        4096
    };
    if w.length > mtu {
        let what = format!("{} bytes exceed the path MTU {mtu}", w.length);
        return Err((ReqStatus::LocalLength, what));
    }
    let (src_mac, dst_mac) = (MacAddr(sgid.mac), MacAddr(ah.dest_mac));
    let path = Path {
        src_mac,
        dst_mac,
        src_ip,
        dst_ip,
        src_port: roce_source_port(dst_mac, src_mac, dst_ip, src_ip, w.dst_qp),
    };
    let psn = qp.attrs.sq_psn & 0xff_ffff;
    let mut bth = BthRepr::new(opcode, w.dst_qp, psn);
    bth.solicited = w.solicited();
    let qkey = if w.q_key & QKEY_USE_QP != 0 { qp.attrs.qkey } else { w.q_key };
    let t = Transport {
        deth: Some(DethRepr { qkey, src_qp: qp.id }),
        immdt: (opcode == Opcode::UdSendOnlyImm).then_some(w.imm),
        ..Transport::bth(bth)
    };
    let len = w.length as usize;
    let built = build_frame_with(&path, &t, len, out, |dst| match &w.inline {
        Some(data) => {
            dst.copy_from_slice(&data[..len]);
            Ok(())
        }
        None => {
            let held: u64 = w.sges.iter().map(|s| u64::from(s.len)).sum();
            if held < len as u64 {
                return Err(UdBuild::Short);
            }
            gather_sges(mem, &w.sges, 0, dst).map_err(UdBuild::Access)
        }
    });
    match built {
        Ok(()) => {
            qp.attrs.sq_psn = (psn + 1) & 0xff_ffff;
            Ok(())
        }
        Err(UdBuild::Short) => Err((ReqStatus::LocalLength, format!("the SGEs hold less than length {len}"))),
        Err(UdBuild::Access(e)) => Err((ReqStatus::LocalProtection, e.to_string())),
        Err(UdBuild::Wire(e)) => Err(format(e.to_string())),
    }
}

/// Why a UD packet could not be built.
#[derive(Debug)]
enum UdBuild {
    /// The SGEs hold less than `length`.
    Short,
    /// The SGEs' memory refused.
    Access(AccessError),
    /// The frame itself (cannot happen for a length within the MTU).
    Wire(crate::net::WireError),
}

impl From<crate::net::WireError> for UdBuild {
    fn from(e: crate::net::WireError) -> UdBuild {
        UdBuild::Wire(e)
    }
}

/// The `cq_res_ud` CQE of a UD QP's receive completion (`src` None for completions without a
/// packet: flushed or refused WQEs).
pub(super) fn ud_cqe(handle: u64, c: &RecvCompletion, src: Option<(u32, [u8; 6])>) -> [u8; CQE_BYTES] {
    let mut r = CqResUd::new_zeroed();
    r.length = ((c.bytes as u16) & CqResUd::LENGTH_MASK).into();
    r.imm_data = c.imm.unwrap_or(0).into();
    r.qp_handle = handle.into();
    r.cqe_type_toggle = type_toggle(CqeType::ResUd, false);
    r.status = c.status.code();
    let mut flags = CqResUd::FLAGS_ROCE_IP_VER_V2IPV4;
    if c.imm.is_some() {
        flags |= CqResUd::FLAGS_IMM;
    }
    r.flags = flags.into();
    let (src_qp, src_mac) = src.unwrap_or((0, [0; 6]));
    r.src_mac.as_mut_bytes().copy_from_slice(&src_mac);
    r.src_qp_low = ((src_qp & 0xffff) as u16).into();
    let high = ((src_qp >> 16) & 0xff) << 24;
    r.src_qp_high_srq_or_rq_wr_id = (high | ((c.id as u32) & CqResUd::SRQ_OR_RQ_WR_ID_MASK)).into();
    r.as_bytes().try_into().expect("32 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ud_cqe_splits_the_source_qp_as_libbnxt_re_joins_it() {
        let c = RecvCompletion {
            id: 0x12345,
            status: RespStatus::Ok,
            kind: RecvKind::Send,
            bytes: 40 + 100,
            imm: Some(0xdead_beef),
            solicited: false,
        };
        let b = ud_cqe(0x1111, &c, Some((0xab_cdef, [2, 0, 0, 0, 0, 9])));
        // cq_res_ud: length at 0, imm at 4, qp_handle at 8, src_mac at 16, src_qp_low at 22,
        // type at 24, status 25, flags 26, src_qp_high|wr_id at 28.
        assert_eq!(u16::from_le_bytes([b[0], b[1]]), 140);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 0xdead_beef);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x1111);
        assert_eq!(&b[16..22], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(u16::from_le_bytes([b[22], b[23]]), 0xcdef);
        assert_eq!(b[24] & 0x1e, CqResUd::CQE_TYPE_RES_UD);
        let flags = u16::from_le_bytes([b[26], b[27]]);
        assert_eq!(flags & CqResUd::FLAGS_ROCE_IP_VER_MASK, CqResUd::FLAGS_ROCE_IP_VER_V2IPV4);
        assert_ne!(flags & CqResUd::FLAGS_IMM, 0);
        let word = u32::from_le_bytes(b[28..32].try_into().unwrap());
        assert_eq!((word >> 24, word & 0xf_ffff), (0xab, 0x12345));
    }
}
