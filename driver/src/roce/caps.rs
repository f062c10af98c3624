//! What the RoCE firmware says it can do (QUERY_FUNC's side buffer), read as bnxt_re reads it
//! (qplib_sp.c `bnxt_qplib_get_dev_attr`; qplib_res.h `_is_*` helpers; hardware-map §4.5).

use bnxt_hsi::roce::layouts::CreqQueryFuncRespSb as Sb;

/// Outstanding RDMA reads bnxt_re allows at most (`BNXT_QPLIB_MAX_OUT_RD_ATOM`).
const MAX_OUT_RD_ATOM: u8 = 126;

/// The device attributes the driver uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DevCaps {
    /// Largest region in bytes.
    pub max_mr_size: u64,
    /// Queue pairs the firmware can make (not counting QP1).
    pub max_qp: u32,
    /// Largest send queue in WQEs the firmware takes (`max_qp_wr`).
    pub max_qp_wr: u16,
    /// Largest CQ in entries.
    pub max_cqe: u32,
    /// SGEs a WQE may carry.
    pub max_sge: u8,
    /// Outstanding RDMA reads a QP may start (`max_qp_rd_atom`, capped at 126).
    pub max_rd_atom: u8,
    /// Outstanding RDMA reads a QP may answer (`max_qp_init_rd_atom`, capped at 126).
    pub max_init_rd_atom: u8,
    /// `dev_cap_flags`.
    pub flags: u16,
    /// `dev_cap_ext_flags`.
    pub ext_flags: u8,
    /// `dev_cap_ext_flags_1`.
    pub ext_flags_1: u8,
    /// `dev_cap_ext_flags_2`.
    pub ext_flags_2: u16,
}

impl DevCaps {
    /// Read the side buffer.
    pub(crate) fn from_sb(sb: &Sb) -> DevCaps {
        DevCaps {
            max_mr_size: sb.max_mr_size.get(),
            max_qp: sb.max_qp.get(),
            max_qp_wr: sb.max_qp_wr.get(),
            max_cqe: sb.max_cqe.get(),
            max_sge: sb.max_sge,
            max_rd_atom: sb.max_qp_rd_atom.min(MAX_OUT_RD_ATOM),
            max_init_rd_atom: sb.max_qp_init_rd_atom.min(MAX_OUT_RD_ATOM),
            flags: sb.dev_cap_flags.get(),
            ext_flags: sb.dev_cap_ext_flags,
            ext_flags_1: sb.dev_cap_ext_flags_1,
            ext_flags_2: sb.dev_cap_ext_flags_2.get(),
        }
    }

    /// REGISTER_MR allocates the key itself (`_is_alloc_mr_unified`).
    pub(crate) fn alloc_mr_unified(&self) -> bool {
        self.flags & Sb::MR_REGISTER_ALLOC != 0
    }

    /// The firmware retransmits for the requester or responder (`BNXT_RE_HW_RETX`), so
    /// INITIALIZE_FW says HW_REQUESTER_RETX_SUPPORTED.
    pub(crate) fn hw_retx(&self) -> bool {
        self.flags & (Sb::HW_REQUESTER_RETX_ENABLED | Sb::HW_RESPONDER_RETX_ENABLED) != 0
    }

    /// The send queue carries an MSN table rather than a PSN table (`_is_host_msn_table`).
    pub(crate) fn host_msn_table(&self) -> bool {
        self.ext_flags_2 & Sb::REQ_RETRANSMISSION_SUPPORT_MASK == Sb::REQ_RETRANSMISSION_SUPPORT_HOST_MSN_TABLE
    }

    /// The firmware takes the driver's version in INITIALIZE_FW (`_is_drv_ver_reg_supported`).
    pub(crate) fn drv_version(&self) -> bool {
        self.ext_flags & Sb::DRV_VERSION_RGTR_SUPPORTED != 0
    }

    /// MODIFY_QP may be sent with the optimized INIT→RTR→RTS attributes
    /// (`_is_optimize_modify_qp_supported`).
    pub(crate) fn optimize_modify_qp(&self) -> bool {
        self.ext_flags_2 & Sb::OPTIMIZE_MODIFY_QP_SUPPORTED != 0
    }

    /// RTR→RTS must carry MIN_RNR_TIMER when optimized (`_is_min_rnr_in_rtr_rts_mandatory`).
    pub(crate) fn min_rnr_in_rtr_rts(&self) -> bool {
        self.ext_flags_2 & Sb::MIN_RNR_RTR_RTS_OPT_SUPPORTED != 0
    }

    /// CREATE_CQ takes coalescing parameters (`_is_cq_coalescing_supported`).
    pub(crate) fn cq_coalescing(&self) -> bool {
        self.ext_flags_2 & Sb::CQ_COALESCING_SUPPORTED != 0
    }

    /// CREATE_QP/CREATE_CQ take the page size of their page tables (`bnxt_re_pbl_size_supported`).
    pub(crate) fn pbl_page_size(&self) -> bool {
        self.ext_flags_1 & Sb::PBL_PAGE_SIZE_SUPPORTED != 0
    }

    /// Extended per-QP statistics are available to a PF (`bnxt_ext_stats_supported`).
    pub(crate) fn ext_stats(&self) -> bool {
        self.flags & Sb::EXT_STATS != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn flags_read_as_bnxt_re_reads_them() {
        let mut sb = Sb::new_zeroed();
        sb.dev_cap_flags = (Sb::MR_REGISTER_ALLOC | Sb::HW_RESPONDER_RETX_ENABLED).into();
        sb.dev_cap_ext_flags_2 =
            (Sb::REQ_RETRANSMISSION_SUPPORT_HOST_MSN_TABLE | Sb::OPTIMIZE_MODIFY_QP_SUPPORTED).into();
        sb.max_qp_rd_atom = 200;
        sb.max_qp_init_rd_atom = 16;
        let c = DevCaps::from_sb(&sb);
        assert!(c.alloc_mr_unified() && c.hw_retx() && c.host_msn_table() && c.optimize_modify_qp());
        assert!(!c.drv_version() && !c.cq_coalescing() && !c.pbl_page_size() && !c.min_rnr_in_rtr_rts());
        assert_eq!((c.max_rd_atom, c.max_init_rd_atom), (126, 16));
        sb.dev_cap_ext_flags_2 = Sb::REQ_RETRANSMISSION_SUPPORT_IQM_MSN_TABLE.into();
        assert!(!DevCaps::from_sb(&sb).host_msn_table(), "an on-chip table is not the host's");
    }
}
