//! The `limits` step: an open NIC's queue-pair and region limits against the contract's rules
//! (open_ in the contract, docs/contract.md), with what the rules depend on read from the NIC's
//! own firmware: whether it states resource limits of its own (FUNC_QCAPS `flags_ext2`
//! SW_MAX_RESOURCE_LIMITS_SUPPORTED), and from FUNC_BACKING_STORE_QCAPS_V2 the QP type's maximum
//! and split entries (the L2 and QP1 QPs the firmware keeps for itself, the QPs it destroys fast)
//! and the MRAV type's maximum and address vectors.
//!
//! - Queue pairs: with firmware limits, every one beyond the firmware's own; otherwise at most
//!   65,536 of them plus the fast-destroy ones (and never more than there are).
//! - Regions: with firmware limits and one count of address vectors, the MRAV entries less
//!   those; otherwise at most half the entries and at most 262,144.

use bnxt::Nic;
use bnxt_hsi::backing_store::CtxType;
use bnxt_hsi::hwrm::FID_SELF;
use bnxt_hsi::hwrm::layouts::{
    HwrmFuncBackingStoreQcapsV2Input, HwrmFuncBackingStoreQcapsV2Output, HwrmFuncQcapsInput, HwrmFuncQcapsOutput,
};
use zerocopy::FromZeros;

use super::exec::{Checks, Mismatch};

/// Queue pairs beyond the firmware's own a NIC holds at most without firmware limits.
const MAX_EXTRA_QPS: u64 = 65_536;
/// Regions a NIC holds at most without firmware limits.
const MAX_REGIONS: u64 = 262_144;

/// What the firmware states that the rules depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stated {
    fw_limits: bool,
    qp_max: u64,
    qp_own: u64,
    fast_qps: u64,
    mrav_max: u64,
    /// The MRAV type's address vectors, when it states exactly one count of them.
    avs: Option<u64>,
}

fn read(nic: &Nic) -> Result<Stated, Mismatch> {
    let failed =
        |what: &str, e: bnxt::Error| Mismatch::new(format!("the firmware's {what} can be read"), e.to_string());
    let caps = nic
        .hwrm(HwrmFuncQcapsInput { fid: FID_SELF.into(), ..FromZeros::new_zeroed() })
        .map_err(|e| failed("capabilities", e))?;
    let ctx = |ty: CtxType| {
        nic.hwrm(HwrmFuncBackingStoreQcapsV2Input { type_: (ty as u16).into(), ..FromZeros::new_zeroed() })
            .map_err(|e| failed(&format!("{} context type", ty.name()), e))
    };
    let (qp, mrav) = (ctx(CtxType::Qp)?, ctx(CtxType::Mrav)?);
    let split = |c: &HwrmFuncBackingStoreQcapsV2Output, i: u8| {
        let all = [c.split_entry_0.get(), c.split_entry_1.get(), c.split_entry_2.get(), c.split_entry_3.get()];
        if i < c.subtype_valid_cnt { u64::from(all[usize::from(i)]) } else { 0 }
    };
    Ok(Stated {
        fw_limits: caps.flags_ext2.get() & HwrmFuncQcapsOutput::FLAGS_EXT2_SW_MAX_RESOURCE_LIMITS_SUPPORTED != 0,
        qp_max: u64::from(qp.max_num_entries.get()),
        qp_own: split(&qp, 0) + split(&qp, 1),
        fast_qps: split(&qp, 2),
        mrav_max: u64::from(mrav.max_num_entries.get()),
        avs: (mrav.subtype_valid_cnt == 1).then(|| split(&mrav, 0)),
    })
}

/// Check `nic`'s limits against the rules and any `qps` and `regions` given; what was found.
pub(super) fn check(nic: &Nic, qps: Option<u32>, regions: Option<u32>) -> Result<Option<String>, Mismatch> {
    let limits = nic.limits();
    let stated = read(nic)?;
    let (got_qps, got_regions) = (u64::from(limits.qps), u64::from(limits.regions));
    let (mut checks, said) = judge(&stated, got_qps, got_regions);
    if let Some(q) = qps {
        checks.check(got_qps == u64::from(q), format!("qps {q}"), format!("qps {got_qps}"));
    }
    if let Some(r) = regions {
        checks.check(got_regions == u64::from(r), format!("regions {r}"), format!("regions {got_regions}"));
    }
    checks.done().map(|_| Some(said))
}

/// The rules' checks of `qps` and `regions` for what the firmware `stated`, and what they say.
fn judge(stated: &Stated, qps: u64, regions: u64) -> (Checks, String) {
    let mut checks = Checks::default();
    let beyond = stated.qp_max.saturating_sub(stated.qp_own);
    let qp_rule = if stated.fw_limits {
        checks.check(
            qps == beyond,
            format!("every one of the {beyond} queue pairs beyond the firmware's {} (firmware limits)", stated.qp_own),
            format!("qps {qps}"),
        );
        format!("every one beyond the firmware's {}, firmware limits", stated.qp_own)
    } else {
        let cap = (MAX_EXTRA_QPS + stated.fast_qps).min(beyond);
        checks.check(
            (1..=cap).contains(&qps),
            format!("from 1 to {cap} queue pairs (65,536 plus {} fast-destroy, of {beyond})", stated.fast_qps),
            format!("qps {qps}"),
        );
        format!("at most 65,536 plus {} fast-destroy", stated.fast_qps)
    };
    let region_rule = match (stated.fw_limits, stated.avs) {
        (true, Some(avs)) => {
            let want = stated.mrav_max.saturating_sub(avs);
            checks.check(
                regions == want,
                format!(
                    "the {} MRAV entries less the firmware's {avs} address vectors: {want} regions",
                    stated.mrav_max
                ),
                format!("regions {regions}"),
            );
            format!("the MRAV entries less {avs} address vectors, firmware limits")
        }
        _ => {
            let cap = (stated.mrav_max / 2).min(MAX_REGIONS);
            checks.check(
                (1..=cap).contains(&regions),
                format!("from 1 to {cap} regions (half the {} MRAV entries, at most 262,144)", stated.mrav_max),
                format!("regions {regions}"),
            );
            "at most half the MRAV entries and 262,144".to_string()
        }
    };
    (checks, format!("{qps} queue pairs ({qp_rule}), {regions} regions ({region_rule})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: Stated =
        Stated { fw_limits: false, qp_max: 131_072, qp_own: 1088, fast_qps: 0, mrav_max: 262_144, avs: Some(0) };

    fn ok(s: &Stated, qps: u64, regions: u64) -> bool {
        judge(s, qps, regions).0.done().is_ok()
    }

    #[test]
    fn without_firmware_limits_65536_plus_the_fast_destroy_qps_and_half_the_entries_are_the_caps() {
        assert!(ok(&MODEL, 65_536, 131_072));
        assert!(!ok(&MODEL, 65_537, 131_072));
        assert!(!ok(&MODEL, 65_536, 131_073));
        assert!(!ok(&MODEL, 0, 1), "a NIC holds at least one");
        let fast = Stated { fast_qps: 512, ..MODEL };
        assert!(ok(&fast, 66_048, 131_072) && !ok(&fast, 66_049, 131_072));
        let small = Stated { qp_max: 5000, mrav_max: 1_000_000, ..MODEL };
        assert!(!ok(&small, 4000, 262_144), "never more than the firmware has beyond its own");
        assert!(ok(&small, 3912, 262_144) && !ok(&small, 3912, 262_145));
    }

    #[test]
    fn with_firmware_limits_every_qp_and_the_entries_less_the_avs_are_exact() {
        let limits = Stated { fw_limits: true, avs: Some(65_536), ..MODEL };
        assert!(ok(&limits, 129_984, 196_608));
        assert!(!ok(&limits, 65_536, 196_608), "the 65,536 cap does not hold then");
        assert!(!ok(&limits, 129_984, 131_072));
        // Without one count of address vectors the region rule falls back to half.
        let no_avs = Stated { avs: None, ..limits };
        assert!(ok(&no_avs, 129_984, 131_072) && !ok(&no_avs, 129_984, 196_608));
        let (_, said) = judge(&limits, 129_984, 196_608);
        assert!(said.contains("firmware limits"), "{said}");
    }
}
