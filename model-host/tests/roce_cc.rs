//! Congestion-control parameters against a test driver: QUERY_ROCE_CC in the TLV side-buffer form
//! bnxt_re reads on P7, MODIFY_ROCE_CC plain and TLV-encapsulated with its generation-1 extension
//! (as Linux 6.12 and 7.x send it at probe, main.c `bnxt_re_setup_cc`), the round trip of what
//! was set, and the refusals of bad requests, after which nothing has changed.

mod common;
mod roce_support;

use bnxt_hsi::roce::layouts::*;
use common::Rig;
use roce_support::*;
use zerocopy::FromZeros;

type B = CmdqModifyRoceCc;
type G = CmdqModifyRoceCcGen1Tlv;

/// The parameters as a QUERY reports them, for comparing before and after.
fn snapshot(rig: &mut Rig, f: &mut Func) -> (Vec<u8>, Vec<u8>) {
    use zerocopy::IntoBytes;
    let (c, base, gen1) = f.query_cc(rig);
    assert_eq!(c.status, 0);
    // Without the echoed cookie, which changes with every command.
    let mut b = base.as_bytes().to_vec();
    b[18..20].fill(0);
    (b, gen1.as_bytes().to_vec())
}

#[test]
fn a_query_before_any_modify_reports_congestion_control_off_in_the_tlv_form_bnxt_re_reads() {
    let (mut rig, mut f) = up();
    let (c, base, gen1) = f.query_cc(&mut rig);
    assert_eq!((c.status, c.event, c.xid), (0, 0x8d, 9), "size: 9 slots");
    assert_eq!((base.cmd_discr.get(), base.tlv_type.get(), base.length.get(), base.total_size), (0x8000, 3, 32, 9));
    assert_eq!(base.tlv_flags, CreqQueryRoceCcRespSbTlv::TLV_FLAGS_REQUIRED | CreqQueryRoceCcRespSbTlv::TLV_FLAGS_MORE);
    assert_eq!((base.opcode, base.status, base.cookie.get(), base.resp_size), (0x8d, 0, f.cookie, 9));
    assert_eq!((base.enable_cc, base.tos_dscp_tos_ecn, base.cc_mode, base.alt_vlan_pcp), (0, 0, 0, 0));
    assert_eq!((gen1.cmd_discr.get(), gen1.tlv_type.get(), gen1.length.get()), (0x8000, 4, 72));
    assert_eq!(gen1.tlv_flags, CreqQueryRoceCcGen1RespSbTlv::TLV_FLAGS_REQUIRED, "the last TLV");
    assert_eq!((gen1.min_time_between_cnps.get(), gen1.cnp_ecn, gen1.link64B_per_rtt.get()), (0, 0, 0));
}

#[test]
fn modify_as_linux_sends_it_on_p7_then_query_reports_what_was_set() {
    let (mut rig, mut f) = up();
    // Linux 7.x: ENABLE_CC and TOS_ECN = ECT(1), with a generation-1 extension of mask 0.
    let mut base = B::new_zeroed();
    base.modify_mask = (B::MODIFY_MASK_ENABLE_CC | B::MODIFY_MASK_TOS_ECN).into();
    base.enable_cc = 1;
    base.tos_dscp_tos_ecn = 1;
    base.g = 9; // not in the mask
    let mut ext = G::new_zeroed();
    ext.cr_width = 3; // not in the mask either
    let cookie = f.send_modify_cc_tlv(&mut rig, base, &[gen1_tlv(ext, false)]);
    let c = f.wait(&mut rig, cookie);
    assert_eq!((c.event, c.status), (0x8c, 0), "{:?}", last_refusal(&mut rig));
    let (_, q, g1) = f.query_cc(&mut rig);
    assert_eq!((q.enable_cc, q.tos_dscp_tos_ecn, q.g), (1, 1, 0));
    assert_eq!(g1.cr_width, 0);
    // Linux 6.12: CC_MODE (probabilistic) as well; and generation-1 fields through their mask.
    let mut base = B::new_zeroed();
    base.modify_mask =
        (B::MODIFY_MASK_CC_MODE | B::MODIFY_MASK_TOS_DSCP | B::MODIFY_MASK_INACTIVITY_CP | B::MODIFY_MASK_RTT).into();
    base.cc_mode = B::CC_MODE_PROBABILISTIC_CC_MODE;
    base.tos_dscp_tos_ecn = (26 << 2) | 2; // DSCP 26; the ECN bits are not in the mask
    base.inactivity_th = 0x8000.into();
    base.rtt = 45.into();
    let mut ext = G::new_zeroed();
    ext.modify_mask =
        (G::MODIFY_MASK_MIN_TIME_BETWEEN_CNPS | G::MODIFY_MASK_CNP_ECN | G::MODIFY_MASK_LINK64B_PER_RTT).into();
    ext.inactivity_th_hi = 0x11.into();
    ext.min_time_between_cnps = 50.into();
    ext.cnp_ecn = G::CNP_ECN_ECT_0;
    ext.link64B_per_rtt = 0x0012_3456.into();
    ext.cr_width = 3;
    let cookie = f.send_modify_cc_tlv(&mut rig, base, &[gen1_tlv(ext, false)]);
    assert_eq!(f.wait(&mut rig, cookie).status, 0, "{:?}", last_refusal(&mut rig));
    let (_, q, g1) = f.query_cc(&mut rig);
    assert_eq!((q.enable_cc, q.cc_mode, q.tos_dscp_tos_ecn, q.rtt.get()), (1, 1, (26 << 2) | 1, 45));
    // bnxt_qplib_query_cc_param: inact_th | (inact_th_hi & 0x3f) << 16.
    let inactivity = u32::from(q.inactivity_th.get()) | (u32::from(g1.inactivity_th_hi.get() & 0x3f) << 16);
    assert_eq!(inactivity, 0x11_8000);
    assert_eq!((g1.min_time_between_cnps.get(), g1.cnp_ecn, g1.link64B_per_rtt.get()), (50, 2, 0x0012_3456));
    assert_eq!(g1.cr_width, 0, "not in the mask");
    // A plain command (no TLV) sets the base parameters alone.
    let mut plain = B::new_zeroed();
    plain.modify_mask = (B::MODIFY_MASK_ENABLE_CC | B::MODIFY_MASK_ALT_VLAN_PCP | B::MODIFY_MASK_ALT_TOS_DSCP).into();
    plain.alt_vlan_pcp = 7;
    plain.alt_tos_dscp = 48.into();
    f.ok(&mut rig, plain);
    let (_, q, g1) = f.query_cc(&mut rig);
    assert_eq!((q.enable_cc, q.alt_vlan_pcp, q.alt_tos_dscp, q.cc_mode), (0, 7, 48, 1));
    assert_eq!(g1.min_time_between_cnps.get(), 50);
    // DEINITIALIZE_FW drops them with every other RoCE object.
    f.ok(&mut rig, CmdqDeinitializeFw::new_zeroed());
    f.initialize(&mut rig);
    let (_, q, _) = f.query_cc(&mut rig);
    assert_eq!((q.alt_vlan_pcp, q.cc_mode), (0, 0));
}

#[test]
fn bad_modifies_are_refused_as_the_firmware_refuses_them_and_change_nothing() {
    let (mut rig, mut f) = up();
    let mut good = B::new_zeroed();
    good.modify_mask = (B::MODIFY_MASK_ENABLE_CC | B::MODIFY_MASK_G).into();
    good.enable_cc = 1;
    good.g = 4;
    let cookie = f.send_modify_cc_tlv(&mut rig, good, &[gen1_tlv(G::new_zeroed(), false)]);
    assert_eq!(f.wait(&mut rig, cookie).status, 0);
    let before = snapshot(&mut rig, &mut f);
    let edit = |e: &dyn Fn(&mut B)| {
        let mut b = good;
        e(&mut b);
        b
    };
    let mut bad_cnp = G::new_zeroed();
    bad_cnp.modify_mask = G::MODIFY_MASK_CNP_ECN.into();
    bad_cnp.cnp_ecn = 3;
    let mut wrong_discr = gen1_tlv(G::new_zeroed(), false);
    wrong_discr[1] = 0; // cmd_discr 0x8000 -> 0
    let mut too_long = gen1_tlv(G::new_zeroed(), false);
    too_long[6..8].copy_from_slice(&200u16.to_le_bytes());
    let mut gen2 = vec![0u8; 32];
    gen2[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
    gen2[3] = 2;
    gen2[4..6].copy_from_slice(&7u16.to_le_bytes()); // TLV_TYPE_MODIFY_ROCE_CC_GEN2
    gen2[6..8].copy_from_slice(&16u16.to_le_bytes());
    let cases: Vec<(B, Vec<Vec<u8>>, u8, &str)> = vec![
        (edit(&|b| b.modify_mask = (1 << 16).into()), vec![], INVALID_PARAMETER, "not defined"),
        (
            edit(&|b| (b.modify_mask, b.cc_mode) = (B::MODIFY_MASK_CC_MODE.into(), 2)),
            vec![],
            INVALID_PARAMETER,
            "cc_mode",
        ),
        (
            edit(&|b| (b.modify_mask, b.tos_dscp_tos_ecn) = (B::MODIFY_MASK_TOS_ECN.into(), 3)),
            vec![],
            INVALID_PARAMETER,
            "tos_ecn",
        ),
        (
            edit(&|b| (b.modify_mask, b.tcp_cp) = (B::MODIFY_MASK_TCP_CP.into(), 0x400.into())),
            vec![],
            INVALID_PARAMETER,
            "tcp_cp",
        ),
        (good, vec![gen1_tlv(bad_cnp, false)], INVALID_PARAMETER, "cnp_ecn"),
        (good, vec![gen1_tlv(G::new_zeroed(), true)], INVALID_PARAMETER, "another TLV follows"),
        (good, vec![wrong_discr], INVALID_PARAMETER, "cmd_discr"),
        (good, vec![too_long], INVALID_PARAMETER, "run past"),
        (good, vec![gen1_tlv(G::new_zeroed(), true), gen1_tlv(G::new_zeroed(), false)], INVALID_PARAMETER, "second"),
        (good, vec![gen2], NOT_IMPLEMENTED, "type 7"),
    ];
    let features = rig.world.nic_state(0).roce.unimplemented_features;
    for (base, exts, want, what) in cases {
        let cookie = f.send_modify_cc_tlv(&mut rig, base, &exts);
        let c = f.wait(&mut rig, cookie);
        let reason = last_refusal(&mut rig).unwrap_or_default();
        assert_eq!((c.event, c.status), (0x8c, want), "{what}: {reason}");
        assert!(reason.contains(what), "{what}: {reason}");
        assert_eq!(snapshot(&mut rig, &mut f), before, "{what}: nothing changed");
    }
    let after = rig.world.nic_state(0).roce.unimplemented_features;
    assert_eq!(after, features + 1, "the TLV the model does not keep is counted");
    // The plain command is checked the same way.
    assert_eq!(f.call(&mut rig, edit(&|b| b.enable_cc = 2)).status, INVALID_PARAMETER);
    assert_eq!(snapshot(&mut rig, &mut f), before);
}

#[test]
fn a_query_needs_room_for_the_whole_side_buffer() {
    let (mut rig, mut f) = up();
    let (c, _) = f.query(&mut rig, CmdqQueryRoceCc::new_zeroed(), 32);
    assert_eq!(c.status, INVALID_PARAMETER, "resp_size 2: the plain layout's size, not the TLV form's");
    assert!(last_refusal(&mut rig).unwrap().contains("144-byte"));
    let mut q = CmdqQueryRoceCc::new_zeroed();
    q.resp_size = 9;
    assert_eq!(f.call(&mut rig, q).status, INVALID_PARAMETER, "resp_addr 0");
    // Before INITIALIZE_FW the function takes neither command.
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    assert_eq!(f.call(&mut rig, B::new_zeroed()).status, 1, "FAIL");
}
