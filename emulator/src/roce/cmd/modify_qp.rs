//! MODIFY_QP: the QP state machine RESET→INIT→RTR→RTS, INIT→INIT, RTS→RTS, RTS→SQD, SQD→SQD,
//! SQD→RTS, any→ERR and any→RESET (IBA Vol 1 §10.3.1; hardware-map §4.5, §5.1-5.3; bnxt_re
//! qplib_fp.c `bnxt_qplib_modify_qp`, `__filter_modify_flags`, `bnxt_set_mandatory_attributes`;
//! ib_verbs.c `bnxt_re_modify_qp`), with the attributes each transition requires by QP type (IBA
//! Vol 1 §11.2.4.2, "QP state transition attributes"):
//!
//! - RC: RESET→INIT: ACCESS, PKEY; INIT→RTR: DGID, SGID_INDEX, DEST_MAC, PATH_MTU, DEST_QP_ID,
//!   RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER; RTR→RTS: TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN,
//!   MAX_RD_ATOMIC. The network type must be RoCEv2-IPv4 with IPv4-mapped GIDs (RoCEv1, IPv6 and
//!   VLAN ids other than 0 and 0xfff are NOT_IMPLEMENTED; VLAN_ID with those carries only the
//!   priority, which is not modelled). The transport is built at INIT→RTR (a responder) and
//!   requests from RTS on; what changes after RTR, and how, is [`super::rc_transport`].
//! - GSI (QP1, a UD-type QP): RESET→INIT: PKEY, QKEY (IBA; bnxt_re makes QKEY mandatory for UD and
//!   GSI QPs in `bnxt_set_mandatory_attributes`); INIT→RTR: nothing (bnxt_re adds PATH_MTU and
//!   SGID_INDEX itself in `__filter_modify_flags`); RTR→RTS: SQ_PSN. ib_mad walks QP1 through
//!   exactly these (mad.c `ib_mad_port_start`: PKEY_INDEX and QKEY, then the state alone, then
//!   SQ_PSN). A GSI QP has no destination: its attributes are kept and reported back, and no
//!   transport is built; its MADs take the UD data path ([`crate::roce::ud`]).
//! - SQE→RTS (UD and GSI, after a send queue error): nothing required (ib_mad sends the state
//!   alone, with IB_QP_CUR_STATE, which bnxt_re does not pass on).
//!
//! - UD: the same attributes as GSI (IBA §11.2.4.2 names the same for UD and GSI QPs; ibverbs'
//!   ud_pingpong sends PKEY_INDEX and QKEY, then the state, then SQ_PSN). The QKEY and SQ_PSN
//!   are what the UD data path puts in the DETH and BTH of each packet.
//!
//! Resizing a QP (SQ/RQ size or SGE changes) is NOT_IMPLEMENTED for both types. `qp_type`, when
//! set (bnxt_re sets it with the mandatory attributes), must be the QP's own type.

use bnxt_hsi::roce::layouts::{CmdqModifyQp as M, CreqModifyQpResp};
use bnxt_hsi::roce::qp::{Access, QpState};
use zerocopy::IntoBytes;

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, parse, rc_transport};
use crate::roce::caps::MAX_RD_ATOM;
use crate::roce::qp::{Qp, QpAttributes, QpKind, RingPos, transition_allowed};
use crate::roce::state::RoceState;

/// Mask bits MODIFY_QP takes (those bnxt_re sends, and the ones it leaves to their defaults).
const TAKEN: u32 = M::MODIFY_MASK_STATE
    | M::MODIFY_MASK_EN_SQD_ASYNC_NOTIFY
    | M::MODIFY_MASK_ACCESS
    | M::MODIFY_MASK_PKEY
    | M::MODIFY_MASK_QKEY
    | M::MODIFY_MASK_DGID
    | M::MODIFY_MASK_FLOW_LABEL
    | M::MODIFY_MASK_SGID_INDEX
    | M::MODIFY_MASK_HOP_LIMIT
    | M::MODIFY_MASK_TRAFFIC_CLASS
    | M::MODIFY_MASK_DEST_MAC
    | M::MODIFY_MASK_PATH_MTU
    | M::MODIFY_MASK_TIMEOUT
    | M::MODIFY_MASK_RETRY_CNT
    | M::MODIFY_MASK_RNR_RETRY
    | M::MODIFY_MASK_RQ_PSN
    | M::MODIFY_MASK_MAX_RD_ATOMIC
    | M::MODIFY_MASK_MIN_RNR_TIMER
    | M::MODIFY_MASK_SQ_PSN
    | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
    | M::MODIFY_MASK_SQ_SIZE
    | M::MODIFY_MASK_RQ_SIZE
    | M::MODIFY_MASK_SQ_SGE
    | M::MODIFY_MASK_RQ_SGE
    | M::MODIFY_MASK_MAX_INLINE_DATA
    | M::MODIFY_MASK_DEST_QP_ID
    | M::MODIFY_MASK_SRC_MAC
    | M::MODIFY_MASK_VLAN_ID
    | M::MODIFY_MASK_ENABLE_CC
    | M::MODIFY_MASK_TOS_ECN
    | M::MODIFY_MASK_TOS_DSCP;

/// Mask bits `kind` requires for the transition `from` → `to`.
fn required(kind: QpKind, from: QpState, to: QpState) -> u32 {
    // A raw packet QP needs nothing but its port for INIT (IBA's `qp_state_table` in Linux
    // core/verbs.c: IB_QPT_RAW_PACKET requires only IB_QP_PORT, which MODIFY_QP does not carry).
    if kind == QpKind::RawEth {
        return 0;
    }
    if kind != QpKind::Rc {
        return match (from, to) {
            (QpState::Reset, QpState::Init) => M::MODIFY_MASK_PKEY | M::MODIFY_MASK_QKEY,
            (QpState::Rtr, QpState::Rts) => M::MODIFY_MASK_SQ_PSN,
            _ => 0,
        };
    }
    match (from, to) {
        (QpState::Reset, QpState::Init) => M::MODIFY_MASK_ACCESS | M::MODIFY_MASK_PKEY,
        (QpState::Init, QpState::Rtr) => {
            M::MODIFY_MASK_DGID
                | M::MODIFY_MASK_SGID_INDEX
                | M::MODIFY_MASK_DEST_MAC
                | M::MODIFY_MASK_PATH_MTU
                | M::MODIFY_MASK_DEST_QP_ID
                | M::MODIFY_MASK_RQ_PSN
                | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
                | M::MODIFY_MASK_MIN_RNR_TIMER
        }
        (QpState::Rtr, QpState::Rts) => {
            M::MODIFY_MASK_TIMEOUT
                | M::MODIFY_MASK_RETRY_CNT
                | M::MODIFY_MASK_RNR_RETRY
                | M::MODIFY_MASK_SQ_PSN
                | M::MODIFY_MASK_MAX_RD_ATOMIC
        }
        _ => 0,
    }
}

/// Mask bit names for refusals.
pub(super) fn mask_names(mask: u32) -> String {
    const NAMES: [&str; 32] = [
        "STATE",
        "EN_SQD_ASYNC_NOTIFY",
        "ACCESS",
        "PKEY",
        "QKEY",
        "DGID",
        "FLOW_LABEL",
        "SGID_INDEX",
        "HOP_LIMIT",
        "TRAFFIC_CLASS",
        "DEST_MAC",
        "PINGPONG_PUSH_MODE",
        "PATH_MTU",
        "TIMEOUT",
        "RETRY_CNT",
        "RNR_RETRY",
        "RQ_PSN",
        "MAX_RD_ATOMIC",
        "MIN_RNR_TIMER",
        "SQ_PSN",
        "MAX_DEST_RD_ATOMIC",
        "SQ_SIZE",
        "RQ_SIZE",
        "SQ_SGE",
        "RQ_SGE",
        "MAX_INLINE_DATA",
        "DEST_QP_ID",
        "SRC_MAC",
        "VLAN_ID",
        "ENABLE_CC",
        "TOS_ECN",
        "TOS_DSCP",
    ];
    (0..32).filter(|b| mask & (1 << b) != 0).map(|b| NAMES[b]).collect::<Vec<_>>().join("|")
}

/// Check the fields `mask` names and apply them to a copy of the attributes.
fn apply(req: &M, mask: u32, qp: &Qp) -> Result<QpAttributes, Refusal> {
    let mut a = qp.attrs;
    let has = |bit: u32| mask & bit != 0;
    if has(M::MODIFY_MASK_ACCESS) {
        if req.access & !0xf != 0 {
            return Err(Refusal::invalid(format!("access 0x{:x} has undefined bits", req.access)));
        }
        a.access = Access::from_modify_qp(req.access);
    }
    if has(M::MODIFY_MASK_PKEY) {
        a.pkey = req.pkey.get();
    }
    if has(M::MODIFY_MASK_QKEY) {
        a.qkey = req.qkey.get();
    }
    if has(M::MODIFY_MASK_DGID) {
        a.dgid.copy_from_slice(req.dgid.as_bytes());
        a.network_type = req.network_type_en_sqd_async_notify_new_state & M::NETWORK_TYPE_MASK;
    }
    if has(M::MODIFY_MASK_FLOW_LABEL) {
        a.flow_label = req.flow_label.get() & 0xf_ffff;
    }
    if has(M::MODIFY_MASK_SGID_INDEX) {
        a.sgid_index = req.sgid_index.get();
    }
    if has(M::MODIFY_MASK_HOP_LIMIT) {
        a.hop_limit = req.hop_limit;
    }
    if has(M::MODIFY_MASK_TRAFFIC_CLASS) {
        a.traffic_class = req.traffic_class;
    }
    if has(M::MODIFY_MASK_DEST_MAC) {
        a.dest_mac.copy_from_slice(req.dest_mac.as_bytes());
        if a.dest_mac[0] & 1 != 0 {
            return Err(Refusal::invalid(format!("dest_mac {:02x?} is a group address", a.dest_mac)));
        }
    }
    if has(M::MODIFY_MASK_PATH_MTU) {
        let code = (req.path_mtu_pingpong_push_enable & M::PATH_MTU_MASK) >> 4;
        if code > 4 {
            return Err(Refusal::invalid(format!(
                "path MTU code {code}: the fabric carries at most 4096-byte payloads"
            )));
        }
        a.path_mtu = code;
    }
    let field = |v: u8, max: u8, name: &str| -> Result<u8, Refusal> {
        if v > max { Err(Refusal::invalid(format!("{name} {v} exceeds {max}"))) } else { Ok(v) }
    };
    if has(M::MODIFY_MASK_TIMEOUT) {
        a.timeout = field(req.timeout, 31, "timeout")?;
    }
    if has(M::MODIFY_MASK_RETRY_CNT) {
        a.retry_cnt = field(req.retry_cnt, 7, "retry_cnt")?;
    }
    if has(M::MODIFY_MASK_RNR_RETRY) {
        a.rnr_retry = field(req.rnr_retry, 7, "rnr_retry")?;
    }
    if has(M::MODIFY_MASK_MIN_RNR_TIMER) {
        a.min_rnr_timer = field(req.min_rnr_timer, 31, "min_rnr_timer")?;
    }
    let psn = |v: u32, name: &str| -> Result<u32, Refusal> {
        if v > 0xff_ffff { Err(Refusal::invalid(format!("{name} 0x{v:x} is wider than 24 bits"))) } else { Ok(v) }
    };
    if has(M::MODIFY_MASK_RQ_PSN) {
        a.rq_psn = psn(req.rq_psn.get(), "rq_psn")?;
    }
    if has(M::MODIFY_MASK_SQ_PSN) {
        a.sq_psn = psn(req.sq_psn.get(), "sq_psn")?;
    }
    if has(M::MODIFY_MASK_DEST_QP_ID) {
        a.dest_qp = psn(req.dest_qp_id.get(), "dest_qp_id")?;
    }
    if has(M::MODIFY_MASK_MAX_RD_ATOMIC) {
        // ORRQ slots: ORD + 1 (bnxt_re ORD_LIMIT_TO_ORRQ_SLOTS).
        let slots = req.max_rd_atomic;
        if slots < 1 || slots - 1 > MAX_RD_ATOM {
            return Err(Refusal::invalid(format!("max_rd_atomic {slots} ORRQ slots: ORD must be 0..={MAX_RD_ATOM}")));
        }
        a.max_rd_atomic = slots;
    }
    if has(M::MODIFY_MASK_MAX_DEST_RD_ATOMIC) {
        // IRRQ slots: 2 IRD + 2 (IRD_LIMIT_TO_IRRQ_SLOTS).
        let slots = req.max_dest_rd_atomic;
        if slots < 2 || slots / 2 - 1 > MAX_RD_ATOM {
            return Err(Refusal::invalid(format!(
                "max_dest_rd_atomic {slots} IRRQ slots: IRD must be 0..={MAX_RD_ATOM}"
            )));
        }
        a.max_dest_rd_atomic = slots;
    }
    if has(M::MODIFY_MASK_VLAN_ID) {
        // bnxt_re sends VLAN_ID at RTR for the priority (PCP = SL) with the source GID's VLAN id,
        // 0xfff when it has none (ib_verbs.c `bnxt_re_update_ah_dscp_sl`, qplib_fp.c
        // `bnxt_qplib_modify_qp`). Ids 0 (priority only) and 0xfff (none) send untagged frames;
        // a real VLAN is not modelled.
        let id = req.vlan_pcp_vlan_dei_vlan_id.get() & M::VLAN_ID_MASK;
        if id != 0 && id != M::VLAN_ID_MASK {
            return Err(Refusal::not_implemented(format!("VLAN id {id}: VLANs are not modelled")));
        }
    }
    if has(M::MODIFY_MASK_TOS_ECN) || has(M::MODIFY_MASK_TOS_DSCP) {
        a.tos = req.tos_dscp_tos_ecn;
    }
    if has(M::MODIFY_MASK_EN_SQD_ASYNC_NOTIFY) {
        a.sqd_async_notify = req.network_type_en_sqd_async_notify_new_state & M::EN_SQD_ASYNC_NOTIFY != 0;
    }
    let resize = [
        (M::MODIFY_MASK_SQ_SIZE, req.sq_size.get(), qp.sq.size, "sq_size"),
        (M::MODIFY_MASK_RQ_SIZE, req.rq_size.get(), qp.rq.size, "rq_size"),
        (M::MODIFY_MASK_SQ_SGE, u32::from(req.sq_sge.get()), qp.sq.max_sge, "sq_sge"),
        (M::MODIFY_MASK_RQ_SGE, u32::from(req.rq_sge.get()), qp.rq.max_sge, "rq_sge"),
    ];
    for (bit, new, old, name) in resize {
        if has(bit) && new != old {
            return Err(Refusal::not_implemented(format!(
                "changing {name} from {old} to {new} (QP resize) is not modelled"
            )));
        }
    }
    Ok(a)
}

/// MODIFY_QP.
pub(super) fn modify_qp(st: &mut RoceState, cmd: &Cmd<'_>, _cx: &CmdCtx<'_>) -> Outcome {
    let req: M = parse(cmd, 0x70)?;
    let id = req.qp_cid.get();
    let mask = req.modify_mask.get();
    let unsupported = mask & !TAKEN;
    if unsupported != 0 {
        return Err(Refusal::not_implemented(format!("modify_mask bits {} are not modelled", mask_names(unsupported))));
    }
    let ext = req.ext_modify_mask.get();
    if ext != 0 {
        return Err(Refusal::invalid(format!("ext_modify_mask 0x{ext:x} asks for features QUERY_FUNC does not offer")));
    }
    let qp = st.qps.get(&id).ok_or_else(|| Refusal::invalid(format!("qp_cid {id} is not a QP")))?;
    let kind = qp.kind;
    if req.qp_type != 0 && req.qp_type != kind.code() {
        return Err(Refusal::invalid(format!("qp_type {} does not match the {} QP", req.qp_type, kind.name())));
    }
    let from = qp.state;
    let to = if mask & M::MODIFY_MASK_STATE != 0 {
        let f = req.network_type_en_sqd_async_notify_new_state & M::NEW_STATE_MASK;
        let to = QpState::from_field(f).ok_or_else(|| Refusal::invalid(format!("new_state {f} is not defined")))?;
        if to == QpState::Sqe {
            return Err(Refusal::invalid("SQE is entered by a datagram QP's send queue error, not by MODIFY_QP"));
        }
        if !transition_allowed(from, to) {
            return Err(Refusal::invalid(format!("{} to {} is not a QP state transition", from.name(), to.name())));
        }
        to
    } else {
        from
    };
    let missing = required(kind, from, to) & !mask;
    if missing != 0 {
        return Err(Refusal::invalid(format!("{} to {} needs {}", from.name(), to.name(), mask_names(missing))));
    }
    let a = apply(&req, mask, qp)?;
    let live = |s: QpState| matches!(s, QpState::Rtr | QpState::Rts | QpState::Sqd);
    if kind == QpKind::Rc && live(from) && live(to) {
        rc_transport::step(st, id, to, mask, &a)?;
        return finish(st, id, a, mask);
    }
    let RoceState { qps, gids, .. } = st;
    let qp = qps.get_mut(&id).expect("looked up above");
    match to {
        // GSI, UD and raw Ethernet QPs have no destination to resolve and no transport to build.
        QpState::Rtr | QpState::Rts | QpState::Sqd if kind != QpKind::Rc => qp.state = to,
        QpState::Rtr if from == QpState::Init => rc_transport::to_rtr(gids, qp, &a)?,
        QpState::Err => {
            if let Some(t) = qp.transport.as_mut() {
                t.set_error();
            }
            qp.state = QpState::Err;
        }
        QpState::Reset => {
            qp.transport = None;
            qp.early_recvs.clear();
            qp.inline.clear();
            qp.in_flight.clear();
            qp.sq.prod = RingPos::default();
            qp.sq.taken = RingPos::default();
            qp.sq.wqes = 0;
            qp.sq.msn_next = 0;
            qp.rq.prod = RingPos::default();
            qp.rq.taken = RingPos::default();
            qp.src_mac = None;
            qp.attrs = QpAttributes::default();
            qp.set_mask = 0;
            qp.state = QpState::Reset;
            return answer::<CreqModifyQpResp>(|r| r.xid = id.into());
        }
        _ => qp.state = to,
    }
    finish(st, id, a, mask)
}

/// Keep the attributes a MODIFY_QP set and have the data path look at the QP.
fn finish(st: &mut RoceState, id: u32, a: QpAttributes, mask: u32) -> Outcome {
    if let Some(qp) = st.qps.get_mut(&id) {
        qp.attrs = a;
        qp.set_mask |= mask;
    }
    st.dirty.insert(id);
    answer::<CreqModifyQpResp>(|r| r.xid = id.into())
}
