//! The commands of the RoCE firmware channel: routing by opcode, the checks common to all, and
//! the completion each earns (hardware-map §4.4-4.5).
//!
//! Every command is checked before it acts: its length (`cmd_size` slots) against the fields the
//! model reads, then each field. A refusal carries the CREQ status real firmware gives for it
//! (roce_hsi.h `CREQ_QP_EVENT_STATUS_*`): INVALID_PARAMETER for a bad field, RESOURCES when a
//! limit from the context memory is reached, FAIL for a command the function's state does not
//! allow (anything but QUERY_FUNC/QUERY_VERSION before INITIALIZE_FW), NOT_IMPLEMENTED for
//! opcodes the interface defines and the model does not carry out (and for features of
//! implemented ones it does not model), INVALID_CMD for opcodes the interface does not define.
//! Refusals and unimplemented opcodes are logged and counted.

mod ah;
mod cc;
mod cq;
pub(super) mod faults;
mod func;
mod gid;
mod modify_qp;
mod mr;
mod qp;
mod rc_transport;
mod srq;

use bnxt_hsi::hwrm::layouts::Tlv;
use bnxt_hsi::roce::command::Command;
use bnxt_hsi::roce::layouts::{CmdqBase as B, *};
use bnxt_hsi::roce::rcfw::{CreqStatus, opcode_name};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::firmware::context_mem::ContextLimits;
use crate::firmware::response::parse as zero_extended;
use crate::firmware::state::FwState;
use crate::host_memory::HostMemory;

use super::state::RoceState;

/// A command as the handlers see it.
pub(super) struct Cmd<'a> {
    /// `opcode`.
    pub opcode: u8,
    /// `cookie`.
    pub cookie: u16,
    /// Every byte of it (a multiple of 16; without the `roce_tlv` header when encapsulated).
    pub bytes: &'a [u8],
    /// The `tlv` of its `roce_tlv` header when it came TLV-encapsulated.
    pub tlv: Option<Tlv>,
}

impl Cmd<'_> {
    /// The common header every command starts with.
    fn base(&self) -> B {
        B::read_from_prefix(self.bytes).expect("a command holds its 16-byte header").0
    }

    /// `resp_addr` of the common header.
    fn resp_addr(&self) -> u64 {
        self.base().resp_addr.get()
    }

    /// `resp_size` of the common header, in bytes.
    fn resp_bytes(&self) -> usize {
        usize::from(self.base().resp_size) * 16
    }
}

/// What a handler needs besides the objects.
pub(super) struct CmdCtx<'a> {
    /// The function's DMA view.
    pub mem: &'a dyn HostMemory,
    /// The HWRM firmware's state (rings, statistics contexts, context memory).
    pub fw: &'a FwState,
    /// What the context memory allows.
    pub limits: ContextLimits,
}

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The status.
    pub status: CreqStatus,
    /// What was wrong.
    pub reason: String,
}

impl Refusal {
    /// INVALID_PARAMETER.
    pub fn invalid(reason: impl Into<String>) -> Refusal {
        Refusal { status: CreqStatus::InvalidParameter, reason: reason.into() }
    }
    /// RESOURCES.
    pub fn resources(reason: impl Into<String>) -> Refusal {
        Refusal { status: CreqStatus::Resources, reason: reason.into() }
    }
    /// NOT_IMPLEMENTED (a feature the model does not carry out).
    pub fn not_implemented(reason: impl Into<String>) -> Refusal {
        Refusal { status: CreqStatus::NotImplemented, reason: reason.into() }
    }
    /// FAIL.
    pub fn fail(reason: impl Into<String>) -> Refusal {
        Refusal { status: CreqStatus::Fail, reason: reason.into() }
    }
    /// HARDWARE_ERROR (the device could not reach host memory it needed).
    pub fn hardware(reason: impl Into<String>) -> Refusal {
        Refusal { status: CreqStatus::HardwareError, reason: reason.into() }
    }
}

/// A CREQ completion's bytes (type, status, cookie, valid bit and event are filled in by the
/// channel), or a refusal.
pub(super) type Outcome = Result<[u8; 16], Refusal>;

/// The completion layout `T` after `fill`.
pub(super) fn answer<T: FromZeros + IntoBytes + Immutable>(fill: impl FnOnce(&mut T)) -> Outcome {
    let mut t = T::new_zeroed();
    fill(&mut t);
    let mut out = [0u8; 16];
    out.copy_from_slice(&t.as_bytes()[..16]);
    Ok(out)
}

/// A completion that only carries `xid` (the `creq_*_resp` layouts of the commands without
/// further fields share this shape).
pub(super) fn answer_xid(xid: u32) -> Outcome {
    answer::<CreqAddGidResp>(|r| r.xid = xid.into())
}

/// Parse the command as `T`, requiring at least `min` bytes (shorter layouts of older
/// interface versions are zero-extended beyond that).
pub(super) fn parse<T: FromBytes + KnownLayout + Immutable + Command>(cmd: &Cmd<'_>, min: usize) -> Result<T, Refusal> {
    if cmd.bytes.len() < min {
        return Err(Refusal::invalid(format!(
            "{} of {} bytes ({} slots) is shorter than the {min} bytes the model reads",
            T::NAME,
            cmd.bytes.len(),
            cmd.bytes.len() / 16
        )));
    }
    Ok(zero_extended(cmd.bytes))
}

/// The page-table shape of a CQ or SRQ (`pg_size_lvl`: level in bits 1:0, page size code in bits
/// 4:2; `pbl_pg_size` bits 2:0 when its valid flag is set, else 4 KiB table pages), as
/// roce_hsi.h `cmdq_create_cq` and `cmdq_create_srq` lay them out: (level, page shift, table
/// shift).
pub(super) fn table_shape(pg_size_lvl: u32, pbl_valid: bool, pbl_pg_size: u8) -> Result<(u8, u32, u32), Refusal> {
    let level = (pg_size_lvl & 0x3) as u8;
    if level > 2 {
        return Err(Refusal::invalid(format!("level {level} is not 0, 1 or 2")));
    }
    let code = ((pg_size_lvl & 0x1c) >> 2) as u8;
    let page_shift = crate::roce::caps::page_shift_of_code(code)
        .ok_or_else(|| Refusal::invalid(format!("page size code {code} is not defined")))?;
    let table_shift = if pbl_valid {
        let c = pbl_pg_size & 0x7;
        crate::roce::caps::page_shift_of_code(c)
            .ok_or_else(|| Refusal::invalid(format!("pbl_pg_size code {c} is not defined")))?
    } else {
        12
    };
    Ok((level, page_shift, table_shift))
}

/// A QP's or SRQ's PD (below `max_pd`) and DPI (a doorbell page of BAR2).
pub(super) fn check_pd_dpi(pd: u32, dpi: u32) -> Result<(), Refusal> {
    use crate::roce::caps::MAX_PD;
    if pd >= MAX_PD {
        return Err(Refusal::invalid(format!("pd_id {pd} is not below max_pd {MAX_PD}")));
    }
    if dpi >= cq::MAX_DPI_NUMBER {
        return Err(Refusal::invalid(format!("dpi {dpi} is not a doorbell page of BAR2")));
    }
    Ok(())
}

/// Write a side buffer (`sb`, a `creq_query_*_resp_sb` layout whose header is filled here) to the command's
/// `resp_addr`, checking `resp_size` holds it.
pub(super) fn write_side_buffer(cmd: &Cmd<'_>, cx: &CmdCtx<'_>, sb: Vec<u8>) -> Result<(), Refusal> {
    write_side_buffer_at(cmd, cx, sb, 0)
}

/// [`write_side_buffer`] for a side buffer whose header starts `header` bytes in (after
/// the `roce_tlv` header of a TLV-formatted one); `resp_size` there is the whole buffer's.
pub(super) fn write_side_buffer_at(
    cmd: &Cmd<'_>,
    cx: &CmdCtx<'_>,
    mut sb: Vec<u8>,
    header: usize,
) -> Result<(), Refusal> {
    let need = sb.len();
    if cmd.resp_bytes() < need {
        return Err(Refusal::invalid(format!(
            "resp_size {} ({} bytes) is smaller than the {need}-byte side buffer",
            cmd.base().resp_size,
            cmd.resp_bytes()
        )));
    }
    let addr = cmd.resp_addr();
    if addr == 0 {
        return Err(Refusal::invalid("resp_addr is 0 but the command answers in a side buffer"));
    }
    // Every `creq_query_*_resp_sb` starts with the same header (opcode, status, cookie, flags,
    // resp_size in 16-byte units); the smallest of them is its view.
    let (h, _) = CreqQuerySrqRespSb::mut_from_prefix(&mut sb[header..])
        .expect("a side buffer is one of the `creq_query_*_resp_sb` layouts, 32 bytes or more");
    h.opcode = cmd.opcode;
    h.status = 0;
    h.cookie = cmd.cookie.into();
    h.resp_size = (need / 16) as u8;
    cx.mem.write(addr, &sb).map_err(|e| Refusal::hardware(format!("side buffer: {e}")))
}

/// How the model handles an opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Support {
    /// Carried out.
    Implemented,
    /// Defined by the interface, not carried out (NOT_IMPLEMENTED).
    NotImplemented,
    /// Not defined (INVALID_CMD).
    Undefined,
}

/// Opcodes the model carries out.
pub(super) const IMPLEMENTED: [u8; 25] = [
    B::OPCODE_QUERY_FUNC,
    B::OPCODE_QUERY_VERSION,
    B::OPCODE_INITIALIZE_FW,
    B::OPCODE_DEINITIALIZE_FW,
    B::OPCODE_ADD_GID,
    B::OPCODE_DELETE_GID,
    B::OPCODE_MODIFY_GID,
    B::OPCODE_CREATE_CQ,
    B::OPCODE_RESIZE_CQ,
    B::OPCODE_DESTROY_CQ,
    B::OPCODE_ALLOCATE_MRW,
    B::OPCODE_DEALLOCATE_KEY,
    B::OPCODE_REGISTER_MR,
    B::OPCODE_DEREGISTER_MR,
    B::OPCODE_CREATE_QP,
    B::OPCODE_MODIFY_QP,
    B::OPCODE_QUERY_QP,
    B::OPCODE_DESTROY_QP,
    B::OPCODE_CREATE_SRQ,
    B::OPCODE_QUERY_SRQ,
    B::OPCODE_DESTROY_SRQ,
    B::OPCODE_MODIFY_ROCE_CC,
    B::OPCODE_QUERY_ROCE_CC,
    B::OPCODE_CREATE_AH,
    B::OPCODE_DESTROY_AH,
];

/// How the model handles `opcode`.
pub(super) fn support(opcode: u8) -> Support {
    if IMPLEMENTED.contains(&opcode) {
        Support::Implemented
    } else if opcode_name(opcode).is_some() {
        Support::NotImplemented
    } else {
        Support::Undefined
    }
}

/// Run the command.
pub(super) fn execute(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    match support(cmd.opcode) {
        Support::Undefined => {
            return Err(Refusal {
                status: CreqStatus::InvalidCmd,
                reason: format!("opcode 0x{:02x} is not defined", cmd.opcode),
            });
        }
        Support::NotImplemented => {
            return Err(Refusal::not_implemented("not implemented by the model"));
        }
        Support::Implemented => {}
    }
    let before_init = matches!(cmd.opcode, B::OPCODE_QUERY_FUNC | B::OPCODE_QUERY_VERSION | B::OPCODE_INITIALIZE_FW);
    if st.init.is_none() && !before_init {
        return Err(Refusal::fail("the RoCE function is not initialized (no INITIALIZE_FW since reset)"));
    }
    match cmd.opcode {
        B::OPCODE_QUERY_FUNC => func::query_func(cmd, cx),
        B::OPCODE_QUERY_VERSION => func::query_version(cmd),
        B::OPCODE_INITIALIZE_FW => func::initialize_fw(st, cmd, cx),
        B::OPCODE_DEINITIALIZE_FW => func::deinitialize_fw(st, cmd),
        B::OPCODE_ADD_GID => gid::add_gid(st, cmd, cx),
        B::OPCODE_DELETE_GID => gid::delete_gid(st, cmd),
        B::OPCODE_MODIFY_GID => gid::modify_gid(st, cmd, cx),
        B::OPCODE_CREATE_CQ => cq::create_cq(st, cmd, cx),
        B::OPCODE_RESIZE_CQ => cq::resize_cq(st, cmd, cx),
        B::OPCODE_DESTROY_CQ => cq::destroy_cq(st, cmd),
        B::OPCODE_ALLOCATE_MRW => mr::allocate_mrw(st, cmd, cx),
        B::OPCODE_DEALLOCATE_KEY => mr::deallocate_key(st, cmd),
        B::OPCODE_REGISTER_MR => mr::register_mr(st, cmd, cx),
        B::OPCODE_DEREGISTER_MR => mr::deregister_mr(st, cmd),
        B::OPCODE_CREATE_QP => qp::create_qp(st, cmd, cx),
        B::OPCODE_MODIFY_QP => modify_qp::modify_qp(st, cmd, cx),
        B::OPCODE_QUERY_QP => qp::query_qp(st, cmd, cx),
        B::OPCODE_DESTROY_QP => qp::destroy_qp(st, cmd),
        B::OPCODE_CREATE_SRQ => srq::create_srq(st, cmd, cx),
        B::OPCODE_QUERY_SRQ => srq::query_srq(st, cmd, cx),
        B::OPCODE_DESTROY_SRQ => srq::destroy_srq(st, cmd),
        B::OPCODE_MODIFY_ROCE_CC => cc::modify_roce_cc(st, cmd),
        B::OPCODE_QUERY_ROCE_CC => cc::query_roce_cc(st, cmd, cx),
        B::OPCODE_CREATE_AH => ah::create_ah(st, cmd, cx),
        B::OPCODE_DESTROY_AH => ah::destroy_ah(st, cmd),
        other => unreachable!("opcode 0x{other:02x} is listed as implemented"),
    }
}

/// Key fields of a command for the event log (empty when there are none worth naming).
pub(super) fn summary(opcode: u8, bytes: &[u8]) -> String {
    match opcode {
        B::OPCODE_CREATE_QP => {
            let c: CmdqCreateQp = zero_extended(bytes);
            format!(
                "type={} sq_size={} rq_size={} scq={} rcq={} pd={} flags=0x{:x}",
                c.type_,
                c.sq_size.get(),
                c.rq_size.get(),
                c.scq_cid.get(),
                c.rcq_cid.get(),
                c.pd_id.get(),
                c.qp_flags.get()
            )
        }
        B::OPCODE_MODIFY_QP => {
            let c: CmdqModifyQp = zero_extended(bytes);
            let state = c.network_type_en_sqd_async_notify_new_state & CmdqModifyQp::NEW_STATE_MASK;
            format!("qp={} mask=0x{:x} state={state}", c.qp_cid.get(), c.modify_mask.get())
        }
        B::OPCODE_DESTROY_QP => format!("qp={}", zero_extended::<CmdqDestroyQp>(bytes).qp_cid.get()),
        B::OPCODE_QUERY_QP => format!("qp={}", zero_extended::<CmdqQueryQp>(bytes).qp_cid.get()),
        B::OPCODE_CREATE_CQ => {
            let c: CmdqCreateCq = zero_extended(bytes);
            let nq = c.cq_fco_cnq_id.get() & CmdqCreateCq::CNQ_ID_MASK;
            let lvl = c.pg_size_lvl.get() & CmdqCreateCq::LVL_MASK;
            format!("cq_size={} nq={nq} lvl={lvl}", c.cq_size.get())
        }
        B::OPCODE_RESIZE_CQ => {
            let c: CmdqResizeCq = zero_extended(bytes);
            let mask = CmdqResizeCq::NEW_CQ_SIZE_MASK;
            let size = (c.new_cq_size_pg_size_lvl.get() & mask) >> mask.trailing_zeros();
            format!("cq={} new_cq_size={size}", c.cq_cid.get())
        }
        B::OPCODE_DESTROY_CQ => format!("cq={}", zero_extended::<CmdqDestroyCq>(bytes).cq_cid.get()),
        B::OPCODE_CREATE_SRQ => {
            let c: CmdqCreateSrq = zero_extended(bytes);
            let nq = c.eventq_id.get() & CmdqCreateSrq::EVENTQ_ID_MASK;
            format!("srq_size={} nq={nq} pd={}", c.srq_size.get(), c.pd_id.get())
        }
        B::OPCODE_DESTROY_SRQ => format!("srq={}", zero_extended::<CmdqDestroySrq>(bytes).srq_cid.get()),
        B::OPCODE_QUERY_SRQ => format!("srq={}", zero_extended::<CmdqQuerySrq>(bytes).srq_cid.get()),
        B::OPCODE_REGISTER_MR => {
            let c: CmdqRegisterMr = zero_extended(bytes);
            format!(
                "key=0x{:x} flags=0x{:x} lvl={} va=0x{:x} size={}",
                c.key.get(),
                c.flags.get(),
                c.log2_pg_size_lvl & CmdqRegisterMr::LVL_MASK,
                c.va.get(),
                c.mr_size.get()
            )
        }
        B::OPCODE_DEREGISTER_MR => format!("lkey=0x{:x}", zero_extended::<CmdqDeregisterMr>(bytes).lkey.get()),
        B::OPCODE_DEALLOCATE_KEY => format!("key=0x{:x}", zero_extended::<CmdqDeallocateKey>(bytes).key.get()),
        B::OPCODE_DELETE_GID => format!("gid_index={}", zero_extended::<CmdqDeleteGid>(bytes).gid_index.get()),
        B::OPCODE_INITIALIZE_FW => {
            let c: CmdqInitializeFw = zero_extended(bytes);
            format!("flags=0x{:x} stat_ctx_id={}", c.flags.get(), c.stat_ctx_id.get())
        }
        B::OPCODE_MODIFY_ROCE_CC => {
            let c: CmdqModifyRoceCc = zero_extended(bytes);
            format!(
                "mask=0x{:x} enable_cc={} tos=0x{:x} cc_mode={}",
                c.modify_mask.get(),
                c.enable_cc,
                c.tos_dscp_tos_ecn,
                c.cc_mode
            )
        }
        _ => String::new(),
    }
}
