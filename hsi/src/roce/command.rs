//! The RoCE firmware channel's commands: each CMDQ command layout paired with its opcode, its name
//! and the CREQ completion that answers it, as [`crate::hwrm::Request`] pairs HWRM requests.
//!
//! Sources: roce_hsi.h `CMDQ_BASE_OPCODE_*` and the `creq_*_resp` layouts (`event` = the opcode);
//! bnxt_re qplib_rcfw.c `__send_message` (commands go in 16-byte CMDQ slots, `cmd_size` counts
//! slots), `bnxt_qplib_process_qp_event` (the completion's `cookie` names the command);
//! hardware-map §4.2-§4.5. Opcode names and statuses are in [`super::rcfw`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::layouts::*;

/// A CMDQ command layout: its opcode, its name as a transcript writes it (`CREATE_QP`), and the
/// 16-byte CREQ completion that answers it.
pub trait Command: FromBytes + IntoBytes + KnownLayout + Immutable + Copy {
    /// `CMDQ_BASE_OPCODE_*`.
    const OPCODE: u8;
    /// The opcode's name without the `CMDQ_BASE_OPCODE_` prefix.
    const NAME: &'static str;
    /// The CREQ completion layout (16 bytes, `event` = [`Command::OPCODE`]).
    type Response: FromBytes + IntoBytes + KnownLayout + Immutable + Copy;
}

/// A command whose answer also comes in a side buffer the driver names in `resp_addr`, with
/// `resp_size` in 16-byte units (bnxt_re `bnxt_qplib_rcfw_alloc_sbuf`, `bnxt_qplib_get_dev_attr`).
pub trait SideBuffer: Command {
    /// The side buffer's layout.
    type Buffer: FromBytes + IntoBytes + KnownLayout + Immutable + Copy;
}

macro_rules! commands {
    ($($cmd:ident => $resp:ident, $op:literal, $name:literal;)*) => {
        $(
            impl Command for $cmd {
                const OPCODE: u8 = $op;
                const NAME: &'static str = $name;
                type Response = $resp;
            }
        )*

        #[cfg(test)]
        const PAIRED: &[(u8, &str)] = &[$(($op, $name),)*];
    };
}

commands! {
    CmdqCreateQp => CreqCreateQpResp, 0x01, "CREATE_QP";
    CmdqDestroyQp => CreqDestroyQpResp, 0x02, "DESTROY_QP";
    CmdqModifyQp => CreqModifyQpResp, 0x03, "MODIFY_QP";
    CmdqQueryQp => CreqQueryQpResp, 0x04, "QUERY_QP";
    CmdqCreateSrq => CreqCreateSrqResp, 0x05, "CREATE_SRQ";
    CmdqDestroySrq => CreqDestroySrqResp, 0x06, "DESTROY_SRQ";
    CmdqQuerySrq => CreqQuerySrqResp, 0x08, "QUERY_SRQ";
    CmdqCreateCq => CreqCreateCqResp, 0x09, "CREATE_CQ";
    CmdqDestroyCq => CreqDestroyCqResp, 0x0a, "DESTROY_CQ";
    CmdqResizeCq => CreqResizeCqResp, 0x0c, "RESIZE_CQ";
    CmdqAllocateMrw => CreqAllocateMrwResp, 0x0d, "ALLOCATE_MRW";
    CmdqDeallocateKey => CreqDeallocateKeyResp, 0x0e, "DEALLOCATE_KEY";
    CmdqRegisterMr => CreqRegisterMrResp, 0x0f, "REGISTER_MR";
    CmdqDeregisterMr => CreqDeregisterMrResp, 0x10, "DEREGISTER_MR";
    CmdqAddGid => CreqAddGidResp, 0x11, "ADD_GID";
    CmdqDeleteGid => CreqDeleteGidResp, 0x12, "DELETE_GID";
    CmdqCreateAh => CreqCreateAhResp, 0x15, "CREATE_AH";
    CmdqDestroyAh => CreqDestroyAhResp, 0x16, "DESTROY_AH";
    CmdqModifyGid => CreqModifyGidResp, 0x17, "MODIFY_GID";
    CmdqQueryGid => CreqQueryGidResp, 0x18, "QUERY_GID";
    CmdqInitializeFw => CreqInitializeFwResp, 0x80, "INITIALIZE_FW";
    CmdqDeinitializeFw => CreqDeinitializeFwResp, 0x81, "DEINITIALIZE_FW";
    CmdqStopFunc => CreqStopFuncResp, 0x82, "STOP_FUNC";
    CmdqQueryFunc => CreqQueryFuncResp, 0x83, "QUERY_FUNC";
    CmdqSetFuncResources => CreqSetFuncResourcesResp, 0x84, "SET_FUNC_RESOURCES";
    CmdqQueryVersion => CreqQueryVersionResp, 0x8b, "QUERY_VERSION";
    CmdqModifyRoceCc => CreqModifyRoceCcResp, 0x8c, "MODIFY_ROCE_CC";
    CmdqQueryRoceCc => CreqQueryRoceCcResp, 0x8d, "QUERY_ROCE_CC";
    CmdqQueryRoceStats => CreqQueryRoceStatsResp, 0x8e, "QUERY_ROCE_STATS";
}

impl SideBuffer for CmdqQueryFunc {
    type Buffer = CreqQueryFuncRespSb;
}

impl SideBuffer for CmdqQuerySrq {
    type Buffer = CreqQuerySrqRespSb;
}

impl SideBuffer for CmdqQueryQp {
    type Buffer = CreqQueryQpRespSb;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::rcfw::{CREQE_BYTES, cmd_slots, opcode_name};

    fn check<C: Command>() {
        assert_eq!(size_of::<C::Response>(), CREQE_BYTES, "{}", C::NAME);
        assert_eq!(opcode_name(C::OPCODE), Some(C::NAME));
    }

    #[test]
    fn every_pair_is_answered_by_one_creq_entry_and_named_as_the_header_names_it() {
        for (op, name) in PAIRED {
            assert_eq!(opcode_name(*op), Some(*name));
        }
        check::<CmdqCreateQp>();
        check::<CmdqModifyQp>();
        check::<CmdqQueryFunc>();
        check::<CmdqInitializeFw>();
        check::<CmdqRegisterMr>();
        check::<CmdqDeallocateKey>();
        check::<CmdqAddGid>();
        assert_eq!(cmd_slots(size_of::<<CmdqQueryFunc as SideBuffer>::Buffer>()), 10, "QUERY_FUNC's resp_size");
    }
}
