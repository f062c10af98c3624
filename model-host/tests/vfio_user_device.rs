//! `bnxt-model serve` seen by a vfio-user client written from the protocol specification (the
//! raw client in `vfio_user_support`, on the shared wire format): the PCI identity, the
//! capabilities, the BARs and their sizes, the interrupts, and an HWRM_VER_GET answered in guest
//! memory lent with DMA_MAP.

mod vfio_user_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::HwrmVerGetOutput;
use bnxt_model::config_space::{BAR0_SIZE, BAR2_SIZE, BAR4_SIZE};
use bnxt_vfio_user::header::Command;
use bnxt_vfio_user::linux::*;
use bnxt_vfio_user::payload::{DeviceInfo, DmaMap, DmaUnmap, IrqInfo, RegionAccess, RegionInfo};
use vfio_user_support::{Raw, Server, fd_of, memfd, peek, ver_get, wait_response, write_region};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

fn config(c: &mut Raw, offset: u64, len: u32) -> Vec<u8> {
    let req = RegionAccess { offset, region: PCI_CONFIG_REGION_INDEX, count: len };
    let body = c.ok(Command::RegionRead, &[req.as_bytes()], &[]);
    let (echo, data) = RegionAccess::read_from_prefix(&body).unwrap();
    assert_eq!(echo, req);
    data.to_vec()
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

#[test]
fn a_client_sees_a_bcm57608_with_its_capabilities_bars_and_interrupts() {
    let server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);

    let info = DeviceInfo::read_from_bytes(&c.ok(
        Command::DeviceGetInfo,
        &[DeviceInfo { argsz: 16, ..Default::default() }.as_bytes()],
        &[],
    ))
    .unwrap();
    assert_eq!(info.flags, DEVICE_FLAGS_PCI | DEVICE_FLAGS_RESET);
    assert_eq!((info.num_regions, info.num_irqs), (9, 5));

    let mut sizes = Vec::new();
    for index in 0..9 {
        let req = RegionInfo { argsz: 32, index, ..Default::default() };
        let r = RegionInfo::read_from_bytes(&c.ok(Command::DeviceGetRegionInfo, &[req.as_bytes()], &[])).unwrap();
        assert_eq!(r.index, index);
        sizes.push(r.size);
    }
    assert_eq!(sizes, vec![BAR0_SIZE, 0, BAR2_SIZE, 0, BAR4_SIZE, 0, 0, 4096, 0]);

    let cs = config(&mut c, 0, 4096);
    assert_eq!((u16_at(&cs, 0), u16_at(&cs, 2)), (0x14e4, 0x1760), "vendor and device");
    assert_eq!(u32::from_le_bytes(cs[8..12].try_into().unwrap()) >> 8, 0x02_0000, "class: Ethernet controller");
    // The BAR registers are 64-bit memory BARs 0, 2, 4 (type bits 0b100 in the low dword).
    for bar in [0usize, 2, 4] {
        assert_eq!(cs[0x10 + 4 * bar] & 0x6, 0x4, "BAR{bar} is a 64-bit memory BAR");
    }
    // Walk the capability list (PCI spec: status bit 4, pointer at 0x34).
    assert_ne!(u16_at(&cs, 6) & 0x10, 0, "capability list present");
    let mut caps = Vec::new();
    let mut ptr = cs[0x34] as usize;
    while ptr != 0 && caps.len() < 48 {
        caps.push(cs[ptr]);
        ptr = cs[ptr + 1] as usize;
    }
    for (id, name) in [(0x01u8, "power management"), (0x11, "MSI-X"), (0x10, "PCI Express")] {
        assert!(caps.contains(&id), "{name} capability missing from {caps:x?}");
    }
    let msix = cs[0x34] as usize; // find MSI-X for its table size and BIR
    let mut at = msix;
    while cs[at] != 0x11 {
        at = cs[at + 1] as usize;
    }
    assert_eq!((u16_at(&cs, at + 2) & 0x7ff) + 1, 128, "MSI-X table size");
    assert_eq!(cs[at + 4] & 0x7, 4, "MSI-X table in BAR4");
    // Extended config space: the first extended capability header at 0x100 is not empty.
    assert_ne!(u32::from_le_bytes(cs[0x100..0x104].try_into().unwrap()), 0, "an extended capability at 0x100");

    let irq = |c: &mut Raw, index| {
        IrqInfo::read_from_bytes(&c.ok(
            Command::DeviceGetIrqInfo,
            &[IrqInfo { argsz: 16, index, ..Default::default() }.as_bytes()],
            &[],
        ))
        .unwrap()
    };
    assert_eq!(irq(&mut c, PCI_MSIX_IRQ_INDEX).count, 128);
    assert_ne!(irq(&mut c, PCI_MSIX_IRQ_INDEX).flags & IRQ_INFO_EVENTFD, 0);
    assert_eq!(irq(&mut c, PCI_INTX_IRQ_INDEX).count, 1);
    assert_eq!(irq(&mut c, PCI_MSI_IRQ_INDEX).count, 0, "no MSI capability");
}

#[test]
fn hwrm_ver_get_written_to_bar0_is_answered_in_guest_memory() {
    let server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    const IOVA: u64 = 0x8000_0000;
    const RESP_OFF: u64 = 0x1000;
    let ram = memfd(0x4000);
    let map =
        DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset: 0, address: IOVA, size: 0x4000 };
    c.ok(Command::DmaMap, &[map.as_bytes()], &[fd_of(&ram)]);

    // Memory space and bus mastering on, as a driver's pci_enable_device + pci_set_master do.
    write_region(&mut c, PCI_CONFIG_REGION_INDEX, 4, &0x0006u16.to_le_bytes());
    // The request into the BAR0 window in 4-byte stores, zero-filled to 128 bytes, then the
    // trigger (bnxt_en's __hwrm_send).
    let mut window = [0u8; 128];
    let req = ver_get(7, IOVA + RESP_OFF);
    window[..req.len()].copy_from_slice(&req);
    for (i, dw) in window.chunks(4).enumerate() {
        write_region(&mut c, 0, 4 * i as u64, dw);
    }
    write_region(&mut c, 0, 0x100, &1u32.to_le_bytes());

    let bytes = wait_response(&ram, RESP_OFF, 7, Duration::from_secs(5)).expect("a response in guest memory");
    let mut full = HwrmVerGetOutput::new_zeroed();
    let n = bytes.len().min(size_of::<HwrmVerGetOutput>());
    full.as_mut_bytes()[..n].copy_from_slice(&bytes[..n]);
    assert_eq!(full.error_code.get(), 0);
    assert_eq!(full.req_type.get(), 0, "req_type echoed");
    assert_eq!(full.chip_num.get(), 0x1760, "a P7");
    assert_eq!((full.hwrm_intf_maj_8b, full.hwrm_intf_min_8b, full.hwrm_intf_upd_8b), (1, 10, 3));
    assert!(full.max_req_win_len.get() >= 128);
    assert_eq!(peek(&ram, 0, 16), vec![0; 16], "nothing else in guest memory was written");

    let unmap = DmaUnmap { argsz: 24, flags: 0, address: IOVA, size: 0x4000 };
    let echo = c.ok(Command::DmaUnmap, &[unmap.as_bytes()], &[]);
    assert_eq!(DmaUnmap::read_from_bytes(&echo).unwrap().address, IOVA);
    drop(c);
}

#[test]
fn a_fault_plan_given_with_faults_changes_the_answer_and_the_hwrm_log_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("faults.json");
    // VER_GET is refused with RESOURCE_ALLOC_ERROR (4) the first time only.
    std::fs::write(
        &plan,
        r#"{"firmware": [{"request": "VER_GET", "nth": 1, "action": "error", "code": "RESOURCE_ALLOC_ERROR"}]}"#,
    )
    .unwrap();
    let mut server = Server::start(&["--faults", plan.to_str().unwrap()]);
    let mut c = Raw::negotiated(&server.socket);
    let ram = memfd(0x2000);
    let map =
        DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset: 0, address: 0x10000, size: 0x2000 };
    c.ok(Command::DmaMap, &[map.as_bytes()], &[fd_of(&ram)]);
    write_region(&mut c, PCI_CONFIG_REGION_INDEX, 4, &0x0006u16.to_le_bytes());
    let mut codes = Vec::new();
    for seq in [1u16, 2] {
        let mut window = [0u8; 128];
        let req = ver_get(seq, 0x10000 + 0x1000);
        window[..req.len()].copy_from_slice(&req);
        write_region(&mut c, 0, 0, &window);
        write_region(&mut c, 0, 0x100, &1u32.to_le_bytes());
        let resp = wait_response(&ram, 0x1000, seq, Duration::from_secs(5)).expect("an answer");
        codes.push(u16::from_le_bytes([resp[0], resp[1]]));
    }
    assert_eq!(codes, vec![4, 0], "the first VER_GET is refused by the fault, the second answered");
    drop(c);
    let (status, _) = server.wait_exit(Duration::from_secs(10));
    assert!(status.success());
    let log = std::fs::read_to_string(&server.hwrm_log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("VER_GET 0x0000 seq=1 RESOURCE_ALLOC_ERROR 0x0004: injected fault"), "{log}");
    assert!(lines[1].contains("VER_GET 0x0000 seq=2 SUCCESS 0x0000"), "{log}");
}

/// Not a plan (requests by number are the old form); an unknown request; a wire plan whose rule
/// names a NIC the server does not have.
#[rstest::rstest]
#[case::old_form(r#"{"firmware": [{"nic": 0, "req_type": 0, "action": "no-response"}]}"#, "unknown field `nic`")]
#[case::unknown_request(r#"{"firmware": [{"request": "VER_GOT", "action": "no-response"}]}"#, "did you mean `VER_GET`")]
#[case::nic_not_served(r#"{"firmware": [], "wire": {"rules": [{"nic": 1, "kind": "drop"}]}}"#, "names NIC 1")]
fn a_bad_fault_plan_file_is_a_bad_command_line(#[case] text: &str, #[case] says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("faults.json");
    std::fs::write(&plan, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["serve", "--mac", "02:00:00:00:00:01", "--socket"])
        .arg(dir.path().join("nic.sock"))
        .arg("--faults")
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(says) && err.contains("faults.json"), "{err}");
    assert!(!dir.path().join("nic.sock").exists(), "nothing was served");
}
