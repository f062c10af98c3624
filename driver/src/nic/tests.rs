//! `Nic` against a small fake firmware that answers a P7 bring-up.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::*;
use zerocopy::FromZeros;

use super::*;
use crate::testing::machine::{FakeMachine, Fault, Faults, MAC, firmware};
use crate::testing::{EXP_CAP, FakeFunction, Reply, parse, req_type, respond};
use bnxt_pci::{Clock, regs};

fn ro_on(f: &FakeFunction) -> bool {
    f.config16(EXP_CAP + regs::EXP_DEVCTL) & regs::EXP_DEVCTL_RELAX_EN != 0
}

fn bus_master(f: &FakeFunction) -> bool {
    f.config16(regs::COMMAND) & regs::COMMAND_MASTER != 0
}

const BRING_UP: [u16; 5] = [0x00, 0x11, 0x15, 0x1d, 0x30];

fn expected_order() -> Vec<u16> {
    let mut v = BRING_UP.to_vec();
    v.extend([0x1a8; 9]);
    v.extend([0x1a3; 10]); // nine types, FP_TQM_RING twice (two instances)
    // FUNC_RESOURCE_QCAPS, FUNC_QCFG, VNIC_QCAPS, the PHY.
    v.extend([0x190, 0x16, 0x4a, 0x2a, 0x27]);
    // The L2 side (l2/tests.rs): IF_CHANGE, the reservation, statistics, three rings, VNIC, RSS
    // context and table, VNIC_CFG, the filter.
    v.extend([0x0d, 0x17, 0x16, 0xb0, 0x50, 0x50, 0x50, 0x40, 0x70, 0x46, 0x42, 0x90]);
    // The RoCE engine: the CREQ, the statistics context, the NQ.
    v.extend([0x50, 0xb0, 0x50]);
    v
}

#[test]
fn open_brings_the_firmware_up_in_bnxt_en_order_and_close_undoes_it() {
    let m = FakeMachine::new(2);
    let mut nic = Nic::open(&m, 1).unwrap();
    assert_eq!(nic.name(), "BNXT:1");
    assert_eq!(nic.bus(), "0000:02:00.0");
    assert_eq!(m.order(1), expected_order());
    assert!(m.order(0).is_empty());
    assert_eq!(m.f(1).resets(), 1);
    assert!(!ro_on(m.f(1)), "relaxed ordering is off while the NIC is held");
    assert!(bus_master(m.f(1)));

    let id = nic.identity();
    assert_eq!(id.mac, MAC);
    assert_eq!(id.ipv4, Ipv4Addr::new(10, 0x33, 0x44, 0x55));
    assert_eq!(id.gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0x33, 0x44, 0x55]);
    assert_eq!(nic.limits(), Limits { qps: 2048 - 66, regions: 1024 });
    assert_eq!(nic.doorbells(), Doorbells { offset: 64 * 1024, size: Some(1024 * 1024) });
    assert_eq!(nic.wedged_by(), None);
    assert!(m.f(1).dma_live() > 10);

    nic.close();
    assert!(!nic.is_open());
    assert_eq!(*m.order(1).last().unwrap(), 0x1a, "FUNC_DRV_UNRGTR");
    assert_eq!(m.f(1).dma_live(), 0, "every DMA buffer is freed");
    assert!(!bus_master(m.f(1)));
    assert!(ro_on(m.f(1)), "relaxed ordering is back on, as open found it");
    // name, bus and identity still answer; a second close does nothing.
    assert_eq!((nic.name(), nic.bus(), nic.identity()), ("BNXT:1", "0000:02:00.0", id));
    let sent = m.order(1).len();
    nic.close();
    assert_eq!(m.order(1).len(), sent);
}

#[test]
fn relaxed_ordering_found_off_stays_off() {
    let m = FakeMachine::new(1);
    let at = EXP_CAP + regs::EXP_DEVCTL;
    m.f(0).set_config16(at, m.f(0).config16(at) & !regs::EXP_DEVCTL_RELAX_EN);
    let nic = Nic::open(&m, 0).unwrap();
    assert!(!ro_on(m.f(0)));
    drop(nic);
    assert!(!ro_on(m.f(0)), "drop closes, and close leaves relaxed ordering off as found");
    assert!(!bus_master(m.f(0)));
}

#[test]
#[should_panic(expected = "BNXT: used after close")]
fn a_closed_nic_panics_when_used() {
    let m = FakeMachine::new(1);
    let mut nic = Nic::open(&m, 0).unwrap();
    nic.close();
    nic.limits();
}

#[test]
fn context_memory_is_configured_in_ascending_order_the_last_carrying_all_done() {
    let m = FakeMachine::new(1);
    let _nic = Nic::open(&m, 0).unwrap();
    let cfgs: Vec<HwrmFuncBackingStoreCfgV2Input> =
        m.f(0).submissions().iter().filter(|s| req_type(&s.request) == 0x1a3).map(|s| parse(&s.request)).collect();
    let seen: Vec<(u16, u16)> = cfgs.iter().map(|c| (c.type_.get(), c.instance.get())).collect();
    assert_eq!(seen, vec![(0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (6, 2), (0xe, 0), (0xf, 0)]);
    let done: Vec<bool> =
        cfgs.iter().map(|c| c.flags.get() & HwrmFuncBackingStoreCfgV2Input::FLAGS_BS_CFG_ALL_DONE != 0).collect();
    assert_eq!(done.iter().filter(|d| **d).count(), 1);
    assert!(done[9]);
    let qp = &cfgs[0];
    assert_eq!(qp.entry_size.get(), 64);
    assert_eq!(qp.num_entries.get(), 2048, "64 + 2 + 65536 extra, clamped to the 2048 offered");
    assert_eq!((qp.subtype_valid_cnt, qp.split_entry_0.get(), qp.split_entry_1.get()), (2, 64, 2));
    assert_eq!(qp.page_size_pbl_level, 2, "4-KB pages, level 2 as bnxt_en asks for QPs");
    let vnic = &cfgs[3];
    assert_eq!(vnic.page_size_pbl_level, 1);
    let mrav = &cfgs[8];
    assert_eq!((mrav.subtype_valid_cnt, mrav.split_entry_0.get()), (1, 1024));
    for c in &cfgs {
        assert_ne!(c.page_dir.get(), 0);
        assert_eq!(c.page_dir.get() & 0xfff, 0);
    }
}

#[test]
fn registration_that_gets_no_answer_fails_the_open_names_it_and_keeps_the_channel_buffer() {
    let m = FakeMachine::new(1);
    m.fault(0x1d, 0, Fault::Never);
    let start = m.f(0).now();
    let err = Nic::open(&m, 0).unwrap_err();
    assert_eq!(
        err,
        Error::Timeout { nic: "BNXT".into(), request: "FUNC_DRV_RGTR".into(), timeout: Duration::from_millis(1000) }
    );
    assert!(err.to_string().starts_with("BNXT: FUNC_DRV_RGTR"), "{err}");
    assert!(m.f(0).now() - start >= Duration::from_secs(1), "the firmware's def_req_timeout, on the virtual clock");
    // Nothing was sent after the unanswered request: not even FUNC_DRV_UNRGTR.
    assert_eq!(m.order(0), BRING_UP[..4].to_vec());
    assert!(!bus_master(m.f(0)));
    assert!(ro_on(m.f(0)));
    assert_eq!(m.f(0).dma_live(), 1, "the HWRM buffer the firmware may still write is kept");
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 1);

    // The next open resets the NIC, after which the kept buffer is freed.
    m.clear_faults();
    let mut nic = Nic::open(&m, 0).unwrap();
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 0);
    nic.close();
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn context_configuration_that_gets_no_answer_keeps_that_types_memory_only() {
    let m = FakeMachine::new(1);
    m.fault(0x1a3, 9, Fault::Never); // the MRAV request
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(matches!(&err, Error::Timeout { request, .. } if request == "FUNC_BACKING_STORE_CFG_V2"), "{err}");
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 2, "the HWRM buffer and the MRAV memory");
    // MRAV: 2048 entries of 64 bytes = 32 pages at level 2: one data run, one PTE page, one PDE page.
    assert_eq!(m.f(0).dma_live(), 1 + 3);
    assert_eq!(*m.order(0).last().unwrap(), 0x1a3, "no FUNC_DRV_UNRGTR to a wedged firmware");
    assert!(!bus_master(m.f(0)));
    m.clear_faults();
    drop(Nic::open(&m, 0).unwrap());
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_refusal_at_each_bring_up_request_fails_the_open_naming_request_and_code() {
    let cases: [(u16, u32, &str); 10] = [
        (0x00, 1, "VER_GET"),
        (0x11, 1, "FUNC_RESET"),
        (0x15, 1, "FUNC_QCAPS"),
        (0x1d, 1, "FUNC_DRV_RGTR"),
        (0x30, 1, "QUEUE_QPORTCFG"),
        (0x1a8, 4, "FUNC_BACKING_STORE_QCAPS_V2"),
        (0x1a3, 10, "FUNC_BACKING_STORE_CFG_V2"),
        (0x16, 1, "FUNC_QCFG"),
        (0x2a, 1, "PORT_PHY_QCAPS"),
        (0x27, 1, "PORT_PHY_QCFG"),
    ];
    for (ty, nth, name) in cases {
        let m = FakeMachine::new(1);
        m.fault(ty, nth, Fault::Refuse(ErrorCode::ResourceAllocError.value()));
        let err = Nic::open(&m, 0).unwrap_err();
        assert_eq!(
            err,
            Error::Refused { nic: "BNXT".into(), request: name.into(), code: ErrorCode::ResourceAllocError }
        );
        let msg = err.to_string();
        assert!(msg.starts_with("BNXT: ") && msg.contains(name) && msg.contains("RESOURCE_ALLOC_ERROR"), "{msg}");
        // Undone: registered opens unregister, nothing stays allocated, the machine is as found.
        let order = m.order(0);
        assert_eq!(order.contains(&0x1a), order.contains(&0x1d) && ty != 0x1d, "{name}: {order:x?}");
        assert_eq!(m.f(0).dma_live(), 0, "{name}");
        assert!(!bus_master(m.f(0)));
        assert!(ro_on(m.f(0)));
        assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 0);
    }
}

#[test]
fn a_request_after_open_that_gets_no_answer_wedges_the_nic() {
    let m = FakeMachine::new(1);
    m.fault(0x16, 3, Fault::Never); // the first after open
    let mut nic = Nic::open(&m, 0).unwrap();
    let err = nic.hwrm(HwrmFuncQcfgInput::new_zeroed()).unwrap_err();
    assert!(matches!(&err, Error::Timeout { request, .. } if request == "FUNC_QCFG"));
    assert_eq!(nic.wedged_by(), Some("FUNC_QCFG"));
    let t = m.f(0).now();
    let err = nic.hwrm(HwrmVerGetInput::new_zeroed()).unwrap_err();
    assert_eq!(m.f(0).now(), t, "a wedged NIC fails at once");
    assert_eq!(err.to_string(), "BNXT: VER_GET not sent: the NIC is wedged since FUNC_QCFG went unanswered");
    let sent = m.order(0).len();
    nic.close();
    assert_eq!(m.order(0).len(), sent, "no FUNC_DRV_UNRGTR to a wedged firmware");
    assert_eq!(m.f(0).dma_live(), 0, "close frees what the unanswered request named too");
    assert!(!bus_master(m.f(0)));
}

#[test]
fn a_nic_cannot_be_opened_twice_or_past_the_last() {
    let m = FakeMachine::new(2);
    let _a = Nic::open(&m, 0).unwrap();
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(matches!(err, Error::Pci { source: PciError::Busy { .. }, .. }), "{err}");
    let err = Nic::open(&m, 5).unwrap_err();
    assert_eq!(err.to_string(), "BNXT:5: no NIC 5 (the machine has 2)");
    // The second NIC is unaffected.
    let b = Nic::open(&m, 1).unwrap();
    assert_eq!(b.name(), "BNXT:1");
}

#[test]
fn a_firmware_that_never_becomes_ready_fails_the_open_before_any_request() {
    let m = FakeMachine::new(1);
    m.f(0).set_fw_status(0x4000);
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(err.to_string().starts_with("BNXT: the firmware is still booting"), "{err}");
    assert!(m.order(0).is_empty());
    assert!(ro_on(m.f(0)) && !bus_master(m.f(0)));
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn firmware_without_roce_v2_backing_store_v2_or_a_p7_chip_is_refused_clearly() {
    fn clear_bits(bytes: &mut [u8], at: usize, bits: u32) {
        let v = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) & !bits;
        bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    type Patch = Box<dyn Fn(u16, &mut Vec<u8>) + Send>;
    let cases: [(Patch, &str); 4] = [
        (
            Box::new(|ty, b| {
                if ty == 0x15 {
                    clear_bits(b, 0x0c, HwrmFuncQcapsOutput::FLAGS_ROCE_V2_SUPPORTED)
                }
            }),
            "ROCE_V2_SUPPORTED",
        ),
        (
            Box::new(|ty, b| {
                if ty == 0x15 {
                    clear_bits(b, 0x50, HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_SUPPORTED)
                }
            }),
            "BS_V2_SUPPORTED",
        ),
        (
            Box::new(|ty, b| {
                if ty == 0x00 {
                    b[0x70..0x72].copy_from_slice(&0x1750u16.to_le_bytes())
                }
            }),
            "chip 0x1750",
        ),
        (
            Box::new(|ty, b| {
                if ty == 0x00 {
                    (b[0x09], b[0x0a]) = (8, 2)
                }
            }),
            "1.8.2 is older than 1.8.3",
        ),
    ];
    for (patch, what) in cases {
        let m = FakeMachine::patched(patch);
        let err = Nic::open(&m, 0).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with("BNXT: cannot be driven: ") && msg.contains(what), "{msg}");
        assert_eq!(m.f(0).dma_live(), 0);
        assert!(ro_on(m.f(0)) && !bus_master(m.f(0)));
    }
}

#[test]
fn a_firmware_offering_no_mrav_context_cannot_carry_regions() {
    let m = FakeMachine::patched(|ty, b| {
        // Type 0xe answers "not valid".
        if ty == 0x1a8 && b[8] == 0xe {
            b[0x0c..0x10].copy_from_slice(&0u32.to_le_bytes());
        }
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(err.to_string().contains("no usable MRAV context type"), "{err}");
    assert!(m.order(0).contains(&0x1a), "registered, so unregistered again");
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn dev_not_rdy_is_retried() {
    let faults: Faults = Arc::default();
    let mut inner = firmware(faults);
    let mut tries = 0;
    let f = FakeFunction::new(move |req| {
        if req_type(req) == 0 && tries < 2 {
            tries += 1;
            let mut r = HwrmVerGetOutput::new_zeroed();
            r.flags = HwrmVerGetOutput::FLAGS_DEV_NOT_RDY;
            return Reply::Now(respond::<HwrmVerGetInput>(req, r, 0));
        }
        inner(req)
    });
    let m = FakeMachine { functions: vec![Arc::new(f)], held: Mutex::new(vec![Weak::new()]), faults: Arc::default() };
    let nic = Nic::open(&m, 0).unwrap();
    assert_eq!(&m.order(0)[..4], &[0, 0, 0, 0x11]);
    assert!(nic.is_open());
}

#[test]
fn nic_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Nic>();
}
