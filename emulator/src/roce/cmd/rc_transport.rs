//! What MODIFY_QP does to an RC QP's transport from RTR on: it is built at INIT→RTR (a
//! responder: IBA Vol 1 §10.3.1 has an RTR QP execute and answer requests, and rdma_rxe takes
//! requests from RTR on, rxe_recv.c `check_type_state`), its requester starts at RTR→RTS, it
//! drains at RTS→SQD and resumes at SQD→RTS, and attributes change under it in RTR, RTS and SQD
//! (with or without a state change; bnxt_re's `bnxt_re_modify_qp` checks a mask against Linux's
//! `ib_modify_qp_is_ok` only when it names a new state, so a mask without one reaches the
//! firmware as the caller gave it).
//!
//! Which changes the model takes after RTR, and how loudly:
//!
//! - applied to the transport: TIMEOUT, RETRY_CNT, RNR_RETRY, MIN_RNR_TIMER, PATH_MTU, ACCESS,
//!   MAX_RD_ATOMIC, MAX_DEST_RD_ATOMIC and the address vector (DGID, SGID_INDEX, DEST_MAC; the
//!   path is resolved again). Those IBA §11.2.4.2 lists for the transition (Linux verbs.c
//!   `qp_state_table`: RTR→RTS and RTS→RTS ACCESS and MIN_RNR_TIMER; SQD→SQD the address
//!   vector, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_RD_ATOMIC, MAX_DEST_RD_ATOMIC, ACCESS and
//!   MIN_RNR_TIMER; SQD→RTS ACCESS and MIN_RNR_TIMER) are taken silently; the others are taken
//!   with a warning naming them, since no public source shows P7 firmware refusing them;
//! - NOT_IMPLEMENTED: a different RQ_PSN or DEST_QP_ID after INIT→RTR, or SQ_PSN after RTR→RTS
//!   (IBA lists them for no later transition, and the model cannot renumber a connection under
//!   way); the same value again is accepted.
//! - EN_SQD_ASYNC_NOTIFY is kept and reported back; the drained notification itself is not sent
//!   (roce_hsi.h defines no CREQ event for it), which the data path logs and counts when the
//!   send queue drains.

use bnxt_hsi::roce::gid::ipv4_of_gid;
use bnxt_hsi::roce::layouts::CmdqModifyQp as M;
use bnxt_hsi::roce::qp::QpState;

use super::Refusal;
use super::modify_qp::mask_names;
use crate::net::{MacAddr, Path, source_port::roce_source_port};
use crate::roce::gid::GidTable;
use crate::roce::qp::{Qp, QpAttributes};
use crate::roce::state::RoceState;
use crate::roce::transport::{Limits, Mtu, QpAttrs, RcQp, RemoteAccess};

/// Attributes the transport is built from.
pub(super) const TRANSPORT_ATTRS: u32 = ADDRESS_VECTOR
    | M::MODIFY_MASK_PATH_MTU
    | M::MODIFY_MASK_TIMEOUT
    | M::MODIFY_MASK_RETRY_CNT
    | M::MODIFY_MASK_RNR_RETRY
    | M::MODIFY_MASK_RQ_PSN
    | M::MODIFY_MASK_SQ_PSN
    | M::MODIFY_MASK_MAX_RD_ATOMIC
    | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
    | M::MODIFY_MASK_MIN_RNR_TIMER
    | M::MODIFY_MASK_DEST_QP_ID
    | M::MODIFY_MASK_ACCESS;

/// The address vector's bits (IB_QP_AV as bnxt_re turns it into mask bits).
const ADDRESS_VECTOR: u32 = M::MODIFY_MASK_DGID
    | M::MODIFY_MASK_FLOW_LABEL
    | M::MODIFY_MASK_SGID_INDEX
    | M::MODIFY_MASK_HOP_LIMIT
    | M::MODIFY_MASK_TRAFFIC_CLASS
    | M::MODIFY_MASK_DEST_MAC;

/// Of [`TRANSPORT_ATTRS`], those IBA §11.2.4.2 lists (required or optional) for an RC QP's
/// transition `from` → `to` after INIT→RTR (Linux verbs.c `qp_state_table`).
fn iba_lists(from: QpState, to: QpState) -> u32 {
    use QpState::*;
    let few = M::MODIFY_MASK_ACCESS | M::MODIFY_MASK_MIN_RNR_TIMER;
    match (from, to) {
        (Rtr, Rts) => {
            few | M::MODIFY_MASK_TIMEOUT
                | M::MODIFY_MASK_RETRY_CNT
                | M::MODIFY_MASK_RNR_RETRY
                | M::MODIFY_MASK_SQ_PSN
                | M::MODIFY_MASK_MAX_RD_ATOMIC
        }
        (Rts, Rts) | (Sqd, Rts) => few,
        (Sqd, Sqd) => {
            few | ADDRESS_VECTOR
                | M::MODIFY_MASK_TIMEOUT
                | M::MODIFY_MASK_RETRY_CNT
                | M::MODIFY_MASK_RNR_RETRY
                | M::MODIFY_MASK_MAX_RD_ATOMIC
                | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
        }
        _ => 0,
    }
}

/// The source MAC and IPv4 address of the GID at `a.sgid_index`, checking that both GIDs are
/// IPv4-mapped RoCE v2 ones (the only kind modelled).
pub(super) fn resolve_source(gids: &GidTable, a: &QpAttributes) -> Result<(MacAddr, [u8; 4]), Refusal> {
    if a.network_type != M::NETWORK_TYPE_ROCEV2_IPV4 {
        return Err(Refusal::not_implemented(format!(
            "network type 0x{:x}: only RoCEv2 over IPv4 is modelled",
            a.network_type >> 6
        )));
    }
    let sgid =
        gids.get(a.sgid_index).ok_or_else(|| Refusal::invalid(format!("sgid_index {} holds no GID", a.sgid_index)))?;
    match (ipv4_of_gid(&sgid.gid), ipv4_of_gid(&a.dgid)) {
        (Some(src_ip), Some(_)) => Ok((MacAddr(sgid.mac), src_ip)),
        _ => Err(Refusal::not_implemented("RoCEv2 with GIDs that are not IPv4-mapped (IPv6)")),
    }
}

/// The transport attributes of `qp` with `a`, from the source it resolved. A QP created without
/// an ORRQ (IRRQ) gets an initiator (responder) depth of 0: it has nowhere to keep outstanding
/// READs (a guess, noted at CREATE_QP).
pub(super) fn transport_attrs(qp: &Qp, a: &QpAttributes, src: (MacAddr, [u8; 4])) -> Result<QpAttrs, Refusal> {
    let dst_ip =
        ipv4_of_gid(&a.dgid).ok_or_else(|| Refusal::not_implemented("a destination GID that is not IPv4-mapped"))?;
    let (src_mac, src_ip) = src;
    let dst_mac = MacAddr(a.dest_mac);
    let (src_ip, dst_ip) = (std::net::Ipv4Addr::from(src_ip), std::net::Ipv4Addr::from(dst_ip));
    let path = Path {
        src_mac,
        dst_mac,
        src_ip,
        dst_ip,
        src_port: roce_source_port(dst_mac, src_mac, dst_ip, src_ip, a.dest_qp),
    };
    let mtu = Mtu::from_bytes(256u32 << a.path_mtu).expect("checked at apply");
    let ord = if qp.orrq_addr == 0 { 0 } else { a.max_rd_atomic.saturating_sub(1) };
    let ird = if qp.irrq_addr == 0 { 0 } else { (a.max_dest_rd_atomic / 2).saturating_sub(1) };
    Ok(QpAttrs {
        qpn: qp.id,
        dest_qpn: a.dest_qp,
        path,
        mtu,
        sq_psn: a.sq_psn,
        rq_psn: a.rq_psn,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        min_rnr_timer: a.min_rnr_timer,
        max_rd_atomic: ord,
        max_dest_rd_atomic: ird,
        access: RemoteAccess {
            read: a.access.remote_read,
            write: a.access.remote_write,
            atomic: a.access.remote_atomic,
        },
    })
}

/// INIT→RTR of an RC QP with attributes `a`: resolve the path and build the responder.
pub(super) fn to_rtr(gids: &GidTable, qp: &mut Qp, a: &QpAttributes) -> Result<(), Refusal> {
    let src = resolve_source(gids, a)?;
    let t = RcQp::receiving(transport_attrs(qp, a, src)?, Limits::default())
        .map_err(|e| Refusal::invalid(e.to_string()))?;
    qp.src_mac = Some(src.0);
    qp.transport = Some(t);
    qp.state = QpState::Rtr;
    Ok(())
}

/// An RC QP in RTR, RTS or SQD going to `to` (one of those) with `mask` and the new attributes
/// `a`: refuse what cannot change, note what IBA does not list, then start, drain or resume the
/// requester and hand the transport the new attributes.
pub(super) fn step(st: &mut RoceState, id: u32, to: QpState, mask: u32, a: &QpAttributes) -> Result<(), Refusal> {
    let RoceState { qps, gids, unsourced, .. } = st;
    let qp = qps.get_mut(&id).ok_or_else(|| Refusal::invalid(format!("qp_cid {id} is not a QP")))?;
    let from = qp.state;
    let old = qp.attrs;
    let fixed = [
        (M::MODIFY_MASK_RQ_PSN, old.rq_psn != a.rq_psn, "RQ_PSN"),
        (M::MODIFY_MASK_DEST_QP_ID, old.dest_qp != a.dest_qp, "DEST_QP_ID"),
        (M::MODIFY_MASK_SQ_PSN, from != QpState::Rtr && old.sq_psn != a.sq_psn, "SQ_PSN"),
    ];
    for (bit, changed, name) in fixed {
        if mask & bit != 0 && changed {
            return Err(Refusal::not_implemented(format!(
                "changing {name} of a QP in {} is not modelled (IBA lists it for no transition after INIT to RTR)",
                from.name()
            )));
        }
    }
    let unlisted = mask & TRANSPORT_ATTRS & !iba_lists(from, to) & !fixed.iter().fold(0, |m, f| m | f.0);
    let src = if mask & ADDRESS_VECTOR != 0 {
        resolve_source(gids, a)?
    } else {
        let src_mac = qp.src_mac.ok_or_else(|| Refusal::invalid("no path resolved at RTR"))?;
        let src_ip = qp
            .transport
            .as_ref()
            .map(|t| t.attrs().path.src_ip.octets())
            .ok_or_else(|| Refusal::invalid("no transport built at RTR"))?;
        (src_mac, src_ip)
    };
    let attrs = transport_attrs(qp, a, src)?;
    let t = qp.transport.as_mut().ok_or_else(|| Refusal::invalid("no transport built at RTR"))?;
    let bad = |e: crate::roce::transport::AttrError| Refusal::invalid(e.to_string());
    match (from, to) {
        (QpState::Rtr, QpState::Rts) => t.ready_to_send(attrs).map_err(bad)?,
        _ => t.modify(attrs).map_err(bad)?,
    }
    match (from, to) {
        (QpState::Rts, QpState::Sqd) => t.drain_send_queue(),
        (QpState::Sqd, QpState::Rts) => t.resume_sending(),
        _ => {}
    }
    qp.src_mac = Some(src.0);
    qp.state = to;
    if unlisted != 0 {
        unsourced.push(format!(
            "MODIFY_QP {}→{} of an RC QP with {}: IBA Vol 1 §11.2.4.2 (Linux ib_modify_qp_is_ok) does not list \
             them for this transition, and no public source shows P7 firmware refusing them; applied",
            from.name(),
            to.name(),
            mask_names(unlisted)
        ));
    }
    Ok(())
}
