//! The function's RoCE congestion-control parameters as the firmware keeps them: what
//! MODIFY_ROCE_CC sets and QUERY_ROCE_CC reports (roce_hsi.h `cmdq_modify_roce_cc`,
//! `cmdq_modify_roce_cc_gen1_tlv`, `creq_query_roce_cc_resp_sb_tlv`,
//! `creq_query_roce_cc_gen1_resp_sb_tlv`; bnxt_re qplib_sp.c `bnxt_qplib_modify_cc`,
//! `bnxt_qplib_query_cc_param`, `bnxt_qplib_read_cc_gen1`).
//!
//! Two groups: the base parameters every generation has (`enable_cc`, the ECN and DSCP bits of
//! RoCE frames, the CNP's priority and DSCP, the DCQCN-style rate parameters), each with a bit
//! of the base `modify_mask`; and the generation-1 parameters of P5/P7, each with a bit of the
//! extension TLV's 64-bit `modify_mask`, except `inactivity_th_hi` (the top 6 bits of the
//! inactivity threshold) which goes with the base `INACTIVITY_CP` bit (bnxt_re configfs.c
//! `inact_th_store` sets `inact_th_hi` and only that bit; `bnxt_qplib_fill_cc_gen1` always carries
//! it). The generation-1 fields sit in the same order and sizes in the modify TLV (after its
//! `modify_mask`) and in the query TLV (after its header), so the model keeps them as those bytes
//! and copies each field by the table [`GEN1_FIELDS`].
//!
//! Checks, before anything changes (a refused MODIFY changes nothing): `modify_mask` bits the
//! interface does not define; reserved bits of `enable_cc`, `alt_vlan_pcp`, `alt_tos_dscp`,
//! `rtt`, `tcp_cp`; `tos_ecn` and the generation-1 `cnp_ecn` of 3 (CE, which a sender does not
//! set: RFC 3168 §5; bnxt_re's configfs `ecn_marking_store` refuses it too); `cc_mode` other than
//! DCTCP (0) or probabilistic (1) (`cc_mode_store` likewise); `inactivity_th_hi` over 6 bits.
//!
//! The model keeps and reports these parameters but carries out no congestion control: its
//! frames carry no ECN bits and it neither sends nor answers CNPs.
//!
//! Defaults (before any MODIFY): Broadcom does not publish the firmware's defaults. The model
//! starts with congestion control off and RoCE frames Not-ECT, which is what bnxt_re's probe
//! implies (main.c `bnxt_re_setup_cc` sends ENABLE_CC and TOS_ECN = ECT(1) because the firmware's
//! defaults leave them off: commit "RDMA/bnxt_re: Use the default mode of congestion control"),
//! DSCP 0 and priority 0 (best effort), and every rate parameter 0, so that a QUERY before any
//! MODIFY shows exactly that nothing was configured rather than numbers that look measured.

use std::mem::offset_of;

use bnxt_hsi::roce::layouts::{
    CmdqModifyRoceCc as B, CmdqModifyRoceCcGen1Tlv as G, CreqQueryRoceCcGen1RespSbTlv as S,
    CreqQueryRoceCcRespSbTlv as Q,
};

/// Why MODIFY_ROCE_CC was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CcError {
    /// A `modify_mask` bit the interface does not define.
    #[error("{mask} bits 0x{bits:x} are not defined")]
    UndefinedMaskBits {
        /// Which mask (`modify_mask`, `gen1 modify_mask`).
        mask: &'static str,
        /// The undefined bits.
        bits: u64,
    },
    /// A field with reserved bits set.
    #[error("{field} 0x{value:x} sets reserved bits 0x{reserved:x}")]
    ReservedBits {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u32,
        /// The reserved bits it sets.
        reserved: u32,
    },
    /// A field outside the values the interface defines.
    #[error("{field} {value} is not one of the values defined ({allowed})")]
    Undefined {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u32,
        /// What is allowed.
        allowed: &'static str,
    },
}

/// The base parameters (`cmdq_modify_roce_cc` / `creq_query_roce_cc_resp_sb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CcBase {
    /// `enable_cc`.
    pub enable: bool,
    /// `tos_ecn`: the ECN field of RoCE frames (0 Not-ECT, 1 ECT(1), 2 ECT(0)).
    pub tos_ecn: u8,
    /// `tos_dscp`: the DSCP of RoCE frames.
    pub tos_dscp: u8,
    /// `g`.
    pub g: u8,
    /// `num_phases_per_state`.
    pub num_phases_per_state: u8,
    /// `init_cr`.
    pub init_cr: u16,
    /// `init_tr`.
    pub init_tr: u16,
    /// `alt_vlan_pcp`: the priority of CNPs.
    pub alt_vlan_pcp: u8,
    /// `alt_tos_dscp`: the DSCP of CNPs.
    pub alt_tos_dscp: u8,
    /// `rtt` (14 bits).
    pub rtt: u16,
    /// `cc_mode` (0 DCTCP, 1 probabilistic).
    pub cc_mode: u8,
    /// `tcp_cp` (10 bits).
    pub tcp_cp: u16,
    /// `tx_queue`.
    pub tx_queue: u8,
    /// `inactivity_th` (the low 16 bits; the top 6 are the generation-1 `inactivity_th_hi`).
    pub inactivity_th: u16,
    /// `time_per_phase`.
    pub time_per_phase: u8,
    /// `pkts_per_phase`.
    pub pkts_per_phase: u8,
}

/// Where the generation-1 fields start in the modify TLV (after `modify_mask`).
const MODIFY_GEN1_AT: usize = offset_of!(G, inactivity_th_hi);
/// Where they start in the query TLV (after the header).
const QUERY_GEN1_AT: usize = offset_of!(S, inactivity_th_hi);
/// Bytes of generation-1 parameters (through `quota_period_adjust_en`, before `reserved`).
pub(crate) const GEN1_BYTES: usize = offset_of!(S, reserved) - QUERY_GEN1_AT;

/// One generation-1 parameter: its `modify_mask` bit, its offset from `inactivity_th_hi` (the same
/// in the modify and query TLVs) and its width in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gen1Field {
    /// The field's name in roce_hsi.h.
    pub name: &'static str,
    /// Its `cmdq_modify_roce_cc_gen1_tlv.modify_mask` bit.
    pub bit: u64,
    /// Offset from `inactivity_th_hi`.
    pub at: usize,
    /// Width in bytes.
    pub width: usize,
}

macro_rules! gen1_fields {
    ($($bit:ident => $field:ident: $ty:ty),* $(,)?) => {
        /// Every generation-1 parameter with a `modify_mask` bit, in layout order.
        pub(crate) const GEN1_FIELDS: &[Gen1Field] = &[$(Gen1Field {
            name: stringify!($field),
            bit: G::$bit,
            at: offset_of!(G, $field) - MODIFY_GEN1_AT,
            width: size_of::<$ty>(),
        }),*];
        // The query TLV holds each field where the modify TLV does, relative to the first.
        const _: () = {$(assert!(offset_of!(S, $field) - QUERY_GEN1_AT == offset_of!(G, $field) - MODIFY_GEN1_AT);)*};
    };
}

gen1_fields! {
    MODIFY_MASK_MIN_TIME_BETWEEN_CNPS => min_time_between_cnps: u16,
    MODIFY_MASK_INIT_CP => init_cp: u16,
    MODIFY_MASK_TR_UPDATE_MODE => tr_update_mode: u8,
    MODIFY_MASK_TR_UPDATE_CYCLES => tr_update_cycles: u8,
    MODIFY_MASK_FR_NUM_RTTS => fr_num_rtts: u8,
    MODIFY_MASK_AI_RATE_INCREASE => ai_rate_increase: u8,
    MODIFY_MASK_REDUCTION_RELAX_RTTS_TH => reduction_relax_rtts_th: u16,
    MODIFY_MASK_ADDITIONAL_RELAX_CR_TH => additional_relax_cr_th: u16,
    MODIFY_MASK_CR_MIN_TH => cr_min_th: u16,
    MODIFY_MASK_BW_AVG_WEIGHT => bw_avg_weight: u8,
    MODIFY_MASK_ACTUAL_CR_FACTOR => actual_cr_factor: u8,
    MODIFY_MASK_MAX_CP_CR_TH => max_cp_cr_th: u16,
    MODIFY_MASK_CP_BIAS_EN => cp_bias_en: u8,
    MODIFY_MASK_CP_BIAS => cp_bias: u8,
    MODIFY_MASK_CNP_ECN => cnp_ecn: u8,
    MODIFY_MASK_RTT_JITTER_EN => rtt_jitter_en: u8,
    MODIFY_MASK_LINK_BYTES_PER_USEC => link_bytes_per_usec: u16,
    MODIFY_MASK_RESET_CC_CR_TH => reset_cc_cr_th: u16,
    MODIFY_MASK_CR_WIDTH => cr_width: u8,
    MODIFY_MASK_QUOTA_PERIOD_MIN => quota_period_min: u8,
    MODIFY_MASK_QUOTA_PERIOD_MAX => quota_period_max: u8,
    MODIFY_MASK_QUOTA_PERIOD_ABS_MAX => quota_period_abs_max: u8,
    MODIFY_MASK_TR_LOWER_BOUND => tr_lower_bound: u16,
    MODIFY_MASK_CR_PROB_FACTOR => cr_prob_factor: u8,
    MODIFY_MASK_TR_PROB_FACTOR => tr_prob_factor: u8,
    MODIFY_MASK_FAIRNESS_CR_TH => fairness_cr_th: u16,
    MODIFY_MASK_RED_DIV => red_div: u8,
    MODIFY_MASK_CNP_RATIO_TH => cnp_ratio_th: u8,
    MODIFY_MASK_EXP_AI_RTTS => exp_ai_rtts: u16,
    MODIFY_MASK_EXP_AI_CR_CP_RATIO => exp_ai_cr_cp_ratio: u8,
    MODIFY_MASK_USE_RATE_TABLE => use_rate_table: u8,
    MODIFY_MASK_CP_EXP_UPDATE_TH => cp_exp_update_th: u16,
    MODIFY_MASK_HIGH_EXP_AI_RTTS_TH1 => high_exp_ai_rtts_th1: u16,
    MODIFY_MASK_HIGH_EXP_AI_RTTS_TH2 => high_exp_ai_rtts_th2: u16,
    MODIFY_MASK_ACTUAL_CR_CONG_FREE_RTTS_TH => actual_cr_cong_free_rtts_th: u16,
    MODIFY_MASK_SEVERE_CONG_CR_TH1 => severe_cong_cr_th1: u16,
    MODIFY_MASK_SEVERE_CONG_CR_TH2 => severe_cong_cr_th2: u16,
    MODIFY_MASK_LINK64B_PER_RTT => link64B_per_rtt: u32,
    MODIFY_MASK_CC_ACK_BYTES => cc_ack_bytes: u8,
    MODIFY_MASK_REDUCE_INIT_EN => reduce_init_en: u8,
    MODIFY_MASK_REDUCE_INIT_CONG_FREE_RTTS_TH => reduce_init_cong_free_rtts_th: u16,
    MODIFY_MASK_RANDOM_NO_RED_EN => random_no_red_en: u8,
    MODIFY_MASK_ACTUAL_CR_SHIFT_CORRECTION_EN => actual_cr_shift_correction_en: u8,
    MODIFY_MASK_QUOTA_PERIOD_ADJUST_EN => quota_period_adjust_en: u8,
}

/// Base `modify_mask` bits the interface defines (`ENABLE_CC` .. `PKTS_PER_PHASE`).
const BASE_MASK: u32 = (B::MODIFY_MASK_PKTS_PER_PHASE << 1) - 1;
/// Generation-1 `modify_mask` bits the interface defines.
const GEN1_MASK: u64 = (G::MODIFY_MASK_QUOTA_PERIOD_ADJUST_EN << 1) - 1;
/// `tos_ecn`/`cnp_ecn` values a sender may use: Not-ECT, ECT(1), ECT(0).
const ECN_ALLOWED: &str = "0 Not-ECT, 1 ECT(1), 2 ECT(0)";

/// The function's congestion-control parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcParams {
    /// The base parameters.
    pub base: CcBase,
    /// The generation-1 parameters, as the bytes from `inactivity_th_hi` on.
    gen1: [u8; GEN1_BYTES],
}

impl Default for CcParams {
    fn default() -> CcParams {
        CcParams { base: CcBase::default(), gen1: [0; GEN1_BYTES] }
    }
}

fn reserved(field: &'static str, value: u32, reserved: u32) -> Result<(), CcError> {
    if value & reserved != 0 {
        return Err(CcError::ReservedBits { field, value, reserved: value & reserved });
    }
    Ok(())
}

fn ecn(field: &'static str, value: u8) -> Result<(), CcError> {
    if value > 2 {
        return Err(CcError::Undefined { field, value: value.into(), allowed: ECN_ALLOWED });
    }
    Ok(())
}

impl CcParams {
    /// Apply MODIFY_ROCE_CC: the base fields its `modify_mask` names and, when the command carries
    /// the generation-1 extension, the fields that extension's mask names. Every named field is
    /// checked first; on a refusal nothing changes.
    pub fn modify(&mut self, req: &B, gen1: Option<&G>) -> Result<(), CcError> {
        let mask = req.modify_mask.get();
        if mask & !BASE_MASK != 0 {
            return Err(CcError::UndefinedMaskBits { mask: "modify_mask", bits: u64::from(mask & !BASE_MASK) });
        }
        let has = |bit: u32| mask & bit != 0;
        let mut b = self.base;
        if has(B::MODIFY_MASK_ENABLE_CC) {
            reserved("enable_cc", req.enable_cc.into(), B::RSVD1_MASK.into())?;
            b.enable = req.enable_cc & B::ENABLE_CC != 0;
        }
        if has(B::MODIFY_MASK_G) {
            b.g = req.g;
        }
        if has(B::MODIFY_MASK_NUMPHASEPERSTATE) {
            b.num_phases_per_state = req.num_phases_per_state;
        }
        if has(B::MODIFY_MASK_INIT_CR) {
            b.init_cr = req.init_cr.get();
        }
        if has(B::MODIFY_MASK_INIT_TR) {
            b.init_tr = req.init_tr.get();
        }
        if has(B::MODIFY_MASK_TOS_ECN) {
            let v = req.tos_dscp_tos_ecn & B::TOS_ECN_MASK;
            ecn("tos_ecn", v)?;
            b.tos_ecn = v;
        }
        if has(B::MODIFY_MASK_TOS_DSCP) {
            b.tos_dscp = (req.tos_dscp_tos_ecn & B::TOS_DSCP_MASK) >> 2;
        }
        if has(B::MODIFY_MASK_ALT_VLAN_PCP) {
            reserved("alt_vlan_pcp", req.alt_vlan_pcp.into(), B::RSVD3_MASK.into())?;
            b.alt_vlan_pcp = req.alt_vlan_pcp;
        }
        if has(B::MODIFY_MASK_ALT_TOS_DSCP) {
            let v = req.alt_tos_dscp.get();
            reserved("alt_tos_dscp", v.into(), B::RSVD4_MASK.into())?;
            b.alt_tos_dscp = v as u8;
        }
        if has(B::MODIFY_MASK_RTT) {
            let v = req.rtt.get();
            reserved("rtt", v.into(), B::RSVD5_MASK.into())?;
            b.rtt = v;
        }
        if has(B::MODIFY_MASK_CC_MODE) {
            if req.cc_mode > B::CC_MODE_PROBABILISTIC_CC_MODE {
                let allowed = "0 DCTCP, 1 probabilistic";
                return Err(CcError::Undefined { field: "cc_mode", value: req.cc_mode.into(), allowed });
            }
            b.cc_mode = req.cc_mode;
        }
        if has(B::MODIFY_MASK_TCP_CP) {
            let v = req.tcp_cp.get();
            reserved("tcp_cp", v.into(), B::RSVD6_MASK.into())?;
            b.tcp_cp = v;
        }
        if has(B::MODIFY_MASK_TX_QUEUE) {
            b.tx_queue = req.tx_queue;
        }
        if has(B::MODIFY_MASK_INACTIVITY_CP) {
            b.inactivity_th = req.inactivity_th.get();
        }
        if has(B::MODIFY_MASK_TIME_PER_PHASE) {
            b.time_per_phase = req.time_per_phase;
        }
        if has(B::MODIFY_MASK_PKTS_PER_PHASE) {
            b.pkts_per_phase = req.pkts_per_phase;
        }
        let mut g1 = self.gen1;
        if let Some(ext) = gen1 {
            modify_gen1(&mut g1, ext, has(B::MODIFY_MASK_INACTIVITY_CP))?;
        }
        self.base = b;
        self.gen1 = g1;
        Ok(())
    }

    /// The base parameters into QUERY_ROCE_CC's first TLV (its header and `creq_resp_sb_hdr`
    /// are the caller's).
    pub fn fill_base(&self, sb: &mut Q) {
        let b = &self.base;
        sb.enable_cc = u8::from(b.enable);
        sb.tos_dscp_tos_ecn = (b.tos_dscp << 2) | b.tos_ecn;
        sb.g = b.g;
        sb.num_phases_per_state = b.num_phases_per_state;
        sb.init_cr = b.init_cr.into();
        sb.init_tr = b.init_tr.into();
        sb.alt_vlan_pcp = b.alt_vlan_pcp;
        sb.alt_tos_dscp = b.alt_tos_dscp;
        sb.cc_mode = b.cc_mode;
        sb.tx_queue = b.tx_queue;
        sb.rtt = b.rtt.into();
        sb.tcp_cp = b.tcp_cp.into();
        sb.inactivity_th = b.inactivity_th.into();
        sb.pkts_per_phase = b.pkts_per_phase;
        sb.time_per_phase = b.time_per_phase;
    }

    /// The generation-1 parameters into QUERY_ROCE_CC's generation-1 TLV (header the caller's).
    pub fn fill_gen1(&self, sb: &mut S) {
        use zerocopy::IntoBytes;
        sb.as_mut_bytes()[QUERY_GEN1_AT..QUERY_GEN1_AT + GEN1_BYTES].copy_from_slice(&self.gen1);
    }

    /// The generation-1 parameter `name` (roce_hsi.h field name; `inactivity_th_hi` included), if
    /// there is one by that name.
    pub fn gen1_value(&self, name: &str) -> Option<u32> {
        let (at, width) = if name == "inactivity_th_hi" {
            (0, 2)
        } else {
            GEN1_FIELDS.iter().find(|f| f.name == name).map(|f| (f.at, f.width))?
        };
        let mut v = [0u8; 4];
        v[..width].copy_from_slice(&self.gen1[at..at + width]);
        Some(u32::from_le_bytes(v))
    }
}

/// Apply the generation-1 extension `ext` to `g1` (its fields named by its mask, and
/// `inactivity_th_hi` when the base mask has `INACTIVITY_CP`).
fn modify_gen1(g1: &mut [u8; GEN1_BYTES], ext: &G, inactivity: bool) -> Result<(), CcError> {
    use zerocopy::IntoBytes;
    let mask = ext.modify_mask.get();
    if mask & !GEN1_MASK != 0 {
        return Err(CcError::UndefinedMaskBits { mask: "gen1 modify_mask", bits: mask & !GEN1_MASK });
    }
    if mask & G::MODIFY_MASK_CNP_ECN != 0 {
        ecn("cnp_ecn", ext.cnp_ecn)?;
    }
    let src = &ext.as_bytes()[MODIFY_GEN1_AT..MODIFY_GEN1_AT + GEN1_BYTES];
    if inactivity {
        let hi = ext.inactivity_th_hi.get();
        // bnxt_re keeps 6 bits (configfs.c `inact_th_store`: `(val >> 16) & 0x3F`;
        // qplib_sp.c `bnxt_qplib_query_cc_param`: `inact_th_hi & 0x3F`).
        reserved("inactivity_th_hi", hi.into(), 0xffc0)?;
        g1[..2].copy_from_slice(&src[..2]);
    }
    for f in GEN1_FIELDS.iter().filter(|f| mask & f.bit != 0) {
        g1[f.at..f.at + f.width].copy_from_slice(&src[f.at..f.at + f.width]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::{FromZeros, IntoBytes};

    #[test]
    fn the_table_covers_every_generation_1_field_and_each_mask_bit_once() {
        assert_eq!(GEN1_BYTES, 67);
        let bits: u64 = GEN1_FIELDS.iter().map(|f| f.bit).fold(0, |a, b| {
            assert_eq!(a & b, 0, "a bit used twice");
            a | b
        });
        assert_eq!(bits, GEN1_MASK);
        // Fields tile the bytes after inactivity_th_hi without gaps or overlaps.
        let mut next = 2;
        for f in GEN1_FIELDS {
            assert_eq!(f.at, next, "{}", f.name);
            next += f.width;
        }
        assert_eq!(next, GEN1_BYTES);
    }

    #[test]
    fn a_modify_sets_what_its_masks_name_and_a_query_reports_it_byte_for_byte() {
        let mut cc = CcParams::default();
        let mut base = B::new_zeroed();
        base.modify_mask = (B::MODIFY_MASK_INACTIVITY_CP | B::MODIFY_MASK_TOS_ECN | B::MODIFY_MASK_ENABLE_CC).into();
        base.enable_cc = 1;
        base.tos_dscp_tos_ecn = (26 << 2) | 1; // DSCP not in the mask: unchanged
        base.inactivity_th = 0x1234.into();
        let mut ext = G::new_zeroed();
        ext.modify_mask = GEN1_MASK.into();
        for (i, b) in ext.as_mut_bytes()[MODIFY_GEN1_AT..MODIFY_GEN1_AT + GEN1_BYTES].iter_mut().enumerate() {
            *b = i as u8 + 1;
        }
        ext.inactivity_th_hi = 0x2a.into();
        ext.cnp_ecn = 2;
        cc.modify(&base, Some(&ext)).unwrap();
        assert!(cc.base.enable);
        assert_eq!((cc.base.tos_ecn, cc.base.tos_dscp, cc.base.inactivity_th), (1, 0, 0x1234));
        let mut sb = S::new_zeroed();
        cc.fill_gen1(&mut sb);
        assert_eq!(
            &sb.as_bytes()[QUERY_GEN1_AT..QUERY_GEN1_AT + GEN1_BYTES],
            &ext.as_bytes()[MODIFY_GEN1_AT..MODIFY_GEN1_AT + GEN1_BYTES]
        );
        assert_eq!((sb.inactivity_th_hi.get(), sb.cnp_ecn), (0x2a, 2));
        assert_eq!(cc.gen1_value("link64B_per_rtt"), Some(sb.link64B_per_rtt.get()));
        let mut q = Q::new_zeroed();
        cc.fill_base(&mut q);
        assert_eq!((q.enable_cc, q.tos_dscp_tos_ecn, q.inactivity_th.get()), (1, 1, 0x1234));
        // Only the fields a mask names change.
        let mut one = G::new_zeroed();
        one.modify_mask = G::MODIFY_MASK_CR_WIDTH.into();
        one.cr_width = 0x77;
        one.init_cp = 0xffff.into();
        let mut none = B::new_zeroed();
        none.inactivity_th = 9.into();
        cc.modify(&none, Some(&one)).unwrap();
        assert_eq!(cc.gen1_value("cr_width"), Some(0x77));
        assert_eq!(cc.gen1_value("init_cp"), Some(u32::from(ext.init_cp.get())));
        assert_eq!((cc.base.inactivity_th, cc.gen1_value("inactivity_th_hi")), (0x1234, Some(0x2a)));
    }

    #[test]
    fn refused_modifies_change_nothing() {
        let mut cc = CcParams::default();
        let good = |edit: &dyn Fn(&mut B)| {
            let mut b = B::new_zeroed();
            b.modify_mask = (B::MODIFY_MASK_ENABLE_CC | B::MODIFY_MASK_G).into();
            b.enable_cc = 1;
            b.g = 5;
            edit(&mut b);
            b
        };
        let cases: [(B, &str); 8] = [
            (good(&|b| b.modify_mask = (1 << 16).into()), "not defined"),
            (good(&|b| b.enable_cc = 3), "enable_cc"),
            (good(&|b| (b.modify_mask, b.tos_dscp_tos_ecn) = ((B::MODIFY_MASK_TOS_ECN | 1).into(), 3)), "tos_ecn"),
            (good(&|b| (b.modify_mask, b.cc_mode) = ((B::MODIFY_MASK_CC_MODE | 1).into(), 2)), "cc_mode"),
            (good(&|b| (b.modify_mask, b.rtt) = (B::MODIFY_MASK_RTT.into(), 0x4000.into())), "rtt"),
            (good(&|b| (b.modify_mask, b.tcp_cp) = (B::MODIFY_MASK_TCP_CP.into(), 0x400.into())), "tcp_cp"),
            (good(&|b| (b.modify_mask, b.alt_vlan_pcp) = (B::MODIFY_MASK_ALT_VLAN_PCP.into(), 8)), "alt_vlan_pcp"),
            (
                good(&|b| (b.modify_mask, b.alt_tos_dscp) = (B::MODIFY_MASK_ALT_TOS_DSCP.into(), 64.into())),
                "alt_tos_dscp",
            ),
        ];
        for (req, what) in cases {
            let e = cc.modify(&req, None).unwrap_err();
            assert!(e.to_string().contains(what), "{what}: {e}");
            assert_eq!(cc, CcParams::default(), "{what}");
        }
        let mut ext = G::new_zeroed();
        ext.modify_mask = (GEN1_MASK + 1).into();
        assert!(matches!(cc.modify(&good(&|_| {}), Some(&ext)), Err(CcError::UndefinedMaskBits { .. })));
        ext.modify_mask = G::MODIFY_MASK_CNP_ECN.into();
        ext.cnp_ecn = 3;
        assert!(matches!(cc.modify(&good(&|_| {}), Some(&ext)), Err(CcError::Undefined { field: "cnp_ecn", .. })));
        let mut hi = G::new_zeroed();
        hi.inactivity_th_hi = 0x40.into();
        let inact = good(&|b| b.modify_mask = B::MODIFY_MASK_INACTIVITY_CP.into());
        assert!(matches!(cc.modify(&inact, Some(&hi)), Err(CcError::ReservedBits { .. })));
        assert_eq!(cc, CcParams::default(), "the base half of a refused command is not applied either");
        cc.modify(&good(&|_| {}), None).unwrap();
        assert!(cc.base.enable && cc.base.g == 5);
    }
}
