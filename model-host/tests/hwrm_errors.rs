//! Bad requests get HWRM errors (never a panic): unknown requests, bad fields, bad lengths, bad
//! and unreachable page tables, ids that do not exist.

mod common;

use bnxt_hsi::hwrm::layouts::*;
use common::{Pages, Rig, page_tables, req, reserve_rings, roomy_reservation};
use rstest::rstest;

const INVALID_PARAMS: u16 = 2;
const CMD_NOT_SUPPORTED: u16 = 0xffff;

#[test]
fn unknown_requests_are_not_supported_and_counted_by_type() {
    let mut rig = Rig::new(1);
    for (req_type, times) in [(0x7777u16, 2), (0xfff9, 1)] {
        for _ in 0..times {
            let mut bytes = vec![0u8; 32];
            bytes[..2].copy_from_slice(&req_type.to_le_bytes());
            let a = rig.call_raw(0, bytes);
            assert_eq!(a.code, CMD_NOT_SUPPORTED);
            assert_eq!(a.bytes.len(), size_of::<HwrmErrOutput>());
            assert_eq!(u16::from_le_bytes([a.bytes[2], a.bytes[3]]), req_type, "req_type echoed");
        }
    }
    let st = rig.world.nic_state(0);
    assert_eq!(st.unsupported_requests, vec![(0x7777, 2), (0xfff9, 1)]);
    assert_eq!(st.unimplemented, 3);
    assert_eq!(rig.world.unimplemented_total(), 3);
    rig.world.set_strict(true);
    assert!(rig.world.strict_violated());
    let events = rig.world.take_events();
    let unsupported =
        events.iter().filter(|e| matches!(e.kind, bnxt_model::events::EventKind::UnsupportedRequest { .. })).count();
    assert_eq!(unsupported, 3);
}

#[test]
fn unregistering_without_registering_is_refused() {
    let mut rig = Rig::new(1);
    assert_eq!(rig.call(0, req::<HwrmFuncDrvUnrgtrInput>()).code, INVALID_PARAMS);
    assert_eq!(rig.call(0, req::<HwrmFuncDrvIfChangeInput>()).code, INVALID_PARAMS, "IF_CHANGE before RGTR");
    rig.ok(0, req::<HwrmFuncDrvRgtrInput>());
    rig.ok(0, req::<HwrmFuncDrvUnrgtrInput>());
    assert_eq!(rig.call(0, req::<HwrmFuncDrvUnrgtrInput>()).code, INVALID_PARAMS);
}

#[test]
fn functions_and_ports_that_do_not_exist_are_refused() {
    let mut rig = Rig::new(1);
    let mut q: HwrmFuncQcapsInput = req();
    q.fid = 5.into();
    assert_eq!(rig.call(0, q).code, INVALID_PARAMS);
    let mut q: HwrmFuncQcfgInput = req();
    q.fid = 0x10.into();
    assert_eq!(rig.call(0, q).code, INVALID_PARAMS);
    let mut r: HwrmFuncResetInput = req();
    r.func_reset_level = HwrmFuncResetInput::FUNC_RESET_LEVEL_RESETVF;
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    r.func_reset_level = 9;
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    let mut p: HwrmPortPhyQcfgInput = req();
    p.port_id = 3.into();
    assert_eq!(rig.call(0, p).code, INVALID_PARAMS);
    let mut p: HwrmPortPhyQcapsInput = req();
    p.port_id = 1.into();
    assert_eq!(rig.call(0, p).code, INVALID_PARAMS);
    let mut rq: HwrmFuncResourceQcapsInput = req();
    rq.fid = 0x22.into();
    assert_eq!(rig.call(0, rq).code, INVALID_PARAMS);
    let mut qp: HwrmQueueQportcfgInput = req();
    qp.flags = 0x8.into();
    assert_eq!(rig.call(0, qp).code, INVALID_PARAMS);
}

#[rstest]
#[case::in_a_gap_of_the_numbering(0x7)]
#[case::past_the_last_defined(0x100)]
#[case::the_invalid_marker(0xffff)]
fn backing_store_qcaps_v2_refuses_undefined_types(#[case] ty: u16) {
    let mut rig = Rig::new(1);
    let mut r: HwrmFuncBackingStoreQcapsV2Input = req();
    r.type_ = ty.into();
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS, "type 0x{ty:x}");
}

#[test]
fn backing_store_qcaps_v2_skips_unoffered_types() {
    let mut rig = Rig::new(1);
    let mut r: HwrmFuncBackingStoreQcapsV2Input = req();
    r.type_ = 0x13.into();
    let c = rig.ok(0, r);
    assert_eq!(c.flags.get() & HwrmFuncBackingStoreQcapsV2Output::FLAGS_TYPE_VALID, 0);
    assert_eq!(c.next_valid_type.get(), 0xffff);
}

/// A valid CFG_V2 for 16 QP entries at level 1, and the pages it uses.
fn qp_cfg(rig: &Rig, pages: &mut Pages) -> HwrmFuncBackingStoreCfgV2Input {
    let root = page_tables(rig, 0, pages, 16 * 448, 1);
    let mut r: HwrmFuncBackingStoreCfgV2Input = req();
    r.type_ = 0.into();
    r.num_entries = 16.into();
    r.entry_size = 448.into();
    r.page_size_pbl_level = 1;
    r.page_dir = root.into();
    r
}

#[test]
fn backing_store_cfg_v2_checks_fields_and_page_tables() {
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    let good = qp_cfg(&rig, &mut pages);
    let qp_fail = HwrmFuncBackingStoreCfgV2CmdErr::CODE_QP_FAIL;

    let mut cases: Vec<(&str, HwrmFuncBackingStoreCfgV2Input)> = Vec::new();
    let mut r = good;
    r.type_ = 0x13.into();
    cases.push(("type not offered", r));
    let mut r = good;
    r.entry_size = 64.into();
    cases.push(("wrong entry size", r));
    let mut r = good;
    r.instance = 1.into();
    cases.push(("instance outside the bit map", r));
    let mut r = good;
    r.num_entries = 0.into();
    cases.push(("no entries", r));
    let mut r = good;
    r.num_entries = 1_000_000.into();
    cases.push(("too many entries", r));
    let mut r = good;
    r.page_size_pbl_level = 3;
    cases.push(("level 3", r));
    let mut r = good;
    r.page_size_pbl_level = 0x61;
    cases.push(("page size code 6", r));
    let mut r = good;
    r.page_size_pbl_level = 0;
    cases.push(("level 0 with two pages", r));
    let mut r = good;
    r.page_dir = 0x40_0000_0000.into();
    cases.push(("unmapped table", r));
    let mut r = good;
    r.page_dir = (good.page_dir.get() + 8).into();
    cases.push(("unaligned table", r));
    let mut r = good;
    r.subtype_valid_cnt = 5;
    cases.push(("five splits", r));
    for (what, r) in cases {
        let a = rig.call(0, r);
        assert_eq!(a.code, INVALID_PARAMS, "{what}");
        assert_eq!(a.bytes.len(), size_of::<HwrmErrOutput>(), "{what}");
        if what != "type not offered" {
            assert_eq!(a.cmd_err(), qp_fail, "{what}");
        }
    }

    // A PTE without its valid bit, and a PTE pointing at unmapped memory.
    let table = good.page_dir.get();
    let first = rig.peek(0, table, 8);
    rig.poke_u64s(0, table + 8, &[pages.take(1)]);
    assert_eq!(rig.call(0, good).code, INVALID_PARAMS);
    assert!(rig.last_reason().unwrap().contains("not valid"));
    rig.poke_u64s(0, table + 8, &[0x40_0000_0000 | 1]);
    assert_eq!(rig.call(0, good).code, INVALID_PARAMS);
    assert!(rig.last_reason().unwrap().contains("not reachable"));
    assert_eq!(rig.world.nic_state(0).limits.qps, 0, "nothing was configured");

    rig.poke(0, table, &first);
    rig.poke_u64s(0, table + 8, &[pages.take(1) | 1]);
    rig.ok(0, good);
    assert_eq!(rig.world.nic_state(0).limits.qps, 16);
    assert_eq!(rig.world.nic_state(0).dma_errors, 0, "refusals are not DMA errors");
}

#[test]
fn ring_alloc_checks_type_length_memory_and_ids() {
    let mut rig = Rig::new(1);
    rig.ok(0, roomy_reservation());
    let mut pages = Pages::default();
    let mem = pages.take(1);
    let mut good: HwrmRingAllocInput = req();
    good.ring_type = HwrmRingAllocInput::RING_TYPE_NQ;
    good.length = 64.into();
    good.page_tbl_addr = mem.into();
    good.int_mode = HwrmRingAllocInput::INT_MODE_MSIX;

    let mut r = good;
    r.ring_type = HwrmRingAllocInput::RING_TYPE_ROCE_CMPL;
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS, "ROCE_CMPL is not a P7 ring");
    r.ring_type = 9;
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    let mut r = good;
    r.length = 0.into();
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    let mut r = good;
    r.page_tbl_depth = 1;
    r.page_size = 11;
    let a = rig.call(0, r);
    assert_eq!((a.code, a.cmd_err()), (INVALID_PARAMS, HwrmRingAllocCmdErr::CODE_BAD_PG_SIZE));
    let mut r = good;
    r.page_tbl_addr = (mem + 16).into();
    let a = rig.call(0, r);
    assert_eq!((a.code, a.cmd_err()), (INVALID_PARAMS, HwrmRingAllocCmdErr::CODE_BAD_ADDR_ALIGNMENT));
    let mut r = good;
    r.length = (1 << 20).into();
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS, "a ring running past its memory");
    let mut r = good;
    r.page_tbl_depth = 3;
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    let mut r = good;
    r.logical_id = 500.into();
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS, "NQ vector beyond the MSI-X table");
    let mut r = good;
    r.enables = HwrmRingAllocInput::ENABLES_STAT_CTX_ID_VALID.into();
    r.stat_ctx_id = 7.into();
    let a = rig.call(0, r);
    assert_eq!((a.code, a.cmd_err()), (INVALID_PARAMS, HwrmRingAllocCmdErr::CODE_BAD_STAT_XID));
    let mut r = good;
    r.ring_type = HwrmRingAllocInput::RING_TYPE_L2_CMPL;
    r.enables = HwrmRingAllocInput::ENABLES_NQ_RING_ID_VALID.into();
    r.nq_ring_id = 3.into();
    let a = rig.call(0, r);
    assert_eq!((a.code, a.cmd_err()), (INVALID_PARAMS, HwrmRingAllocCmdErr::CODE_INVALID_NQ_RING_FOR_CQ));
    assert_eq!(rig.world.nic_state(0).rings, 0);

    let id = rig.ok(0, good).ring_id.get();
    let mut f: HwrmRingFreeInput = req();
    f.ring_type = HwrmRingFreeInput::RING_TYPE_TX;
    f.ring_id = id.into();
    let a = rig.call(0, f);
    assert_eq!((a.code, a.cmd_err()), (INVALID_PARAMS, HwrmRingFreeCmdErr::CODE_NO_RING_ALLOCATED), "type mismatch");
    f.ring_type = HwrmRingFreeInput::RING_TYPE_NQ;
    f.ring_id = (id + 1).into();
    assert_eq!(rig.call(0, f).code, INVALID_PARAMS, "unknown id");
    f.ring_id = id.into();
    rig.ok(0, f);
    assert_eq!(rig.call(0, f).code, INVALID_PARAMS, "freed twice");
}

#[test]
fn stat_ctx_alloc_needs_reachable_memory_and_free_needs_a_known_id() {
    let mut rig = Rig::new(1);
    rig.ok(0, roomy_reservation());
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = 0x40_0000_0000u64.into();
    s.stats_dma_length = 256.into();
    let a = rig.call(0, s);
    assert_eq!((a.code, a.cmd_err()), (INVALID_PARAMS, HwrmStatCtxAllocCmdErr::CODE_INVALID_DMA_ADDR));
    s.stats_dma_addr = 0.into();
    assert_eq!(rig.call(0, s).code, INVALID_PARAMS);
    let mut f: HwrmStatCtxFreeInput = req();
    f.stat_ctx_id = 3.into();
    assert_eq!(rig.call(0, f).code, INVALID_PARAMS);
    s.stats_dma_addr = Pages::default().take(1).into();
    let id = rig.ok(0, s).stat_ctx_id.get();
    assert_eq!(rig.ok(0, s).stat_ctx_id.get(), id + 1);
    f.stat_ctx_id = id.into();
    rig.ok(0, f);
    assert_eq!(rig.ok(0, s).stat_ctx_id.get(), id, "the lowest free id is reused");
}

#[test]
fn func_reset_frees_rings_and_stat_contexts_but_keeps_the_registration() {
    let mut rig = Rig::new(1);
    rig.ok(0, roomy_reservation());
    rig.ok(0, req::<HwrmFuncDrvRgtrInput>());
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = Pages::default().take(1).into();
    rig.ok(0, s);
    assert_eq!(rig.world.nic_state(0).stat_contexts, 1);
    rig.ok(0, req::<HwrmFuncResetInput>());
    let st = rig.world.nic_state(0);
    assert_eq!(st.stat_contexts, 0);
    assert!(st.driver_registered);
}

#[test]
fn backing_store_cfg_v2_takes_larger_pages_aligned_to_their_size() {
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    // One 64-KiB data page (aligned to 64 KiB) named by a level-1 table.
    let table = pages.take(1);
    let data = pages.take(32).next_multiple_of(64 << 10);
    rig.poke_u64s(0, table, &[data | 1]);
    let mut r: HwrmFuncBackingStoreCfgV2Input = req();
    r.type_ = 0xf.into();
    r.num_entries = 4096.into();
    r.entry_size = 16.into();
    r.page_size_pbl_level = HwrmFuncBackingStoreCfgV2Input::PAGE_SIZE_PG_64K | 1;
    r.page_dir = table.into();
    rig.ok(0, r);
    let ctx = &rig.world.device(0).firmware().state().context;
    let tim = ctx.region(bnxt_hsi::backing_store::CtxType::Tim, 0).unwrap();
    assert_eq!((tim.page_size, tim.pages.clone()), (64 << 10, vec![data]));
    // The same page 4 KiB off its 64-KiB alignment is refused.
    rig.poke_u64s(0, table, &[(data + 4096) | 1]);
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    assert!(rig.last_reason().unwrap().contains("not aligned"));
}

#[test]
fn allocations_past_the_functions_reservation_are_refused_until_it_grows() {
    const RESOURCE_ALLOC_ERROR: u16 = 4;
    type R = HwrmRingAllocInput;
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    let ring = |pages: &mut Pages, ty: u8| {
        let mut r: R = req();
        r.ring_type = ty;
        r.length = 64.into();
        r.page_tbl_addr = pages.take(1).into();
        r
    };
    let nq = ring(&mut pages, R::RING_TYPE_NQ);
    let a = rig.call(0, nq);
    assert_eq!((a.code, a.cmd_err()), (RESOURCE_ALLOC_ERROR, HwrmRingAllocCmdErr::CODE_NO_RESOURCE_FOR_PF));
    assert!(rig.last_reason().unwrap().contains("num_msix (NQs) is 0"), "nothing reserved yet");

    // One of each (no TX rings).
    rig.ok(0, reserve_rings(0, 1, 1, 1, 1, 1, 1));
    rig.ok(0, nq);
    let a = rig.call(0, ring(&mut pages, R::RING_TYPE_NQ));
    assert_eq!((a.code, a.cmd_err()), (RESOURCE_ALLOC_ERROR, HwrmRingAllocCmdErr::CODE_NO_RESOURCE_FOR_PF));
    assert!(rig.last_reason().unwrap().contains("num_msix (NQs) is 1 and 1 are allocated"));
    rig.ok(0, ring(&mut pages, R::RING_TYPE_L2_CMPL));
    assert_eq!(rig.call(0, ring(&mut pages, R::RING_TYPE_L2_CMPL)).code, RESOURCE_ALLOC_ERROR);
    rig.ok(0, ring(&mut pages, R::RING_TYPE_RX));
    assert_eq!(rig.call(0, ring(&mut pages, R::RING_TYPE_RX_AGG)).code, RESOURCE_ALLOC_ERROR, "RX and AGG share");
    assert_eq!(rig.call(0, ring(&mut pages, R::RING_TYPE_TX)).code, RESOURCE_ALLOC_ERROR);
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = pages.take(1).into();
    rig.ok(0, s);
    let a = rig.call(0, s);
    assert_eq!((a.code, a.cmd_err()), (RESOURCE_ALLOC_ERROR, HwrmStatCtxAllocCmdErr::CODE_RES_POOL_EXHAUSTED));
    rig.ok(0, req::<HwrmVnicAllocInput>());
    assert_eq!(rig.call(0, req::<HwrmVnicAllocInput>()).code, RESOURCE_ALLOC_ERROR);
    rig.ok(0, req::<HwrmVnicRssCosLbCtxAllocInput>());
    assert_eq!(rig.call(0, req::<HwrmVnicRssCosLbCtxAllocInput>()).code, RESOURCE_ALLOC_ERROR);
    let st = rig.world.nic_state(0);
    assert_eq!((st.rings, st.stat_contexts), (3, 1));

    // A larger reservation lets the next through; FUNC_RESET frees everything and the
    // reservation with it.
    rig.ok(0, reserve_rings(1, 1, 1, 2, 1, 1, 1));
    rig.ok(0, ring(&mut pages, R::RING_TYPE_NQ));
    rig.ok(0, req::<HwrmFuncResetInput>());
    assert_eq!(rig.call(0, ring(&mut pages, R::RING_TYPE_NQ)).code, RESOURCE_ALLOC_ERROR);
}
