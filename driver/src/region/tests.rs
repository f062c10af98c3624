//! Regions against the fake function's firmware.

use bnxt_hsi::roce::layouts::{CmdqAllocateMrw, CmdqDeallocateKey, CmdqRegisterMr};

use super::*;
use crate::testing::machine::FakeMachine;
use crate::testing::roce_fw::{RoceCmd, RoceReply, query_func_sb, standard};

const REGISTER_MR: u8 = 0x0f;
const DEALLOCATE_KEY: u8 = 0x0e;
const ALLOCATE_MRW: u8 = 0x0d;

fn since(m: &FakeMachine, n: usize) -> Vec<RoceCmd> {
    m.f(0).roce_commands()[n..].to_vec()
}

fn open(m: &FakeMachine) -> (Nic, usize) {
    let nic = Nic::open(m, 0).unwrap();
    let n = m.f(0).roce_commands().len();
    (nic, n)
}

#[rstest::rstest]
#[case::direct(100, 0)]
#[case::one_level_of_page_table(3 * 4096, 1)]
#[case::two_levels_of_page_table(513 * 4096 - 1, 2)]
fn a_host_region_is_registered_with_alloc_mr_its_pages_and_rights(#[case] len: usize, #[case] level: u8) {
    let m = FakeMachine::new(1);
    let (nic, before) = open(&m);
    let r = Region::host(&nic, len).unwrap();
    let cmds = since(&m, before);
    assert_eq!(cmds.len(), 1);
    let req: CmdqRegisterMr = cmds[0].parse();
    assert_eq!(req.opcode, REGISTER_MR);
    assert_eq!(req.flags.get(), CmdqRegisterMr::FLAGS_ALLOC_MR);
    assert_eq!(req.key.get(), 0, "the protection domain, as ALLOC_MR takes it");
    assert_eq!(req.log2_pg_size_lvl, 0x30 | level, "4-KB pages at level {level}");
    assert_eq!(req.log2_pbl_pg_size.get(), 12);
    assert_eq!(req.access, 0x7, "local write, remote read, remote write");
    assert_eq!(req.mr_size.get(), len as u64);
    assert_eq!(r.len(), len);
    let pbl = req.pbl.get();
    let first_page = match level {
        0 => pbl,
        1 => u64::from_le_bytes(m.f(0).dma_read(pbl, 8).try_into().unwrap()) & !0xfff,
        _ => {
            let pte_page = u64::from_le_bytes(m.f(0).dma_read(pbl, 8).try_into().unwrap()) & !0xfff;
            u64::from_le_bytes(m.f(0).dma_read(pte_page, 8).try_into().unwrap()) & !0xfff
        }
    };
    assert_eq!(first_page, req.va.get(), "va is the first page's bus address");
    assert_eq!(r.key(), 0x1000, "the key REGISTER_MR answered (the fake firmware's first)");
}

#[test]
fn bytes_written_are_read_back_and_land_in_the_memory_the_nic_was_given() {
    let m = FakeMachine::new(1);
    let (nic, n) = open(&m);
    let r = Region::host(&nic, 10_000).unwrap();
    r.write(4090, b"across a page");
    assert_eq!(r.read(4090, 13), b"across a page");
    let va = since(&m, n)[0].parse::<CmdqRegisterMr>().va.get();
    assert_eq!(m.f(0).dma_read(va + 4090, 13), b"across a page");
    assert_eq!(r.read(0, 3), [0, 0, 0], "host regions start zeroed");
}

#[test]
fn deregister_frees_the_key_once_and_a_second_call_returns_the_first_answer() {
    let m = FakeMachine::new(1);
    let (nic, n) = open(&m);
    let live = m.f(0).dma_live();
    let r = Region::host(&nic, 8192).unwrap();
    assert!(m.f(0).dma_live() > live);
    let key = r.key();
    assert_eq!(r.deregister(), Ok(()));
    let cmds = since(&m, n);
    assert_eq!(cmds.iter().map(|c| c.opcode).collect::<Vec<_>>(), [REGISTER_MR, DEALLOCATE_KEY]);
    let d: CmdqDeallocateKey = cmds[1].parse();
    assert_eq!((d.key.get(), d.mrw_flags), (key, CmdqDeallocateKey::MRW_FLAGS_MR));
    assert_eq!(m.f(0).dma_live(), live, "its memory is freed");
    assert_eq!(r.deregister(), Ok(()));
    assert_eq!(since(&m, n).len(), 2, "nothing sent the second time");
}

#[test]
fn a_refused_deregistration_is_returned_again_and_its_memory_kept_until_close() {
    let m = FakeMachine::new(1);
    let (mut nic, _) = open(&m);
    let r = Region::host(&nic, 4096).unwrap();
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| {
        if c.opcode == DEALLOCATE_KEY { RoceReply::Answer { status: 5, xid: 0, side: vec![] } } else { fw(c) }
    });
    let live = m.f(0).dma_live();
    let err = r.deregister().unwrap_err();
    assert!(matches!(&err, Error::CommandRefused { command, status: 5, .. } if command == "DEALLOCATE_KEY"), "{err}");
    assert_eq!(r.deregister(), Err(err));
    assert_eq!(m.f(0).dma_live(), live, "kept");
    nic.close();
    assert_eq!(m.f(0).dma_live(), 0);
}

/// What a deregistered region refuses: its bytes, its key, and an SGE for a work request (which
/// reads the address and key without the state's lock).
#[rstest::rstest]
#[case::write(|_: &Nic, r: &Region| r.write(0, b"x"))]
#[case::key(|_: &Nic, r: &Region| { r.key(); })]
#[case::sge(|nic: &Nic, r: &Region| { r.sge(nic.roce(), "send", 0, 1); })]
#[should_panic(expected = "on a deregistered region")]
fn a_deregistered_region_is_refused(#[case] touch: fn(&Nic, &Region)) {
    let m = FakeMachine::new(1);
    let (nic, _) = open(&m);
    let r = Region::host(&nic, 4096).unwrap();
    r.deregister().unwrap();
    touch(&nic, &r);
}

#[test]
#[should_panic(expected = "BNXT: send on a deregistered region")]
fn a_region_whose_deregistration_was_refused_gives_no_more_sges() {
    let m = FakeMachine::new(1);
    let (nic, _) = open(&m);
    let r = Region::host(&nic, 4096).unwrap();
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| {
        if c.opcode == DEALLOCATE_KEY { RoceReply::Answer { status: 5, xid: 0, side: vec![] } } else { fw(c) }
    });
    r.deregister().unwrap_err();
    r.sge(nic.roce(), "send", 0, 1);
}

#[test]
fn an_sge_names_the_registered_address_and_key() {
    let m = FakeMachine::new(1);
    let (nic, _) = open(&m);
    let r = Region::host(&nic, 4096).unwrap();
    let base = r.with_live("test", |live| live.buf.iova_at(0));
    let sge = r.sge(nic.roce(), "send", 100, 64);
    assert_eq!(sge, Sge { va: base + 100, key: r.key(), len: 64 });
}

#[test]
#[should_panic(expected = "BNXT: read of 2 bytes at offset 4095 is outside a region of 4096 bytes")]
fn bytes_past_the_end_are_refused() {
    let m = FakeMachine::new(1);
    let (nic, _) = open(&m);
    Region::host(&nic, 4096).unwrap().read(4095, 2);
}

#[test]
fn close_frees_the_keys_and_memory_of_regions_still_open() {
    let m = FakeMachine::new(1);
    let (mut nic, n) = open(&m);
    let a = Region::host(&nic, 4096).unwrap();
    let b = Region::host(&nic, 3 * 4096).unwrap();
    let keys = [a.key(), b.key()];
    nic.close();
    let freed: Vec<u32> = since(&m, n)
        .iter()
        .filter(|c| c.opcode == DEALLOCATE_KEY)
        .map(|c| c.parse::<CmdqDeallocateKey>().key.get())
        .collect();
    assert_eq!(freed, [keys[1], keys[0]], "newest first");
    assert_eq!(m.f(0).dma_live(), 0, "the regions' memory is freed although their values live");
    assert_eq!(a.len(), 4096, "len still answers");
    let sent = m.f(0).roce_commands().len();
    drop((a, b));
    assert_eq!(m.f(0).roce_commands().len(), sent, "dropping them after close sends nothing");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Region::host(&nic, 1).map(|_| ())));
    assert!(r.is_err(), "a closed NIC cannot make regions");
}

#[test]
fn regions_past_the_limit_of_the_open_are_refused_and_counted_back() {
    let m = FakeMachine::new(1);
    let (nic, _) = open(&m);
    let limit = nic.limits().regions as usize;
    let mut all: Vec<Region> = (0..limit).map(|_| Region::host(&nic, 4096).unwrap()).collect();
    let err = Region::host(&nic, 4096).unwrap_err();
    assert_eq!(err, Error::Limit { nic: "BNXT".into(), what: "regions".into(), limit: limit as u64 });
    all.pop().unwrap().deregister().unwrap();
    Region::host(&nic, 4096).unwrap();
}

#[test]
fn a_region_past_the_firmwares_largest_is_refused() {
    let m = FakeMachine::new(1);
    let mut fw = standard();
    m.f(0).set_roce_firmware(move |c| {
        if c.opcode == 0x83 {
            let mut sb = query_func_sb();
            sb.max_mr_size = 8192.into();
            return RoceReply::Answer { status: 0, xid: 0, side: zerocopy::IntoBytes::as_bytes(&sb).to_vec() };
        }
        fw(c)
    });
    let (nic, _) = open(&m);
    let err = Region::host(&nic, 8193).unwrap_err();
    assert!(matches!(err, Error::Limit { limit: 8192, .. }), "{err}");
    Region::host(&nic, 8192).unwrap();
}

#[test]
fn without_unified_registration_the_key_is_allocated_first_and_freed_on_refusal() {
    let m = FakeMachine::new(1);
    let mut fw = standard();
    let mut refuse_register = false;
    m.f(0).set_roce_firmware(move |c| match c.opcode {
        0x83 => {
            let mut sb = query_func_sb();
            sb.dev_cap_flags = 0.into();
            RoceReply::Answer { status: 0, xid: 0, side: zerocopy::IntoBytes::as_bytes(&sb).to_vec() }
        }
        ALLOCATE_MRW => RoceReply::ok(0x77),
        REGISTER_MR if refuse_register => RoceReply::Answer { status: 5, xid: 0, side: vec![] },
        REGISTER_MR => {
            refuse_register = true;
            RoceReply::ok(0)
        }
        _ => fw(c),
    });
    let (nic, n) = open(&m);
    let r = Region::host(&nic, 4096).unwrap();
    assert_eq!(r.key(), 0x77);
    let cmds = since(&m, n);
    let alloc: CmdqAllocateMrw = cmds[0].parse();
    assert_eq!((alloc.opcode, alloc.mrw_flags, alloc.pd_id.get()), (ALLOCATE_MRW, 0, 0));
    let reg: CmdqRegisterMr = cmds[1].parse();
    assert_eq!((reg.flags.get(), reg.key.get()), (0, 0x77));
    let err = Region::host(&nic, 4096).unwrap_err();
    assert!(matches!(err, Error::CommandRefused { .. }));
    let ops: Vec<u8> = since(&m, n).iter().map(|c| c.opcode).collect();
    assert_eq!(ops, [ALLOCATE_MRW, REGISTER_MR, ALLOCATE_MRW, REGISTER_MR, DEALLOCATE_KEY]);
}

#[test]
fn process_memory_is_registered_where_the_target_maps_it() {
    let m = FakeMachine::new(1);
    let (nic, n) = open(&m);
    let r = Region::pages(&nic, HostPages::from_bytes(b"handed over")).unwrap();
    assert_eq!(r.len(), 11);
    assert_eq!(r.read(0, 11), b"handed over");
    let va = since(&m, n)[0].parse::<CmdqRegisterMr>().va.get();
    assert_eq!(m.f(0).dma_read(va, 11), b"handed over");
}

#[test]
fn device_memory_is_not_supported_by_this_target() {
    let m = FakeMachine::new(1);
    let (nic, _) = open(&m);
    let mem = DeviceMemory { bus: "0000:81:00.0".into(), bar: 0, offset: 0, len: 1 << 20 };
    let err = Region::device(&nic, &mem).unwrap_err();
    assert!(err.to_string().contains("not supported by this target"), "{err}");
}

#[test]
fn regions_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Region>();
}

#[test]
fn regions_and_queue_pairs_of_a_closed_nic_do_not_keep_it_from_opening_again() {
    let m = FakeMachine::new(1);
    let (mut nic, _) = open(&m);
    let r = Region::host(&nic, 4096).unwrap();
    let qp = crate::qp::Qp::make(&nic).unwrap();
    nic.close();
    let again = Nic::open(&m, 0).unwrap();
    assert!(again.is_open());
    drop((r, qp));
    assert!(again.is_open(), "dropping the old objects leaves the new open alone");
}
