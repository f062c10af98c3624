//! The HWRM bring-up of a P7 PF in bnxt_en's order (hardware-map §3.1), against the model, with
//! the values bnxt_en depends on checked at each step.

mod common;

use bnxt_hsi::hwrm::layouts::*;
use common::{Pages, Rig, page_tables, req, reserve_rings};

/// Context memory configured in the test: (type, entries) per type in ascending order; small
/// enough to stay quick, within each type's [min, max].
const CONTEXT: [(u16, u32); 9] =
    [(0x0, 128), (0x1, 1088), (0x2, 2304), (0x3, 1024), (0x4, 2048), (0x5, 64), (0x6, 64), (0xe, 256), (0xf, 128)];

#[test]
fn ver_get_reports_a_p7_with_the_mailbox_limits() {
    let mut rig = Rig::new(1);
    let mut r: HwrmVerGetInput = req();
    (r.hwrm_intf_maj, r.hwrm_intf_min, r.hwrm_intf_upd) = (1, 10, 3);
    let v = rig.ok(0, r);
    assert_eq!((v.hwrm_intf_maj_8b, v.hwrm_intf_min_8b, v.hwrm_intf_upd_8b), (1, 10, 3));
    assert_eq!((v.hwrm_intf_major.get(), v.hwrm_intf_minor.get(), v.hwrm_intf_build.get()), (1, 10, 3));
    assert_eq!(v.chip_num.get(), 0x1760);
    assert_eq!(v.chip_platform_type, HwrmVerGetOutput::CHIP_PLATFORM_TYPE_ASIC);
    assert_eq!(v.max_req_win_len.get(), 128);
    assert!(v.max_ext_req_len.get() >= 160, "FUNC_CFG (160 bytes) must fit a short command");
    assert_eq!(v.max_req_timeout.get(), 40);
    assert!(v.def_req_timeout.get() > 0);
    let caps = v.dev_caps_cfg.get();
    assert_ne!(caps & HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_SUPPORTED, 0);
    assert_eq!(caps & HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_REQUIRED, 0);
    assert_eq!(v.flags & HwrmVerGetOutput::FLAGS_DEV_NOT_RDY, 0);
    assert_eq!(v.always_1, 1);
    assert_ne!(v.hwrm_fw_major.get(), 0);
    assert_ne!(v.active_pkg_name[0], 0);
    assert_eq!(v.resp_len.get() as usize, size_of::<HwrmVerGetOutput>());
}

#[test]
fn qcaps_and_qcfg_describe_a_roce_capable_pf_with_p7_doorbells() {
    let mut rig = Rig::new(2);
    for nic in 0..2 {
        let mut q: HwrmFuncQcapsInput = req();
        q.fid = 0xffff.into();
        let caps = rig.ok(nic, q);
        assert_eq!(caps.mac_address, rig.world.nic_state(nic).mac);
        assert_ne!(caps.flags.get() & HwrmFuncQcapsOutput::FLAGS_ROCE_V2_SUPPORTED, 0);
        assert_ne!(caps.flags_ext.get() & HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_SUPPORTED, 0);
        assert!(caps.max_stat_ctx.get() > 0 && caps.max_cmpl_rings.get() > 0 && caps.max_vnics.get() > 0);
        assert_ne!(caps.device_serial_number, [0; 8]);

        let mut q: HwrmFuncQcfgInput = req();
        q.fid = 0xffff.into();
        let cfg = rig.ok(nic, q);
        assert_eq!(cfg.mac_address, caps.mac_address);
        let db_offset = cfg.legacy_l2_db_size_kb.get() as u64 * 1024;
        let db_size = cfg.l2_doorbell_bar_size_kb.get() as u64 * 1024;
        // bnxt.c bnxt_hwrm_func_qcfg: the size must exceed the P7 offset and fit BAR2.
        assert!(db_offset > 0 && db_size > db_offset && db_size <= bnxt_model::config_space::BAR2_SIZE);
        assert!(cfg.admin_mtu.get() >= 60 && cfg.admin_mtu.get() <= cfg.max_mtu_configured.get());
        assert_eq!(cfg.always_1, 1);
        assert_eq!(cfg.pci_id.get(), ((nic as u16) + 1) << 8);
    }
    let a = rig.world.nic_state(0).mac;
    let b = rig.world.nic_state(1).mac;
    assert_ne!(a, b);
}

#[test]
fn the_whole_bring_up_and_teardown_in_bnxt_en_order() {
    let mut rig = Rig::new(1);
    rig.ok(0, req::<HwrmVerGetInput>());
    rig.ok(0, req::<HwrmFuncResetInput>());
    let mut q: HwrmFuncQcapsInput = req();
    q.fid = 0xffff.into();
    rig.ok(0, q);

    let mut rg: HwrmFuncDrvRgtrInput = req();
    rg.enables = (HwrmFuncDrvRgtrInput::ENABLES_OS_TYPE | HwrmFuncDrvRgtrInput::ENABLES_VER).into();
    rg.os_type = HwrmFuncDrvRgtrInput::OS_TYPE_LINUX.into();
    let out = rig.ok(0, rg);
    assert_ne!(out.flags.get() & HwrmFuncDrvRgtrOutput::FLAGS_IF_CHANGE_SUPPORTED, 0);
    assert!(rig.world.nic_state(0).driver_registered);

    let qp = rig.ok(0, req::<HwrmQueueQportcfgInput>());
    assert!(qp.max_configurable_queues > 0);

    // The QCAPS_V2 type walk, as bnxt_en runs it.
    let mut walked = Vec::new();
    let mut ty = 0u16;
    while ty != 0xffff {
        let mut r: HwrmFuncBackingStoreQcapsV2Input = req();
        r.type_ = ty.into();
        let c = rig.ok(0, r);
        if c.flags.get() & HwrmFuncBackingStoreQcapsV2Output::FLAGS_TYPE_VALID != 0 {
            assert!(c.entry_size.get() > 0 && c.max_num_entries.get() >= c.min_num_entries.get());
            walked.push((ty, c));
        }
        ty = c.next_valid_type.get();
    }
    assert_eq!(walked.iter().map(|(t, _)| *t).collect::<Vec<_>>(), CONTEXT.iter().map(|(t, _)| *t).collect::<Vec<_>>());
    let fp = &walked.iter().find(|(t, _)| *t == 6).unwrap().1;
    assert!(fp.instance_bit_map.get().count_ones() >= 1);
    let qp_caps = &walked[0].1;
    assert_eq!(qp_caps.subtype_valid_cnt, 2, "QP splits: L2 QPs, QP1 QPs");

    // CFG_V2 for every (type, instance), the last with BS_CFG_ALL_DONE.
    let mut pages = Pages::default();
    let mut sends = Vec::new();
    for (ty, c) in &walked {
        let entries = CONTEXT.iter().find(|(t, _)| t == ty).unwrap().1;
        let map = c.instance_bit_map.get().max(1);
        for inst in (0..32).filter(|i| map & (1 << i) != 0) {
            sends.push((*ty, inst as u16, entries, c.entry_size.get(), c.subtype_valid_cnt, *c));
        }
    }
    let last = sends.len() - 1;
    for (i, (ty, inst, entries, size, cnt, c)) in sends.into_iter().enumerate() {
        let bytes = entries as u64 * size as u64;
        let level = if ty == 0 || ty == 0xe { 2 } else { 1 };
        let root = page_tables(&rig, 0, &mut pages, bytes, level);
        let mut r: HwrmFuncBackingStoreCfgV2Input = req();
        r.type_ = ty.into();
        r.instance = inst.into();
        r.num_entries = entries.into();
        r.entry_size = size.into();
        r.page_size_pbl_level = level;
        r.page_dir = root.into();
        r.subtype_valid_cnt = cnt;
        r.split_entry_0 = if ty == 0xe { 64.into() } else { c.split_entry_0 };
        r.split_entry_1 = c.split_entry_1;
        if i == last {
            r.flags = HwrmFuncBackingStoreCfgV2Input::FLAGS_BS_CFG_ALL_DONE.into();
        }
        if ty == 0 {
            // A QP table smaller than its L2 + QP1 splits is refused.
            r.split_entry_0 = 1024.into();
            let a = rig.call(0, r);
            assert_eq!(a.code, 2);
            r.split_entry_0 = 16.into();
            r.split_entry_1 = 4.into();
        }
        rig.ok(0, r);
        assert_eq!(rig.world.nic_state(0).context_memory_done, i == last);
    }
    let limits = rig.world.nic_state(0).limits;
    assert_eq!((limits.qps, limits.l2_qps, limits.qp1_qps), (128, 16, 4));
    assert_eq!((limits.regions, limits.avs), (256 - 64, 64));
    assert_eq!((limits.srqs, limits.cqs), (1088, 2304));
    // The model kept every page the tables named, in order.
    let ctx = &rig.world.device(0).firmware().state().context;
    let qp_region = ctx.region(bnxt_hsi::backing_store::CtxType::Qp, 0).unwrap();
    assert_eq!(qp_region.pages.len(), (128u64 * 448).div_ceil(4096) as usize);
    assert!(qp_region.pages.windows(2).all(|w| w[1] == w[0] + 4096));

    let mut r: HwrmFuncResourceQcapsInput = req();
    r.fid = 0xffff.into();
    let rc = rig.ok(0, r);
    assert!(rc.max_msix.get() >= 2, "bnxt_re needs two vectors");
    rig.ok(0, req::<HwrmPortPhyQcapsInput>());
    let phy = rig.ok(0, req::<HwrmPortPhyQcfgInput>());
    assert_eq!(phy.link, HwrmPortPhyQcfgOutput::LINK_LINK);
    assert_eq!(phy.link_speed.get(), HwrmPortPhyQcfgOutput::LINK_SPEED_400GB);

    let mut up: HwrmFuncDrvIfChangeInput = req();
    up.flags = HwrmFuncDrvIfChangeInput::FLAGS_UP.into();
    assert_eq!(rig.ok(0, up).flags.get(), 0);
    // The reservation the rings and the statistics context below come out of.
    rig.ok(0, reserve_rings(0, 0, 1, 2, 1, 0, 0));

    // A statistics context and an NQ on it, then a completion ring on the NQ.
    let stats = pages.take(1);
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = stats.into();
    s.stats_dma_length = 1024.into();
    s.stat_ctx_flags = HwrmStatCtxAllocInput::STAT_CTX_FLAGS_ROCE;
    let stat_id = rig.ok(0, s).stat_ctx_id.get();
    let nq_mem = page_tables(&rig, 0, &mut pages, 2 * 4096, 1);
    let mut nq: HwrmRingAllocInput = req();
    nq.ring_type = HwrmRingAllocInput::RING_TYPE_NQ;
    nq.length = 512.into();
    nq.page_tbl_addr = nq_mem.into();
    nq.page_tbl_depth = 1;
    nq.page_size = 12;
    nq.logical_id = 1.into();
    nq.int_mode = HwrmRingAllocInput::INT_MODE_MSIX;
    let nq_out = rig.ok(0, nq);
    let nq_id = nq_out.ring_id.get();
    assert_eq!(nq_out.logical_ring_id.get(), 1);
    let cq_mem = pages.take(1);
    let mut cq: HwrmRingAllocInput = req();
    cq.ring_type = HwrmRingAllocInput::RING_TYPE_L2_CMPL;
    cq.length = 256.into();
    cq.page_tbl_addr = cq_mem.into();
    cq.enables = (HwrmRingAllocInput::ENABLES_NQ_RING_ID_VALID | HwrmRingAllocInput::ENABLES_STAT_CTX_ID_VALID).into();
    cq.nq_ring_id = nq_id.into();
    cq.stat_ctx_id = stat_id.into();
    let cq_id = rig.ok(0, cq).ring_id.get();
    assert_ne!(cq_id, nq_id);
    let st = rig.world.nic_state(0);
    assert_eq!((st.rings, st.stat_contexts), (2, 1));

    // Teardown.
    for (ty, id) in [(HwrmRingFreeInput::RING_TYPE_L2_CMPL, cq_id), (HwrmRingFreeInput::RING_TYPE_NQ, nq_id)] {
        let mut f: HwrmRingFreeInput = req();
        f.ring_type = ty;
        f.ring_id = id.into();
        rig.ok(0, f);
    }
    let mut f: HwrmStatCtxFreeInput = req();
    f.stat_ctx_id = stat_id.into();
    assert_eq!(rig.ok(0, f).stat_ctx_id.get(), stat_id);
    rig.ok(0, req::<HwrmFuncDrvUnrgtrInput>());
    let st = rig.world.nic_state(0);
    assert!(!st.driver_registered);
    assert_eq!((st.rings, st.stat_contexts, st.dma_errors, st.pending_responses), (0, 0, 0, 0));
    assert!(st.unsupported_requests.is_empty());
    assert_eq!(st.unimplemented, 0);
}
