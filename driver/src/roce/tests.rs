//! The RoCE engine's bring-up and teardown inside `Nic::open`/`close`, against the fake
//! function's firmware.

use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::roce::doorbell::{DbPath, DbType, Doorbell};
use bnxt_hsi::roce::layouts::*;

use crate::error::Error;
use crate::nic::Nic;
use crate::quarantine;
use crate::testing::machine::{FakeMachine, Fault, MAC};
use crate::testing::parse;
use crate::testing::roce_fw::{RoceReply, standard};
use bnxt_pci::Clock;

const QUERY_FUNC: u8 = 0x83;
const INITIALIZE_FW: u8 = 0x80;
const DEINITIALIZE_FW: u8 = 0x81;
const ADD_GID: u8 = 0x11;
const QUERY_VERSION: u8 = 0x8b;
const DELETE_GID: u8 = 0x12;

fn opcodes(m: &FakeMachine) -> Vec<u8> {
    m.f(0).roce_commands().iter().map(|c| c.opcode).collect()
}

#[test]
fn open_brings_the_roce_engine_up_in_bnxt_re_order() {
    let m = FakeMachine::new(1);
    let nic = Nic::open(&m, 0).unwrap();
    assert_eq!(opcodes(&m), [QUERY_FUNC, QUERY_VERSION, INITIALIZE_FW, QUERY_FUNC, QUERY_VERSION, ADD_GID]);

    // The CREQ: an NQ-type ring of 64 Ki entries behind a one-level table, on vector 1 (after
    // the L2 side's NQ on vector 0, whose rings come first).
    let allocs: Vec<HwrmRingAllocInput> = m
        .f(0)
        .submissions()
        .iter()
        .filter(|s| crate::testing::req_type(&s.request) == 0x50)
        .map(|s| parse(&s.request))
        .collect();
    let (creq, nq) = (&allocs[3], &allocs[4]);
    assert_eq!((creq.ring_type, creq.length.get(), creq.page_size, creq.page_tbl_depth), (5, 65_536, 12, 1));
    assert_eq!((creq.logical_id.get(), creq.int_mode), (1, HwrmRingAllocInput::INT_MODE_MSIX));
    let first_pte = u64::from_le_bytes(m.f(0).dma_read(creq.page_tbl_addr.get(), 8).try_into().unwrap());
    assert_eq!(first_pte & 0x7, 1, "VALID, not yet LAST");
    let last_pte = u64::from_le_bytes(m.f(0).dma_read(creq.page_tbl_addr.get() + 255 * 8, 8).try_into().unwrap());
    assert_eq!(last_pte & 0x7, 3, "the 256th page is the ring's last");
    assert_eq!((nq.ring_type, nq.length.get(), nq.logical_id.get()), (5, 131_072, 2));

    // The statistics context, with the RoCE flag, named by INITIALIZE_FW.
    let stat: HwrmStatCtxAllocInput = parse(
        &m.f(0).submissions().iter().filter(|s| crate::testing::req_type(&s.request) == 0xb0).nth(1).unwrap().request,
    );
    assert_eq!((stat.stat_ctx_flags, stat.stats_dma_length.get(), stat.update_period_ms.get()), (1, 160, 1000));
    let cmds = m.f(0).roce_commands();
    let init: CmdqInitializeFw = cmds[2].parse();
    assert_eq!(init.stat_ctx_id.get(), 3);
    assert_eq!(init.flags.get(), CmdqInitializeFw::FLAGS_HW_REQUESTER_RETX_SUPPORTED, "the firmware retransmits");
    assert_eq!(
        (init.cmd_size, init.qpc_page_dir.get(), init.number_of_qp.get()),
        (8, 0, 0),
        "no context memory named on P7"
    );
    let query: CmdqQueryFunc = cmds[0].parse();
    assert_eq!(query.resp_size, 10, "160 bytes of side buffer in 16-byte units");
    assert_ne!(query.resp_addr.get(), 0);

    // ADD_GID: ::ffff:10.x.y.z byte-reversed, the MAC with its 16-bit halves swapped.
    let add: CmdqAddGid = cmds[5].parse();
    let gid: Vec<u8> = add.gid.iter().flat_map(|w| w.get().to_le_bytes()).collect();
    assert_eq!(gid, [0x55, 0x44, 0x33, 10, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mac: Vec<u8> = add.src_mac.iter().flat_map(|w| w.get().to_le_bytes()).collect();
    assert_eq!(mac, [MAC[1], MAC[0], MAC[3], MAC[2], MAC[5], MAC[4]]);
    assert_eq!((add.vlan.get(), add.cmd_size), (0, 3));

    // Cookies count, command sizes are in slots.
    let cookies: Vec<u16> = cmds.iter().map(|c| u16::from_le_bytes([c.bytes[4], c.bytes[5]])).collect();
    assert_eq!(cookies, [0, 1, 2, 3, 4, 5]);
    assert_eq!(nic.roce().gid_index, 0);
    assert_eq!(nic.roce().db.dpi(), 16, "the doorbell page at 64 KB");
}

#[test]
fn the_channel_is_announced_after_the_creq_is_armed_and_the_first_producer_carries_bit_31() {
    let m = FakeMachine::new(1);
    let _nic = Nic::open(&m, 0).unwrap();
    let dbs: Vec<Doorbell> = m
        .f(0)
        .doorbells()
        .iter()
        .map(|(bar, off, v)| {
            assert_eq!((*bar, *off), (2, 64 * 1024), "every doorbell on the page at legacy_l2_db_size_kb");
            Doorbell::decode(*v).unwrap()
        })
        .filter(|d| d.path == DbPath::Roce)
        .collect();
    assert_eq!((dbs[0].ty, dbs[0].xid, dbs[0].index, dbs[0].valid), (DbType::NqArm, 3, 0, true), "CREQ armed first");
    // Each answered command is acknowledged with an NQ doorbell at the new consumer.
    let acks: Vec<u32> = dbs.iter().filter(|d| d.ty == DbType::Nq && d.xid == 3).map(|d| d.index).collect();
    assert_eq!(acks, [1, 2, 3, 4, 5, 6]);
    assert!(dbs.iter().any(|d| d.ty == DbType::NqArm && d.xid == 4), "the NQ is armed");
}

#[test]
fn close_tears_the_engine_down_in_reverse_before_unregistering() {
    let m = FakeMachine::new(1);
    let mut nic = Nic::open(&m, 0).unwrap();
    let before = m.f(0).submissions().len();
    nic.close();
    assert_eq!(&opcodes(&m)[6..], [DELETE_GID, DEINITIALIZE_FW]);
    let after: Vec<u16> = m.f(0).submissions()[before..].iter().map(|s| crate::testing::req_type(&s.request)).collect();
    assert_eq!(&after[..3], [0x51, 0xb1, 0x51], "RING_FREE NQ, (DEINITIALIZE_FW), STAT_CTX_FREE, RING_FREE CREQ");
    assert_eq!(*after.last().unwrap(), 0x1a, "then the L2 side, and FUNC_DRV_UNRGTR last");
    let frees: Vec<HwrmRingFreeInput> = m.f(0).submissions()[before..]
        .iter()
        .filter(|s| crate::testing::req_type(&s.request) == 0x51)
        .map(|s| parse(&s.request))
        .collect();
    assert_eq!(frees[..2].iter().map(|f| (f.ring_type, f.ring_id.get())).collect::<Vec<_>>(), [(5, 4), (5, 3)]);
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_roce_command_left_unanswered_wedges_the_open_and_keeps_what_it_named() {
    let m = FakeMachine::new(1);
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| if c.opcode == INITIALIZE_FW { RoceReply::Never } else { fw(c) });
    let start = m.f(0).now();
    let err = Nic::open(&m, 0).unwrap_err();
    assert_eq!(
        err,
        Error::Timeout { nic: "BNXT".into(), request: "INITIALIZE_FW".into(), timeout: Duration::from_secs(40) }
    );
    assert!(m.f(0).now() - start >= Duration::from_secs(40), "bnxt_re's 40-s RCFW timeout, on the virtual clock");
    // Nothing after it: no RoCE teardown, no HWRM frees, no unregistering.
    assert_eq!(opcodes(&m), [QUERY_FUNC, QUERY_VERSION, INITIALIZE_FW]);
    assert_eq!(*m.order(0).last().unwrap(), 0xb0, "STAT_CTX_ALLOC was the last request");
    // The HWRM buffer and the RoCE memory (channel, statistics) are kept until the next reset.
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 2);
    assert!(m.f(0).dma_live() > 0);
    m.f(0).set_roce_firmware(standard());
    let mut nic = Nic::open(&m, 0).unwrap();
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 0);
    nic.close();
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_roce_command_refused_fails_the_open_naming_it_and_undoes_the_engine() {
    let m = FakeMachine::new(1);
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| {
        if c.opcode == ADD_GID { RoceReply::Answer { status: 2, xid: 0, side: Vec::new() } } else { fw(c) }
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert_eq!(err, Error::CommandRefused { nic: "BNXT".into(), command: "ADD_GID".into(), status: 2 });
    assert_eq!(err.to_string(), "BNXT: ADD_GID refused by the RoCE firmware: RESOURCES (status 0x02)");
    assert_eq!(
        opcodes(&m),
        [QUERY_FUNC, QUERY_VERSION, INITIALIZE_FW, QUERY_FUNC, QUERY_VERSION, ADD_GID, DEINITIALIZE_FW]
    );
    assert_eq!(m.f(0).dma_live(), 0);
    assert_eq!(quarantine::kept_for(&m, "0000:01:00.0"), 0);
}

#[test]
fn a_refused_ring_alloc_for_the_creq_fails_before_any_roce_command() {
    let m = FakeMachine::new(1);
    m.fault(0x50, 4, Fault::Refuse(ErrorCode::ResourceAllocError.value())); // after the L2 side's three
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(matches!(&err, Error::Refused { request, .. } if request == "RING_ALLOC"), "{err}");
    assert!(opcodes(&m).is_empty());
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_firmware_whose_queues_are_too_small_is_refused_clearly() {
    let m = FakeMachine::new(1);
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| match fw(c) {
        RoceReply::Answer { status, xid, mut side } if c.opcode == QUERY_FUNC => {
            side[0x14..0x16].copy_from_slice(&1024u16.to_le_bytes()); // max_qp_wr
            RoceReply::Answer { status, xid, side }
        }
        other => other,
    });
    let err = Nic::open(&m, 0).unwrap_err();
    assert!(err.to_string().contains("send queues of 1024 WQEs"), "{err}");
    assert_eq!(m.f(0).dma_live(), 0);
}

#[test]
fn a_roce_command_left_unanswered_after_open_wedges_both_channels_until_close() {
    let m = FakeMachine::new(1);
    let mut nic = Nic::open(&m, 0).unwrap();
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| if c.opcode == 0x0f { RoceReply::Never } else { fw(c) });
    let err = crate::region::Region::host(&nic, 4096).unwrap_err();
    assert!(matches!(&err, Error::Timeout { request, .. } if request == "REGISTER_MR"), "{err}");
    assert_eq!(nic.wedged_by(), Some("REGISTER_MR"));
    let t = m.f(0).now();
    let err = nic.hwrm(HwrmFuncQcfgInput { ..zerocopy::FromZeros::new_zeroed() }).unwrap_err();
    assert_eq!(err, Error::Wedged { nic: "BNXT".into(), request: "FUNC_QCFG".into(), wedged_by: "REGISTER_MR".into() });
    let err = crate::qp::Qp::make(&nic).unwrap_err();
    assert!(matches!(&err, Error::Wedged { request, .. } if request == "CREATE_CQ"), "{err}");
    assert_eq!(m.f(0).now(), t, "a wedged NIC fails at once");
    let (sent, requests) = (m.f(0).roce_commands().len(), m.f(0).submissions().len());
    nic.close();
    assert_eq!(m.f(0).roce_commands().len(), sent, "no RoCE teardown to a wedged firmware");
    assert_eq!(m.f(0).submissions().len(), requests, "nor HWRM frees or unregistering");
    assert_eq!(m.f(0).dma_live(), 0, "close frees even what the unanswered command named");
}
