//! Holding a function to its FUNC_CFG reservation: RING_ALLOC, STAT_CTX_ALLOC, VNIC_ALLOC and
//! VNIC_RSS_COS_LB_CTX_ALLOC past what the function reserved are refused with
//! RESOURCE_ALLOC_ERROR.
//!
//! The source is how bnxt_en drives a P5 or later chip under the firmware's resource manager
//! (`BNXT_NEW_RM`, set when FUNC_RESOURCE_QCAPS answers): it reserves TX, RX, completion rings,
//! NQs (its own and the RoCE driver's, `num_msix`), statistics contexts (its own and the RoCE
//! driver's, `bnxt_get_func_stat_ctxs`), VNICs and RSS contexts before it allocates any of them
//! (bnxt.c `bnxt_need_reserve_rings`, `__bnxt_reserve_rings`, `__bnxt_hwrm_reserve_pf_rings`),
//! reads the grant back (`bnxt_hwrm_get_rings`) and never allocates past it, trimming its rings
//! when the grant is smaller ("Able to reserve only N out of M requested ... rings"). The
//! reservation is what the function may allocate. L2 contexts and ring groups (not used on
//! P5+) are not held to it: bnxt_en reserves L2 contexts only for VFs.
//!
//! Lowering a reservation below what is allocated is taken (nothing is freed behind the
//! driver's back); later allocations are refused until the count is below it again. No source
//! says what real firmware does then.

use bnxt_hsi::hwrm::ErrorCode;

use super::l2_config::Reservation;
use super::response::Reject;
use super::state::RingType;

/// What an allocation counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reserved {
    /// `num_msix`: NQs.
    Nqs,
    /// `num_cmpl_rings`: L2 completion rings.
    CmplRings,
    /// `num_tx_rings`.
    TxRings,
    /// `num_rx_rings`: RX and aggregation rings.
    RxRings,
    /// `num_stat_ctxs`.
    StatCtxs,
    /// `num_vnics`.
    Vnics,
    /// `num_rsscos_ctxs`.
    RssCtxs,
}

impl Reserved {
    /// What a ring of type `ty` counts against.
    pub fn of_ring(ty: RingType) -> Reserved {
        match ty {
            RingType::Nq => Reserved::Nqs,
            RingType::L2Cmpl => Reserved::CmplRings,
            RingType::Tx => Reserved::TxRings,
            RingType::Rx | RingType::RxAgg => Reserved::RxRings,
        }
    }

    /// How many the reservation allows, and the FUNC_CFG field that set it.
    fn allowed(self, r: &Reservation) -> (u16, &'static str) {
        match self {
            Reserved::Nqs => (r.msix, "num_msix (NQs)"),
            Reserved::CmplRings => (r.cmpl_rings, "num_cmpl_rings"),
            Reserved::TxRings => (r.tx_rings, "num_tx_rings"),
            Reserved::RxRings => (r.rx_rings, "num_rx_rings (RX and aggregation rings)"),
            Reserved::StatCtxs => (r.stat_ctxs, "num_stat_ctxs"),
            Reserved::Vnics => (r.vnics, "num_vnics"),
            Reserved::RssCtxs => (r.rsscos_ctxs, "num_rsscos_ctxs"),
        }
    }
}

/// Whether one more of `what` fits beside the `used` already allocated.
pub fn check(r: &Reservation, what: Reserved, used: usize) -> Result<(), Reject> {
    let (allowed, field) = what.allowed(r);
    if used < usize::from(allowed) {
        return Ok(());
    }
    Err(Reject::new(
        ErrorCode::ResourceAllocError,
        format!("past the function's reservation: FUNC_CFG {field} is {allowed} and {used} are allocated"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_held_to_its_own_count() {
        let r = Reservation { msix: 2, rx_rings: 1, ..Reservation::default() };
        assert!(check(&r, Reserved::Nqs, 1).is_ok());
        let e = check(&r, Reserved::Nqs, 2).unwrap_err();
        assert!(e.reason.contains("num_msix (NQs) is 2 and 2 are allocated"), "{}", e.reason);
        assert_eq!(e.code, ErrorCode::ResourceAllocError);
        assert!(check(&r, Reserved::of_ring(RingType::RxAgg), 0).is_ok());
        assert!(check(&r, Reserved::of_ring(RingType::Rx), 1).is_err());
        assert!(check(&r, Reserved::TxRings, 0).is_err(), "nothing reserved, nothing allocated");
    }
}
