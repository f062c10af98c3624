//! ADD_GID, MODIFY_GID and DELETE_GID (hardware-map §4.5, §6b; bnxt_re qplib_sp.c
//! `bnxt_qplib_add_sgid`, `bnxt_qplib_update_sgid`, `bnxt_qplib_del_sgid`).
//!
//! The GID arrives fully byte-reversed and the MAC with the bytes of each 16-bit half swapped;
//! both are stored in wire order. VLAN tagging is not modelled (the wire carries untagged frames
//! only), so a GID with `VLAN_EN` is NOT_IMPLEMENTED. The statistics context, when its valid bit
//! is set, must be an allocated one.

use bnxt_hsi::roce::gid::{gid_for_command, mac_for_command};
use bnxt_hsi::roce::layouts::{CmdqAddGid, CmdqDeleteGid, CmdqModifyGid, CreqAddGidResp, CreqModifyGidResp};
use zerocopy::IntoBytes;

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, answer_xid, parse};
use crate::roce::caps::MAX_GID;
use crate::roce::gid::GidEntry;
use crate::roce::state::RoceState;

fn entry(
    gid: &[zerocopy::little_endian::U32; 4],
    mac: &[zerocopy::little_endian::U16; 3],
) -> Result<GidEntry, Refusal> {
    let mut g = [0u8; 16];
    g.copy_from_slice(gid.as_bytes());
    let mut m = [0u8; 6];
    m.copy_from_slice(mac.as_bytes());
    let e = GidEntry { gid: gid_for_command(g), mac: mac_for_command(m) };
    if e.mac[0] & 1 != 0 {
        return Err(Refusal::invalid(format!("src_mac {:02x?} is a group address", e.mac)));
    }
    Ok(e)
}

fn check_vlan_stats(vlan: u16, stats_ctx: u16, cx: &CmdCtx<'_>) -> Result<(), Refusal> {
    if vlan & CmdqAddGid::VLAN_VLAN_EN != 0 {
        return Err(Refusal::not_implemented(format!("VLAN-tagged GID (vlan 0x{vlan:04x}): VLANs are not modelled")));
    }
    if stats_ctx & CmdqAddGid::STATS_CTX_STATS_CTX_VALID != 0 {
        let id = u32::from(stats_ctx & CmdqAddGid::STATS_CTX_STATS_CTX_ID_MASK);
        if !cx.fw.stat_ctxs.contains_key(&id) {
            return Err(Refusal::invalid(format!("stats_ctx {id} is not an allocated statistics context")));
        }
    }
    Ok(())
}

/// ADD_GID: the entry goes to the lowest free index, which is the answer's `xid`.
pub(super) fn add_gid(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: CmdqAddGid = parse(cmd, 0x2c)?;
    let e = entry(&req.gid, &req.src_mac)?;
    check_vlan_stats(req.vlan.get(), req.stats_ctx.get(), cx)?;
    let index =
        st.gids.add(e).ok_or_else(|| Refusal::resources(format!("all {MAX_GID} GID table entries are in use")))?;
    answer::<CreqAddGidResp>(|r| r.xid = u32::from(index).into())
}

/// MODIFY_GID: replace the entry at `gid_index`.
pub(super) fn modify_gid(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: CmdqModifyGid = parse(cmd, 0x30)?;
    let e = entry(&req.gid, &req.src_mac)?;
    check_vlan_stats(req.vlan.get(), req.stats_ctx.get(), cx)?;
    let index = req.gid_index.get();
    if !st.gids.modify(index, e) {
        return Err(Refusal::invalid(format!("gid_index {index} holds no GID")));
    }
    answer::<CreqModifyGidResp>(|r| r.xid = u32::from(index).into())
}

/// DELETE_GID. QPs that resolved their path from the entry at RTR keep that path.
pub(super) fn delete_gid(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDeleteGid = parse(cmd, 0x18)?;
    let index = req.gid_index.get();
    if !st.gids.delete(index) {
        return Err(Refusal::invalid(format!("gid_index {index} holds no GID")));
    }
    answer_xid(u32::from(index))
}
