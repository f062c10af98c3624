//! MODIFY_ROCE_CC and QUERY_ROCE_CC: the function's congestion-control parameters
//! ([`crate::roce::cc`]; bnxt_re qplib_sp.c `bnxt_qplib_modify_cc`, `bnxt_qplib_query_cc_param`;
//! main.c `bnxt_re_setup_cc`; qplib_tlv.h; roce_hsi.h `cmdq_modify_roce_cc`,
//! `cmdq_modify_roce_cc_tlv`, `cmdq_modify_roce_cc_gen1_tlv`, `creq_query_roce_cc_resp_sb_tlv`,
//! `creq_query_roce_cc_gen1_resp_sb_tlv`).
//!
//! MODIFY_ROCE_CC comes plain (`cmdq_modify_roce_cc`) or, as bnxt_re sends it on P5/P7,
//! TLV-encapsulated: the channel has taken off the first `roce_tlv` header (type
//! ROCE_SP_COMMAND, `length` the 56-byte command, MORE when extensions follow); after the command
//! come 8 bytes of padding (`cmdq_modify_roce_cc_tlv.reservedtlvpad`) and then the extension
//! TLVs, each a 16-byte header (`tlv` and 8 reserved bytes) and `length` bytes, at 16-byte
//! boundaries, the last without MORE. Linux's bnxt_re sends one extension, generation 1
//! (`TLV_TYPE_MODIFY_ROCE_CC_GEN1`, REQUIRED); Broadcom's out-of-tree bnxt_re adds generation 2
//! and the "ext" TLVs (qplib_tlv.h `bnxt_qplib_tlv_modify_cc_req`), which the model does not keep:
//! it answers them NOT_IMPLEMENTED (firmware may skip a TLV it does not know unless it is
//! REQUIRED; the model refuses instead of dropping parameters unseen). A header that promises an
//! extension the command does not hold, or one that runs past it, is INVALID_PARAMETER.
//!
//! QUERY_ROCE_CC is a plain 16-byte command answered in a side buffer. On P5/P7 bnxt_re reads that
//! buffer in TLV form (qplib_tlv.h `bnxt_qplib_tlv_query_rcc_sb`, `bnxt_qplib_query_cc_param`
//! reads `ext_sb->base_sb` and `ext_sb->gen1_sb`): a `roce_tlv` header, the base
//! `creq_query_roce_cc_resp_sb` (together `creq_query_roce_cc_resp_sb_tlv`), then the generation-1
//! TLV: 136 bytes, for which bnxt_re gives `resp_size` 9 (144 bytes). The model answers in that
//! form: the first header with CMD_DISCR_TLV_ENCAP, REQUIRED|MORE, type ROCE_SP_COMMAND, `length`
//! 32 and `total_size` 9 (the header values a command TLV carries: qplib_tlv.h
//! `ROCE_1ST_TLV_PREP`), the generation-1 header with REQUIRED, type `TLV_TYPE_QUERY_ROCE_CC_GEN1`
//! and `length` 72. bnxt_re reads only what follows the headers. A `resp_size` too small for the
//! buffer is INVALID_PARAMETER; the completion's `size` is the buffer's in 16-byte units.

use bnxt_hsi::hwrm::layouts::Tlv;
use bnxt_hsi::roce::layouts::{
    CmdqModifyRoceCc as B, CmdqModifyRoceCcGen1Tlv as G, CmdqQueryRoceCc, CreqModifyRoceCcResp,
    CreqQueryRoceCcGen1RespSbTlv as S, CreqQueryRoceCcResp, CreqQueryRoceCcRespSbTlv as Q,
};
use bnxt_hsi::roce::rcfw::{
    CMD_DISCR_TLV_ENCAP, TLV_HEADER_BYTES, TLV_TYPE_MODIFY_ROCE_CC_GEN1, TLV_TYPE_QUERY_ROCE_CC_GEN1,
    TLV_TYPE_ROCE_SP_COMMAND,
};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, parse, write_side_buffer_at};
use crate::roce::state::RoceState;

/// Where the first extension TLV starts, counted from the command: the 56-byte command and its
/// 8 bytes of padding (`cmdq_modify_roce_cc_tlv` is 80 bytes: the 16-byte header, the command,
/// `reservedtlvpad`).
const FIRST_EXTENSION: usize = size_of::<B>() + 8;
/// Bytes of MODIFY_ROCE_CC the model reads: through `time_per_phase` (byte 0x28), three slots.
const MODIFY_MIN_BYTES: usize = 0x30;
/// Bytes of QUERY_ROCE_CC's side buffer in TLV form, padded to 16-byte units (144).
pub(super) const QUERY_SB_BYTES: usize = (size_of::<Q>() + size_of::<S>()).next_multiple_of(16);

/// MODIFY_ROCE_CC.
pub(super) fn modify_roce_cc(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: B = parse(cmd, MODIFY_MIN_BYTES)?;
    let gen1 = match cmd.tlv {
        Some(t) if t.flags & Tlv::FLAGS_MORE != 0 => extensions(cmd.bytes)?,
        _ => None,
    };
    st.cc.modify(&req, gen1.as_ref()).map_err(|e| Refusal::invalid(e.to_string()))?;
    answer::<CreqModifyRoceCcResp>(|_| {})
}

/// The extension TLVs after an encapsulated MODIFY_ROCE_CC: the generation-1 one, if sent.
fn extensions(bytes: &[u8]) -> Result<Option<G>, Refusal> {
    let mut at = FIRST_EXTENSION;
    let mut gen1 = None;
    loop {
        let Some(head) = bytes.get(at..at + TLV_HEADER_BYTES) else {
            return Err(Refusal::invalid(format!(
                "a TLV header says another TLV follows at byte {at}, but the command ends at byte {}",
                bytes.len()
            )));
        };
        let (t, _) = Tlv::read_from_prefix(head).expect("a 16-byte header holds a tlv");
        if t.cmd_discr.get() != CMD_DISCR_TLV_ENCAP {
            return Err(Refusal::invalid(format!(
                "extension TLV at byte {at}: cmd_discr 0x{:04x} is not CMD_DISCR_TLV_ENCAP",
                t.cmd_discr.get()
            )));
        }
        let len = usize::from(t.length.get());
        let end = at + TLV_HEADER_BYTES + len;
        if end > bytes.len() {
            return Err(Refusal::invalid(format!(
                "extension TLV at byte {at}: its {len} bytes run past the command's {}",
                bytes.len()
            )));
        }
        match t.tlv_type.get() {
            TLV_TYPE_MODIFY_ROCE_CC_GEN1 if gen1.is_some() => {
                return Err(Refusal::invalid(format!("a second generation-1 extension TLV at byte {at}")));
            }
            TLV_TYPE_MODIFY_ROCE_CC_GEN1 => {
                if end - at < size_of::<G>() {
                    return Err(Refusal::invalid(format!(
                        "generation-1 extension TLV of {len} bytes is shorter than its {} bytes",
                        size_of::<G>() - TLV_HEADER_BYTES
                    )));
                }
                gen1 = Some(G::read_from_prefix(&bytes[at..end]).expect("length checked").0);
            }
            ty => {
                return Err(Refusal::not_implemented(format!(
                    "extension TLV type {ty} at byte {at} (the model keeps generation 1, type \
                     {TLV_TYPE_MODIFY_ROCE_CC_GEN1}, only)"
                )));
            }
        }
        if t.flags & Tlv::FLAGS_MORE == 0 {
            return Ok(gen1);
        }
        at = end.next_multiple_of(16);
    }
}

/// QUERY_ROCE_CC.
pub(super) fn query_roce_cc(st: &RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let _: CmdqQueryRoceCc = parse(cmd, 16)?;
    let slots = (QUERY_SB_BYTES / 16) as u8;
    let mut base = Q::new_zeroed();
    base.cmd_discr = CMD_DISCR_TLV_ENCAP.into();
    base.tlv_flags = Q::TLV_FLAGS_REQUIRED | Q::TLV_FLAGS_MORE;
    base.tlv_type = TLV_TYPE_ROCE_SP_COMMAND.into();
    base.length = ((size_of::<Q>() - TLV_HEADER_BYTES) as u16).into();
    base.total_size = slots;
    st.cc.fill_base(&mut base);
    let mut gen1 = S::new_zeroed();
    gen1.cmd_discr = CMD_DISCR_TLV_ENCAP.into();
    gen1.tlv_flags = S::TLV_FLAGS_REQUIRED;
    gen1.tlv_type = TLV_TYPE_QUERY_ROCE_CC_GEN1.into();
    gen1.length = ((size_of::<S>() - TLV_HEADER_BYTES) as u16).into();
    st.cc.fill_gen1(&mut gen1);
    let mut sb = Vec::with_capacity(QUERY_SB_BYTES);
    sb.extend_from_slice(base.as_bytes());
    sb.extend_from_slice(gen1.as_bytes());
    sb.resize(QUERY_SB_BYTES, 0);
    write_side_buffer_at(cmd, cx, sb, TLV_HEADER_BYTES)?;
    answer::<CreqQueryRoceCcResp>(|r| r.size = u32::from(slots).into())
}
