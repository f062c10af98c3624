//! The L2 side's open and close inside `Nic::open`/`close`, against the fake function's firmware.

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::roce::doorbell::{DbPath, DbType, Doorbell};

use super::vnic::ROCE_MRU;
use crate::error::Error;
use crate::nic::Nic;
use crate::quarantine;
use crate::testing::machine::{FILTER_ID, FakeMachine, Fault, MAC};
use crate::testing::{parse, req_type};
use bnxt_pci::Clock;

/// The requests of an open from FUNC_RESOURCE_QCAPS to the L2 filter.
const L2_OPEN: [u16; 16] = [
    0x190, // FUNC_RESOURCE_QCAPS
    0x16,  // FUNC_QCFG
    0x4a,  // VNIC_QCAPS
    0x2a,  // PORT_PHY_QCAPS
    0x27,  // PORT_PHY_QCFG
    0x0d,  // FUNC_DRV_IF_CHANGE up
    0x17,  // FUNC_CFG
    0x16,  // FUNC_QCFG
    0xb0,  // STAT_CTX_ALLOC
    0x50,  // RING_ALLOC NQ
    0x50,  // RING_ALLOC RX
    0x50,  // RING_ALLOC L2_CMPL
    0x40,  // VNIC_ALLOC
    0x70,  // VNIC_RSS_COS_LB_CTX_ALLOC
    0x46,  // VNIC_RSS_CFG
    0x42,  // VNIC_CFG
];

fn sent<T: zerocopy::FromBytes>(m: &FakeMachine, ty: u16) -> Vec<T> {
    m.f(0).submissions().iter().filter(|s| req_type(&s.request) == ty).map(|s| parse(&s.request)).collect()
}

#[test]
fn open_sets_the_l2_side_up_in_bnxt_en_order_before_the_roce_engine() {
    let m = FakeMachine::new(1);
    let _nic = Nic::open(&m, 0).unwrap();
    let order = m.order(0);
    let at = order.iter().position(|&t| t == 0x190).expect("FUNC_RESOURCE_QCAPS is sent");
    assert_eq!(&order[at..at + L2_OPEN.len()], &L2_OPEN);
    assert_eq!(order[at + L2_OPEN.len()], 0x90, "CFA_L2_FILTER_ALLOC");
    assert_eq!(&order[at + L2_OPEN.len() + 1..], &[0x50, 0xb0, 0x50], "then the RoCE engine's CREQ, statistics, NQ");

    let up: HwrmFuncDrvIfChangeInput = sent(&m, 0x0d)[0];
    assert_eq!(up.flags.get(), HwrmFuncDrvIfChangeInput::FLAGS_UP);

    // The reservation, as a short command (160 bytes, the fake offers 256), counting the RoCE
    // engine's CREQ, NQ and statistics context.
    let cfg = m.f(0).submissions().into_iter().find(|s| req_type(&s.request) == 0x17).unwrap();
    assert!(cfg.short);
    assert_eq!(cfg.request.len(), 160);
    let cfg: HwrmFuncCfgInput = parse(&cfg.request);
    type C = HwrmFuncCfgInput;
    assert_eq!(cfg.fid.get(), 0xffff);
    assert_eq!(
        cfg.enables.get(),
        C::ENABLES_NUM_RX_RINGS
            | C::ENABLES_NUM_STAT_CTXS
            | C::ENABLES_NUM_MSIX
            | C::ENABLES_NUM_CMPL_RINGS
            | C::ENABLES_NUM_VNICS
            | C::ENABLES_NUM_RSSCOS_CTXS
    );
    let counts = (
        cfg.num_rx_rings.get(),
        cfg.num_cmpl_rings.get(),
        cfg.num_msix.get(),
        cfg.num_stat_ctxs.get(),
        cfg.num_vnics.get(),
        cfg.num_rsscos_ctxs.get(),
        cfg.num_tx_rings.get(),
    );
    assert_eq!(counts, (1, 1, 3, 2, 1, 1, 0));

    // The L2 statistics context, not a RoCE one; then NQ, RX ring, completion ring.
    let stats: Vec<HwrmStatCtxAllocInput> = sent(&m, 0xb0);
    assert_eq!((stats[0].stat_ctx_flags, stats[0].stats_dma_length.get()), (0, 160));
    assert_eq!(stats[1].stat_ctx_flags, HwrmStatCtxAllocInput::STAT_CTX_FLAGS_ROCE);
    type R = HwrmRingAllocInput;
    let rings: Vec<R> = sent(&m, 0x50);
    let (nq, rx, cmpl, creq, roce_nq) = (&rings[0], &rings[1], &rings[2], &rings[3], &rings[4]);
    assert_eq!((nq.ring_type, nq.logical_id.get(), nq.int_mode, nq.page_tbl_depth), (5, 0, R::INT_MODE_MSIX, 0));
    assert_eq!(nq.length.get(), 256);
    assert_eq!(rx.ring_type, R::RING_TYPE_RX);
    assert_eq!(rx.enables.get(), R::ENABLES_RX_BUF_SIZE_VALID | R::ENABLES_NQ_RING_ID_VALID);
    assert_eq!((rx.nq_ring_id.get(), rx.stat_ctx_id.get(), rx.rx_buf_size.get()), (0, 3, ROCE_MRU));
    assert_eq!(cmpl.ring_type, R::RING_TYPE_L2_CMPL);
    assert_eq!((cmpl.enables.get(), cmpl.nq_ring_id.get()), (R::ENABLES_NQ_RING_ID_VALID, 0));
    assert_ne!(cmpl.cq_handle.get(), 0);
    assert_eq!((creq.logical_id.get(), roce_nq.logical_id.get()), (1, 2), "the RoCE vectors follow the L2 NQ's");
    for r in [nq, rx, cmpl] {
        assert_eq!(r.page_tbl_addr.get() & 0xfff, 0, "one page, named by its address");
    }

    // The VNIC: RSS over the one RX ring and its completion ring, the MRU for path MTU 4096,
    // the RoCE VNIC mode; the filter for the MAC.
    let alloc: HwrmVnicAllocInput = sent(&m, 0x40)[0];
    assert_eq!(alloc.flags.get(), HwrmVnicAllocInput::FLAGS_DEFAULT);
    let rss: HwrmVnicRssCfgInput = sent(&m, 0x46)[0];
    assert_eq!((rss.vnic_id.get(), rss.rss_ctx_idx.get(), rss.hash_type.get()), (0, 7, 0x3f));
    assert_eq!(rss.flags, HwrmVnicRssCfgInput::FLAGS_IPSEC_HASH_TYPE_CFG_SUPPORT);
    let table = m.f(0).dma_read(rss.ring_grp_tbl_addr.get(), 256);
    for pair in table.chunks(4) {
        assert_eq!(pair, [1, 0, 2, 0], "every pair names RX ring 1 and completion ring 2");
    }
    assert_eq!(m.f(0).dma_read(rss.hash_key_tbl_addr.get(), 40).len(), 40);
    let vcfg: HwrmVnicCfgInput = sent(&m, 0x42)[0];
    type V = HwrmVnicCfgInput;
    assert_eq!(vcfg.enables.get(), V::ENABLES_DEFAULT_RX_RING_ID | V::ENABLES_DEFAULT_CMPL_RING_ID);
    assert_eq!((vcfg.default_rx_ring_id.get(), vcfg.default_cmpl_ring_id.get()), (1, 2));
    assert_eq!(vcfg.mru.get(), 4096 + 96 + 18);
    assert_eq!(vcfg.flags.get(), V::FLAGS_ROCE_DUAL_VNIC_MODE, "VNIC_QCAPS was not answered: dual VNIC mode");
    let f: HwrmCfaL2FilterAllocInput = sent(&m, 0x90)[0];
    type F = HwrmCfaL2FilterAllocInput;
    assert_eq!(f.flags.get(), F::FLAGS_PATH_RX | F::FLAGS_OUTERMOST | F::FLAGS_XDP_DISABLE | F::FLAGS_TRAFFIC_ROCE);
    assert_eq!((f.l2_addr, f.l2_addr_mask, f.dst_id.get()), (MAC, [0xff; 6], 0));

    // Doorbells after the rings: the NQ masked, the RX producer, the completion consumer, on
    // the L2 path.
    let l2: Vec<Doorbell> = m
        .f(0)
        .doorbells()
        .iter()
        .map(|(_, _, v)| Doorbell::decode(*v).unwrap())
        .filter(|d| d.path == DbPath::L2)
        .collect();
    let got: Vec<(DbType, u32, u32)> = l2.iter().map(|d| (d.ty, d.xid, d.index)).collect();
    assert_eq!(got, [(DbType::NqMask, 0, 0), (DbType::Srq, 1, 0), (DbType::Cq, 2, 0)]);
    assert!(l2.iter().all(|d| d.valid));
}

#[test]
fn close_frees_the_l2_side_in_reverse_after_the_roce_engine_then_goes_down() {
    let m = FakeMachine::new(1);
    let mut nic = Nic::open(&m, 0).unwrap();
    let before = m.f(0).submissions().len();
    nic.close();
    let after: Vec<u16> = m.f(0).submissions()[before..].iter().map(|s| req_type(&s.request)).collect();
    // RoCE: RING_FREE NQ, STAT_CTX_FREE, RING_FREE CREQ; L2: filter, VNIC, RSS context, RX,
    // completion ring, NQ, statistics; FUNC_DRV_IF_CHANGE down; FUNC_DRV_UNRGTR.
    assert_eq!(after, [0x51, 0xb1, 0x51, 0x91, 0x41, 0x71, 0x51, 0x51, 0x51, 0xb1, 0x0d, 0x1a]);
    let frees: Vec<HwrmRingFreeInput> = m.f(0).submissions()[before..]
        .iter()
        .filter(|s| req_type(&s.request) == 0x51)
        .map(|s| parse(&s.request))
        .collect();
    let l2: Vec<(u8, u16)> = frees[2..].iter().map(|f| (f.ring_type, f.ring_id.get())).collect();
    assert_eq!(l2, [(2, 1), (0, 2), (5, 0)]);
    let filter: HwrmCfaL2FilterFreeInput = sent(&m, 0x91)[0];
    assert_eq!(filter.l2_filter_id.get(), FILTER_ID);
    let down: HwrmFuncDrvIfChangeInput = *sent(&m, 0x0d).last().unwrap();
    assert_eq!(down.flags.get(), 0);
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_refusal_at_each_l2_request_fails_the_open_and_undoes_what_came_before() {
    // (req_type, occurrence, name, what the undo sends after it, in order)
    let cases: [(u16, u32, &str, &[u16]); 11] = [
        (0x190, 1, "FUNC_RESOURCE_QCAPS", &[0x1a]),
        (0x0d, 1, "FUNC_DRV_IF_CHANGE", &[0x1a]),
        (0x17, 1, "FUNC_CFG", &[0x0d, 0x1a]),
        (0x16, 2, "FUNC_QCFG", &[0x0d, 0x1a]),
        (0xb0, 1, "STAT_CTX_ALLOC", &[0x0d, 0x1a]),
        (0x50, 2, "RING_ALLOC", &[0x51, 0xb1, 0x0d, 0x1a]),
        (0x40, 1, "VNIC_ALLOC", &[0x51, 0x51, 0x51, 0xb1, 0x0d, 0x1a]),
        (0x70, 1, "VNIC_RSS_COS_LB_CTX_ALLOC", &[0x41, 0x51, 0x51, 0x51, 0xb1, 0x0d, 0x1a]),
        (0x46, 1, "VNIC_RSS_CFG", &[0x41, 0x71, 0x51, 0x51, 0x51, 0xb1, 0x0d, 0x1a]),
        (0x42, 1, "VNIC_CFG", &[0x41, 0x71, 0x51, 0x51, 0x51, 0xb1, 0x0d, 0x1a]),
        (0x90, 1, "CFA_L2_FILTER_ALLOC", &[0x41, 0x71, 0x51, 0x51, 0x51, 0xb1, 0x0d, 0x1a]),
    ];
    for (ty, nth, name, undo) in cases {
        let m = FakeMachine::new(1);
        m.fault(ty, nth, Fault::Refuse(ErrorCode::ResourceAllocError.value()));
        let err = Nic::open(&m, 0).unwrap_err();
        assert_eq!(
            err,
            Error::Refused { nic: "BNXT".into(), request: name.into(), code: ErrorCode::ResourceAllocError },
            "{name}"
        );
        let order = m.order(0);
        let at = order.iter().enumerate().filter(|(_, t)| **t == ty).nth(nth as usize - 1).unwrap().0;
        assert_eq!(&order[at + 1..], undo, "{name}: {order:x?}");
        assert_eq!(m.f(0).dma_live(), 0, "{name}");
        assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 0);
    }
}

#[test]
fn an_unanswered_l2_request_wedges_the_open_and_keeps_the_memory_it_may_name() {
    let m = FakeMachine::new(1);
    m.fault(0x46, 1, Fault::Never); // VNIC_RSS_CFG names the RSS page
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(matches!(&err, Error::Timeout { request, .. } if request == "VNIC_RSS_CFG"), "{err}");
    assert_eq!(*m.order(0).last().unwrap(), 0x46, "nothing is sent to a wedged firmware");
    // The HWRM buffer, and the L2 side's memory: three ring pages, the RSS page, the statistics.
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 2);
    assert_eq!(m.f(0).dma_live(), 1 + 5);
    m.clear_faults();
    drop(Nic::open(&m, 0).unwrap());
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_busy_firmware_gets_if_change_again_50_ms_later_up_to_ten_times() {
    let m = FakeMachine::new(1);
    for nth in 1..=3 {
        m.fault(0x0d, nth, Fault::Refuse(ErrorCode::Busy.value()));
    }
    let start = m.f(0).now();
    let _nic = Nic::open(&m, 0).unwrap();
    assert_eq!(m.order(0).iter().filter(|t| **t == 0x0d).count(), 4);
    assert!(m.f(0).now() - start >= std::time::Duration::from_millis(150));
    drop(_nic);

    let m = FakeMachine::new(1);
    m.fault(0x0d, 0, Fault::Refuse(ErrorCode::HotResetProgress.value()));
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(
        matches!(&err, Error::Refused { request, code: ErrorCode::HotResetProgress, .. } if request == "FUNC_DRV_IF_CHANGE")
    );
    assert_eq!(m.order(0).iter().filter(|t| **t == 0x0d).count(), 10);
}

#[test]
fn a_firmware_that_reset_or_changed_its_caps_during_open_fails_it_and_a_smaller_grant_too() {
    // IF_CHANGE answers CAPS_CHANGE.
    let m = FakeMachine::patched(|ty, b| {
        if ty == 0x0d {
            b[8] = HwrmFuncDrvIfChangeOutput::FLAGS_CAPS_CHANGE as u8;
        }
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(err.to_string().contains("changed its capabilities during open"), "{err}");
    assert_eq!(*m.order(0).last().unwrap(), 0x1a, "unregistered; no IF_CHANGE down for an interface not up");

    // FUNC_QCFG grants one NQ fewer than asked.
    let m = FakeMachine::patched(|ty, b| {
        if ty == 0x16 && b[0x48] == 3 {
            b[0x48] = 2;
        }
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert_eq!(err.to_string(), "BNXT: FUNC_CFG reserved 2 of the 3 NQs (MSI-X) asked for (FUNC_QCFG)");

    // A resource manager offering too few VNICs is refused before anything is reserved.
    let m = FakeMachine::patched(|ty, b| {
        if ty == 0x190 {
            b[0x24] = 0;
        }
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert_eq!(err.to_string(), "BNXT: cannot be driven: FUNC_RESOURCE_QCAPS offers 0 VNICs; this driver needs 1");
    assert!(!m.order(0).contains(&0x17));
}

#[test]
fn a_firmware_without_if_change_gets_none_and_a_small_max_mtu_is_refused() {
    let m = FakeMachine::patched(|ty, b| {
        if ty == 0x1d {
            b[8] = 0;
        }
    });
    let mut nic = Nic::open(&m, 0).unwrap();
    nic.close();
    assert!(!m.order(0).contains(&0x0d));

    let m = FakeMachine::patched(|ty, b| {
        if ty == 0x16 {
            b[0x2e..0x30].copy_from_slice(&1500u16.to_le_bytes());
        }
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(err.to_string().contains("MTU of at most 1500; a 4096-byte RoCE path MTU needs 4192"), "{err}");
}
