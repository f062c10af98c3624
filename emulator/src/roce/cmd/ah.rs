//! CREATE_AH and DESTROY_AH (roce_hsi.h `cmdq_create_ah`, `cmdq_destroy_ah` and their
//! completions; bnxt_re qplib_sp.c `bnxt_qplib_create_ah`, `bnxt_qplib_destroy_ah`; ib_verbs.c
//! `bnxt_re_create_ah`).
//!
//! CREATE_AH: the destination GID and MAC, the hardware index of the source GID, hop limit,
//! traffic class and flow label, and the PD; the completion's `xid` is the AV id UD send WQEs
//! name in `avid` (bnxt_re keeps `resp.xid` as the AH id; on P5/P7 id 0 is valid). AV ids are
//! the context memory's AV entries (MRAV split); when they are all used CREATE_AH answers
//! RESOURCES. Only RoCE v2 over IPv4 (`TYPE_V2IPV4`, an IPv4-mapped destination GID and an IPv4
//! source GID) is modelled; RoCE v1 and v2 over IPv6 are NOT_IMPLEMENTED, as is a VLAN id other
//! than 0xfff (bnxt_re sets the VLAN field to all ones, meaning none). A group destination MAC is
//! refused.

use bnxt_hsi::roce::gid::ipv4_of_gid;
use bnxt_hsi::roce::layouts::{CmdqCreateAh as C, CmdqDestroyAh, CreqCreateAhResp, CreqDestroyAhResp};
use zerocopy::IntoBytes;

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, parse};
use crate::roce::ah::AddressHandle;
use crate::roce::caps::MAX_PD;
use crate::roce::state::RoceState;

/// CREATE_AH.
pub(super) fn create_ah(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: C = parse(cmd, 0x40)?;
    match req.type_ {
        C::TYPE_V2IPV4 => {}
        C::TYPE_V1 | C::TYPE_V2IPV6 => {
            return Err(Refusal::not_implemented(format!(
                "network type {} (only RoCE v2 over IPv4, 2, is modelled)",
                req.type_
            )));
        }
        t => return Err(Refusal::invalid(format!("network type {t} is not defined"))),
    }
    let pd = req.pd_id.get();
    if pd >= MAX_PD {
        return Err(Refusal::invalid(format!("pd_id {pd} is not below max_pd {MAX_PD}")));
    }
    let vlan_flow = req.dest_vlan_id_flow_label.get();
    let vlan = (vlan_flow & C::DEST_VLAN_ID_MASK) >> 20;
    if vlan != 0xfff {
        return Err(Refusal::not_implemented(format!("VLAN id {vlan} (VLANs are not modelled)")));
    }
    let mut dgid = [0u8; 16];
    dgid.copy_from_slice(req.dgid.as_bytes());
    if ipv4_of_gid(&dgid).is_none() {
        return Err(Refusal::invalid("the destination GID is not IPv4-mapped, as a RoCE v2 IPv4 AH needs"));
    }
    let sgid_index = req.sgid_index.get();
    let sgid =
        st.gids.get(sgid_index).ok_or_else(|| Refusal::invalid(format!("sgid_index {sgid_index} holds no GID")))?;
    if ipv4_of_gid(&sgid.gid).is_none() {
        return Err(Refusal::not_implemented(format!("source GID {sgid_index} is not IPv4-mapped")));
    }
    let mut dest_mac = [0u8; 6];
    dest_mac.copy_from_slice(req.dest_mac.as_bytes());
    if dest_mac[0] & 1 != 0 {
        return Err(Refusal::invalid(format!("dest_mac {dest_mac:02x?} is a group address")));
    }
    let ah = AddressHandle {
        handle: req.ah_handle.get(),
        pd,
        dgid,
        sgid_index,
        dest_mac,
        hop_limit: req.hop_limit,
        traffic_class: req.traffic_class,
        flow_label: vlan_flow & C::FLOW_LABEL_MASK,
    };
    let limit = cx.limits.avs;
    let id = st
        .ahs
        .insert(ah, limit)
        .ok_or_else(|| Refusal::resources(format!("all {limit} AV entries the context memory holds are in use")))?;
    answer::<CreqCreateAhResp>(|r| r.xid = id.into())
}

/// DESTROY_AH.
pub(super) fn destroy_ah(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDestroyAh = parse(cmd, 0x18)?;
    let id = req.ah_cid.get();
    if !st.ahs.remove(id) {
        return Err(Refusal::invalid(format!("ah_cid {id} is not an AH")));
    }
    answer::<CreqDestroyAhResp>(|r| r.xid = id.into())
}
