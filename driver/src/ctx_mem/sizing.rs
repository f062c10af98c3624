//! How much context memory each type gets, as bnxt_en sizes it with RoCE enabled.
//!
//! Source: bnxt.c `bnxt_alloc_ctx_mem` (the RoCE branch: extra QPs and SRQs, CQs for twice the
//! extra QPs, MRAV split between regions and address vectors, TIM, the TQM rings),
//! `bnxt_setup_ctxm_pg_tbls` (round up to `entry_multiple`, clamp to [min, max], one block per
//! instance), `bnxt_alloc_ctx_pg_tbls` (at most `MAX_CTX_TOTAL_PAGES` pages); bnxt.h
//! `BNXT_SW_RES_LMT` (FUNC_QCAPS `flags_ext2` SW_MAX_RESOURCE_LIMITS_SUPPORTED: the firmware states
//! limits of its own). bnxt_en subtracts in unsigned 32-bit arithmetic; here a firmware whose
//! maxima are below its own split entries gets zero extras rather than a wrapped count.

use std::collections::BTreeMap;

use bnxt_hsi::backing_store::{CtxType, PAGE_SIZE, PTES_PER_PAGE, sizing};

use super::caps::{CtxCaps, CtxInit, MAX_SPLIT};
use crate::nic::Limits;

/// Why the context memory cannot be sized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SizingError {
    /// A type bnxt_en needs with RoCE is not offered (or offered with no entries or size).
    Missing(CtxType),
    /// A type would need more than 512 × 512 pages.
    TooLarge { ty: CtxType, pages: u64 },
}

impl std::fmt::Display for SizingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SizingError::Missing(ty) => write!(
                f,
                "FUNC_BACKING_STORE_QCAPS_V2 offers no usable {} context type (type 0x{:x}), which RoCE needs",
                ty.name(),
                *ty as u16
            ),
            SizingError::TooLarge { ty, pages } => write!(
                f,
                "the {} context would take {pages} pages, more than the {} two page-table levels reach",
                ty.name(),
                PTES_PER_PAGE * PTES_PER_PAGE
            ),
        }
    }
}

/// The memory of one context type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypePlan {
    /// The type.
    pub ty: CtxType,
    /// Entries per instance, as configured.
    pub entries: u32,
    /// Bytes per entry.
    pub entry_size: u16,
    /// 4-KB pages per instance.
    pub pages: usize,
    /// Page-table levels bnxt_en asks for (the pages may need more).
    pub level: u8,
    /// Split entries sent with the configuration.
    pub split: [u32; MAX_SPLIT],
    /// How many of them count.
    pub split_cnt: u8,
    /// Instances to configure.
    pub instances: Vec<u16>,
    /// Entry initialisation.
    pub init: Option<CtxInit>,
}

/// Every type's memory, in ascending type order, and what it lets the NIC hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The types, ascending.
    pub types: Vec<TypePlan>,
    /// Queue pairs and regions beyond what the firmware keeps for itself.
    pub limits: Limits,
}

/// Size every type bnxt_en configures with RoCE on. `fw_limits`: the firmware states limits of
/// its own (`BNXT_SW_RES_LMT`).
pub(crate) fn plan(caps: &BTreeMap<u16, CtxCaps>, fw_limits: bool) -> Result<Plan, SizingError> {
    let get = |ty: CtxType| {
        caps.get(&(ty as u16)).filter(|c| c.max_entries != 0 && c.entry_size != 0).ok_or(SizingError::Missing(ty))
    };
    let qp = get(CtxType::Qp)?;
    let srq = get(CtxType::Srq)?;
    let cq = get(CtxType::Cq)?;
    let vnic = get(CtxType::Vnic)?;
    let stat = get(CtxType::Stat)?;
    let stqm = get(CtxType::SpTqmRing)?;
    let ftqm = get(CtxType::FpTqmRing)?;
    let mrav = get(CtxType::Mrav)?;
    let tim = get(CtxType::Tim)?;

    let (l2_qps, qp1_qps, fast_qps) = (u64::from(qp.split[0]), u64::from(qp.split[1]), u64::from(qp.split[2]));
    let beyond_own_qps = u64::from(qp.max_entries).saturating_sub(l2_qps + qp1_qps);
    let srqs = u64::from(srq.split[0]);
    let beyond_own_srqs = u64::from(srq.max_entries).saturating_sub(srqs);
    let (extra_qps, extra_srqs) = if fw_limits {
        (beyond_own_qps, beyond_own_srqs)
    } else {
        (
            beyond_own_qps.min(u64::from(sizing::MAX_EXTRA_QPS)) + fast_qps,
            beyond_own_srqs.min(u64::from(sizing::MAX_EXTRA_SRQS)),
        )
    };
    let qp_entries = l2_qps + qp1_qps + extra_qps;

    let mut mrav_split = mrav.split;
    let mut mrav_split_cnt = mrav.split_cnt;
    let (num_mr, num_ah) = if fw_limits && mrav.split_cnt == 1 {
        let num_ah = u64::from(mrav.split[0]);
        (u64::from(mrav.max_entries).saturating_sub(num_ah), num_ah)
    } else {
        let num_mr = (u64::from(mrav.max_entries) / 2).min(u64::from(sizing::MAX_MRS));
        let num_ah = num_mr.min(u64::from(sizing::MAX_AVS));
        mrav_split_cnt = 1;
        if mrav_split[0] == 0 || u64::from(mrav_split[0]) > num_ah {
            mrav_split[0] = num_ah as u32;
        }
        (num_mr, num_ah)
    };

    let tqm_qps = 2 * (extra_qps + qp1_qps);
    let wanted: [(&CtxCaps, u64, u8); 9] = [
        (qp, qp_entries, 2),
        (srq, srqs + extra_srqs, 2),
        (cq, u64::from(cq.split[0]) + 2 * extra_qps, 2),
        (vnic, u64::from(vnic.max_entries), 1),
        (stat, u64::from(stat.max_entries), 1),
        (stqm, u64::from(vnic.split[0]) + l2_qps + tqm_qps + u64::from(stqm.min_entries), 2),
        (ftqm, l2_qps + tqm_qps, 2),
        (mrav, num_mr + num_ah, 2),
        (tim, qp_entries, 1),
    ];
    let mut types = Vec::with_capacity(wanted.len());
    for (c, entries, level) in wanted {
        let ty = CtxType::from_value(c.ty).expect("the nine types are all known");
        let entries = clamp_entries(c, entries);
        let bytes = u64::from(entries) * u64::from(c.entry_size);
        let pages = bytes.div_ceil(PAGE_SIZE);
        if pages > PTES_PER_PAGE * PTES_PER_PAGE {
            return Err(SizingError::TooLarge { ty, pages });
        }
        let (split, split_cnt) =
            if ty == CtxType::Mrav { (mrav_split, mrav_split_cnt) } else { (c.split, c.split_cnt) };
        types.push(TypePlan {
            ty,
            entries,
            entry_size: c.entry_size,
            pages: pages as usize,
            level,
            split,
            split_cnt,
            instances: c.instances(),
            init: c.init,
        });
    }

    // What the firmware actually got may be less than asked for, if its maxima clamped it.
    let qp_got = u64::from(types[0].entries).saturating_sub(l2_qps + qp1_qps);
    let mrav_got = u64::from(types[7].entries).saturating_sub(num_ah);
    let limits = Limits {
        qps: extra_qps.min(qp_got).min(u64::from(u32::MAX)) as u32,
        regions: num_mr.min(mrav_got).min(u64::from(u32::MAX)) as u32,
    };
    Ok(Plan { types, limits })
}

/// Round up to the entry multiple, then clamp to the type's [min, max] (`clamp_t` in
/// `bnxt_setup_ctxm_pg_tbls`).
fn clamp_entries(c: &CtxCaps, entries: u64) -> u32 {
    let multiple = u64::from(c.entry_multiple);
    let entries = if multiple > 0 { entries.div_ceil(multiple) * multiple } else { entries };
    entries.max(u64::from(c.min_entries)).min(u64::from(c.max_entries)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(ty: CtxType, entry_size: u16, max: u32, split: &[u32]) -> CtxCaps {
        let mut s = [0; MAX_SPLIT];
        s[..split.len()].copy_from_slice(split);
        CtxCaps {
            ty: ty as u16,
            entry_size,
            instance_bmap: 0,
            init: None,
            entry_multiple: 0,
            max_entries: max,
            min_entries: 0,
            split: s,
            split_cnt: split.len() as u8,
        }
    }

    fn offer() -> BTreeMap<u16, CtxCaps> {
        let mut m = BTreeMap::new();
        for c in [
            caps(CtxType::Qp, 1088, 262_144, &[1024, 2, 0]),
            caps(CtxType::Srq, 192, 65_536, &[64]),
            caps(CtxType::Cq, 256, 524_288, &[2048]),
            caps(CtxType::Vnic, 256, 256, &[128]),
            caps(CtxType::Stat, 256, 1024, &[]),
            caps(CtxType::SpTqmRing, 64, 2_000_000, &[]),
            caps(CtxType::FpTqmRing, 64, 2_000_000, &[]),
            caps(CtxType::Mrav, 128, 1_048_576, &[]),
            caps(CtxType::Tim, 16, 262_144, &[]),
        ] {
            m.insert(c.ty, c);
        }
        m
    }

    fn entries(p: &Plan, ty: CtxType) -> u32 {
        p.types.iter().find(|t| t.ty == ty).unwrap().entries
    }

    #[test]
    fn without_firmware_limits_bnxt_en_asks_for_65536_extra_qps_and_half_the_mrav_entries_up_to_256k() {
        let p = plan(&offer(), false).unwrap();
        assert_eq!(p.limits, Limits { qps: 65_536, regions: 262_144 });
        assert_eq!(entries(&p, CtxType::Qp), 1024 + 2 + 65_536);
        assert_eq!(entries(&p, CtxType::Srq), 64 + 8192);
        assert_eq!(entries(&p, CtxType::Cq), 2048 + 2 * 65_536);
        assert_eq!(entries(&p, CtxType::Vnic), 256);
        assert_eq!(entries(&p, CtxType::Stat), 1024);
        assert_eq!(entries(&p, CtxType::SpTqmRing), 128 + 1024 + 2 * (65_536 + 2));
        assert_eq!(entries(&p, CtxType::FpTqmRing), 1024 + 2 * (65_536 + 2));
        assert_eq!(entries(&p, CtxType::Mrav), 262_144 + 131_072);
        assert_eq!(entries(&p, CtxType::Tim), 1024 + 2 + 65_536);
        let mrav = p.types.iter().find(|t| t.ty == CtxType::Mrav).unwrap();
        assert_eq!((mrav.split_cnt, mrav.split[0]), (1, 131_072));
        let order: Vec<u16> = p.types.iter().map(|t| t.ty as u16).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6, 0xe, 0xf]);
        let qp = &p.types[0];
        assert_eq!(qp.pages, ((1024 + 2 + 65_536) * 1088usize).div_ceil(4096));
    }

    #[test]
    fn fast_destroy_qps_are_added_beyond_the_65536() {
        let mut o = offer();
        o.get_mut(&0).unwrap().split = [1024, 2, 512, 0];
        o.get_mut(&0).unwrap().split_cnt = 3;
        let p = plan(&o, false).unwrap();
        assert_eq!(p.limits.qps, 65_536 + 512);
    }

    #[test]
    fn small_firmware_maxima_give_what_they_have() {
        let mut o = offer();
        o.get_mut(&0).unwrap().max_entries = 5000;
        o.get_mut(&0xe).unwrap().max_entries = 100_000;
        let p = plan(&o, false).unwrap();
        assert_eq!(p.limits, Limits { qps: 5000 - 1026, regions: 50_000 });
        assert_eq!(entries(&p, CtxType::Mrav), 100_000);
    }

    #[test]
    fn with_firmware_limits_every_qp_and_the_entries_less_avs_are_held() {
        let mut o = offer();
        let mrav = o.get_mut(&0xe).unwrap();
        mrav.split = [200_000, 0, 0, 0];
        mrav.split_cnt = 1;
        let p = plan(&o, true).unwrap();
        assert_eq!(p.limits, Limits { qps: 262_144 - 1026, regions: 1_048_576 - 200_000 });
        assert_eq!(entries(&p, CtxType::Srq), 65_536);
        // Without one count of AVs, firmware limits still halve the MRAV entries.
        o.get_mut(&0xe).unwrap().split_cnt = 0;
        assert_eq!(plan(&o, true).unwrap().limits.regions, 262_144);
    }

    #[test]
    fn entries_round_up_to_the_multiple_then_clamp() {
        let mut o = offer();
        o.get_mut(&3).unwrap().entry_multiple = 3;
        o.get_mut(&4).unwrap().min_entries = 2000;
        let p = plan(&o, false).unwrap();
        assert_eq!(entries(&p, CtxType::Vnic), 256, "rounded to 258, clamped to the maximum");
        assert_eq!(entries(&p, CtxType::Stat), 1024, "min above max: the maximum wins, as clamp_t");
    }

    #[test]
    fn a_missing_or_empty_type_is_named() {
        let mut o = offer();
        o.remove(&0xf);
        assert_eq!(plan(&o, false), Err(SizingError::Missing(CtxType::Tim)));
        let mut o = offer();
        o.get_mut(&2).unwrap().entry_size = 0;
        let e = plan(&o, false).unwrap_err();
        assert!(e.to_string().contains("CQ"), "{e}");
    }

    #[test]
    fn more_than_two_levels_of_pages_is_refused() {
        let mut o = offer();
        o.get_mut(&0xe).unwrap().entry_size = 4096;
        let e = plan(&o, false).unwrap_err();
        assert!(matches!(e, SizingError::TooLarge { ty: CtxType::Mrav, .. }), "{e:?}");
    }
}
