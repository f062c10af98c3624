//! Which received RoCE frames reach the RoCE engine: a frame must pass one of the function's L2
//! filters (CFA_L2_FILTER_ALLOC) on its destination MAC, as every frame the NIC takes does.
//!
//! Sources: bnxt_en gives a RoCE function its L2 filter for the netdev's MAC before bnxt_re's
//! traffic flows (bnxt.c `bnxt_init_chip` → `bnxt_hwrm_set_vnic_filter`; Broadcom's bnxt_en marks
//! it `TRAFFIC_ROCE` on RoCE-capable functions, `bnxt_hwrm_l2_filter_alloc`), and the HSI's
//! filter traffic types say which traffic a filter steers (bnxt_hsi.h
//! `CFA_L2_FILTER_ALLOC_REQ_FLAGS_TRAFFIC_*`: `L2` is "L2 traffic only", `ROCE` "RoCE & L2",
//! `NO_ROCE_L2` what drivers that predate the field send, hardware-map §3.2). So:
//!
//! - no filter matches the destination MAC: the frame is dropped, counted in `rx_no_l2_filter`;
//! - every filter that matches is `TRAFFIC_L2`: dropped, counted in `rx_no_l2_filter`;
//! - a `TRAFFIC_ROCE` filter matches: the frame goes on to the RoCE engine;
//! - a `NO_ROCE_L2` filter matches: upstream bnxt_en sends that value and sets the VNIC's
//!   `ROCE_DUAL_VNIC_MODE` (or `ROCE_MIRRORING_CAPABLE_VNIC_MODE`) while bnxt_re is registered
//!   (`bnxt_hwrm_vnic_cfg`, `bnxt_get_roce_vnic_mode`), and bnxt_re's traffic flows on real cards
//!   that way, so the frame goes on. Through a VNIC without either mode no source says what real
//!   firmware does: the frame goes on, with a warning naming what is missing.
//!
//! A frame longer than the VNIC's MRU (VNIC_CFG `mru`) goes on too, with a warning: no public
//! source says whether the MRU bounds RoCE frames as it bounds L2 ones.
//!
//! Every received RoCE frame passes the gate, and the filters and VNICs change only by HWRM
//! request, so [`Gate`] keeps its last quiet admission for as long as the function's steering
//! generation ([`L2Config::steering`]) stays the same.

use bnxt_hsi::hwrm::layouts::{HwrmCfaL2FilterAllocInput as F, HwrmVnicCfgInput as V};

use crate::firmware::l2_config::{Generation, L2Config};

/// VNIC modes that let RoCE traffic through beside the L2 rings.
const ROCE_VNIC_MODES: u32 =
    V::FLAGS_ROCE_DUAL_VNIC_MODE | V::FLAGS_ROCE_ONLY_VNIC_MODE | V::FLAGS_ROCE_MIRRORING_CAPABLE_VNIC_MODE;

/// What the L2 filters decide for a RoCE frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// On to the RoCE engine, with a warning when no source backs the decision.
    Admitted {
        /// The VNIC the filter steers to.
        vnic: u16,
        /// What is missing from the sources, if anything.
        unsourced: Option<String>,
    },
    /// Dropped, for this reason.
    Dropped(&'static str),
}

/// The gate with its last decision kept: a destination MAC admitted without a warning, under
/// which steering generation, and the longest frame the same decision holds for (the VNIC's MRU,
/// past which the decision carries a warning).
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {
    kept: Option<Kept>,
}

/// A quiet admission and what it holds for.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// The VNICs and filters it was decided from.
    steering: Generation,
    /// The destination MAC admitted.
    dst: [u8; 6],
    /// The VNIC its filter steers to.
    vnic: u16,
    /// The longest frame admitted without the MRU warning (the VNIC's MRU, or any when unset).
    max_len: usize,
}

impl Gate {
    /// [`admit`], answered from the kept decision when it holds.
    #[inline]
    pub(crate) fn admit(&mut self, l2: &L2Config, dst: &[u8; 6], len: usize) -> Admission {
        if let Some(k) = self.kept
            && k.dst == *dst
            && len <= k.max_len
            && k.steering.is(l2.steering())
        {
            return Admission::Admitted { vnic: k.vnic, unsourced: None };
        }
        self.decide(l2, dst, len)
    }

    /// [`admit`], keeping a quiet admission.
    #[inline(never)]
    fn decide(&mut self, l2: &L2Config, dst: &[u8; 6], len: usize) -> Admission {
        let admission = admit(l2, dst, len);
        self.kept = match admission {
            Admission::Admitted { vnic, unsourced: None } => {
                let mru = l2.vnics().get(&vnic).map_or(0, |v| v.mru);
                let max_len = if mru == 0 { usize::MAX } else { usize::from(mru) };
                Some(Kept { steering: l2.steering(), dst: *dst, vnic, max_len })
            }
            _ => None,
        };
        admission
    }
}

/// Whether a RoCE frame of `len` bytes to `dst` (untagged) reaches the RoCE engine.
pub(crate) fn admit(l2: &L2Config, dst: &[u8; 6], len: usize) -> Admission {
    let mut matched = false;
    for f in l2.filters().values().filter(|f| f.matches(dst, None)) {
        matched = true;
        let traffic = f.flags & F::FLAGS_TRAFFIC_MASK;
        if traffic == F::FLAGS_TRAFFIC_L2 {
            continue;
        }
        let Some(vnic) = l2.vnics().get(&f.dst_vnic) else {
            return Admission::Dropped("its L2 filter names a VNIC that is gone");
        };
        let mut unsourced = None;
        if traffic == F::FLAGS_TRAFFIC_NO_ROCE_L2 && vnic.flags & ROCE_VNIC_MODES == 0 {
            unsourced = Some(format!(
                "a RoCE frame passed an L2 filter without TRAFFIC_ROCE to VNIC {} without a RoCE VNIC mode: no public source says whether real firmware delivers it (bnxt_en sets TRAFFIC_ROCE or ROCE_DUAL_VNIC_MODE); delivered",
                f.dst_vnic
            ));
        } else if vnic.mru != 0 && len > usize::from(vnic.mru) {
            unsourced = Some(format!(
                "a RoCE frame of {len} bytes is longer than VNIC {}'s MRU of {}: no public source says whether the MRU bounds RoCE frames; delivered",
                f.dst_vnic, vnic.mru
            ));
        }
        return Admission::Admitted { vnic: f.dst_vnic, unsourced };
    }
    Admission::Dropped(if matched {
        "its L2 filters carry L2 traffic only (TRAFFIC_L2)"
    } else {
        "no L2 filter of the function takes its destination MAC"
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::firmware::l2_config::{L2Filter, Vnic};

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn config(traffic: u32, vnic_flags: u32, mru: u16) -> L2Config {
        let mut l2 = L2Config::default();
        l2.vnics_mut().insert(0, Vnic { flags: vnic_flags, mru, ..Vnic::default() });
        let flags = F::FLAGS_PATH_RX | traffic;
        l2.filters_mut()
            .insert(1, L2Filter { addr: MAC, mask: [0xff; 6], vlan: None, num_vlans: None, dst_vnic: 0, flags });
        l2
    }

    #[test]
    fn only_a_filter_for_the_mac_that_carries_roce_lets_a_frame_through() {
        let l2 = config(F::FLAGS_TRAFFIC_ROCE, 0, 0);
        assert_eq!(admit(&l2, &MAC, 100), Admission::Admitted { vnic: 0, unsourced: None });
        assert_eq!(
            admit(&l2, &[2, 0, 0, 0, 0, 2], 100),
            Admission::Dropped("no L2 filter of the function takes its destination MAC")
        );
        assert_eq!(
            admit(&L2Config::default(), &MAC, 100),
            Admission::Dropped("no L2 filter of the function takes its destination MAC")
        );
        let l2 = config(F::FLAGS_TRAFFIC_L2, V::FLAGS_ROCE_DUAL_VNIC_MODE, 0);
        assert_eq!(admit(&l2, &MAC, 100), Admission::Dropped("its L2 filters carry L2 traffic only (TRAFFIC_L2)"));
    }

    #[test]
    fn an_old_style_filter_passes_quietly_with_a_roce_vnic_and_loudly_without() {
        let l2 = config(F::FLAGS_TRAFFIC_NO_ROCE_L2, V::FLAGS_ROCE_DUAL_VNIC_MODE, 1518);
        assert_eq!(admit(&l2, &MAC, 1100), Admission::Admitted { vnic: 0, unsourced: None });
        let l2 = config(F::FLAGS_TRAFFIC_NO_ROCE_L2, 0, 0);
        let Admission::Admitted { unsourced: Some(why), .. } = admit(&l2, &MAC, 100) else { panic!() };
        assert!(why.contains("no public source"), "{why}");
        let l2 = config(F::FLAGS_TRAFFIC_ROCE, 0, 1518);
        let Admission::Admitted { unsourced: Some(why), .. } = admit(&l2, &MAC, 4200) else { panic!() };
        assert!(why.contains("longer than VNIC 0's MRU of 1518"), "{why}");
    }

    #[test]
    fn a_kept_admission_gives_way_to_any_change_of_the_filters_or_vnics() {
        let mut l2 = config(F::FLAGS_TRAFFIC_ROCE, 0, 1518);
        let mut gate = Gate::default();
        let quiet = Admission::Admitted { vnic: 0, unsourced: None };
        assert_eq!(gate.admit(&l2, &MAC, 100), quiet);
        assert_eq!(gate.admit(&l2, &MAC, 1518), quiet, "kept, up to the MRU");
        let Admission::Admitted { unsourced: Some(why), .. } = gate.admit(&l2, &MAC, 1519) else { panic!() };
        assert!(why.contains("MRU of 1518"), "{why}");
        assert_eq!(gate.admit(&l2, &MAC, 100), quiet);

        let filter = l2.filters_mut().remove(&1).expect("the filter");
        assert_eq!(
            gate.admit(&l2, &MAC, 100),
            Admission::Dropped("no L2 filter of the function takes its destination MAC")
        );
        l2.filters_mut().insert(1, filter);
        assert_eq!(gate.admit(&l2, &MAC, 100), quiet);
        l2.filters_mut().get_mut(&1).expect("the filter").flags = F::FLAGS_PATH_RX | F::FLAGS_TRAFFIC_L2;
        assert_eq!(gate.admit(&l2, &MAC, 100), Admission::Dropped("its L2 filters carry L2 traffic only (TRAFFIC_L2)"));
        l2.filters_mut().get_mut(&1).expect("the filter").flags = F::FLAGS_PATH_RX | F::FLAGS_TRAFFIC_ROCE;
        assert_eq!(gate.admit(&l2, &MAC, 1000), quiet);
        l2.vnics_mut().get_mut(&0).expect("the VNIC").mru = 500;
        let Admission::Admitted { unsourced: Some(why), .. } = gate.admit(&l2, &MAC, 1000) else { panic!() };
        assert!(why.contains("MRU of 500"), "{why}");

        assert_eq!(gate.admit(&l2, &MAC, 100), quiet);
        l2.free_resources();
        assert_eq!(
            gate.admit(&l2, &MAC, 100),
            Admission::Dropped("no L2 filter of the function takes its destination MAC")
        );
        let mut old_style = config(F::FLAGS_TRAFFIC_NO_ROCE_L2, V::FLAGS_ROCE_DUAL_VNIC_MODE, 0);
        assert_eq!(gate.admit(&old_style, &MAC, 100), quiet);
        old_style.vnics_mut().get_mut(&0).expect("the VNIC").flags = 0;
        let Admission::Admitted { unsourced: Some(why), .. } = gate.admit(&old_style, &MAC, 100) else { panic!() };
        assert!(why.contains("without a RoCE VNIC mode"), "{why}");
        let other = config(F::FLAGS_TRAFFIC_L2, 0, 0);
        assert_eq!(
            gate.admit(&other, &MAC, 100),
            Admission::Dropped("its L2 filters carry L2 traffic only (TRAFFIC_L2)")
        );
    }
}
