//! The PCI side: config space (identity, BAR sizing, capabilities), the command register gating
//! BARs and DMA, function-level reset, BAR0 status/GRC registers, BAR4 MSI-X, and loud
//! unimplemented registers.

mod common;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::config_space::*;
use bnxt_model::events::EventKind;
use bnxt_model_host::world::{World, WorldConfig};
use common::{Pages, Rig, req};
use zerocopy::IntoBytes;

fn world() -> World {
    World::new(WorldConfig { nics: 1, seed: 3, ..WorldConfig::default() })
}

fn cfg32(w: &mut World, off: u16) -> u32 {
    let mut b = [0; 4];
    w.config_read(0, off, &mut b);
    u32::from_le_bytes(b)
}

fn cfg16(w: &mut World, off: u16) -> u16 {
    let mut b = [0; 2];
    w.config_read(0, off, &mut b);
    u16::from_le_bytes(b)
}

fn bar32(w: &mut World, bar: u8, off: u64) -> u32 {
    let mut b = [0; 4];
    w.bar_read(0, bar, off, &mut b);
    u32::from_le_bytes(b)
}

#[test]
fn identity_class_and_header() {
    let mut w = world();
    assert_eq!(cfg32(&mut w, 0), 0x1760_14e4);
    assert_eq!(cfg32(&mut w, 0x08) >> 8, 0x02_0000, "Ethernet controller");
    assert_eq!(cfg16(&mut w, 0x2c), 0x14e4, "subsystem vendor Broadcom");
    let mut b = [0u8; 1];
    w.config_read(0, HEADER_TYPE, &mut b);
    assert_eq!(b[0], 0);
    w.config_read(0, INTERRUPT_PIN, &mut b);
    assert_eq!(b[0], 1);
    assert_eq!(cfg16(&mut w, COMMAND), 0, "memory and bus master off at power-on");
}

#[test]
fn bar_sizes_are_probed_by_writing_all_ones() {
    let mut w = world();
    let mut sizes = Vec::new();
    for bar in [0u16, 2, 4] {
        let reg = BAR0_REG + 4 * bar;
        let orig_lo = cfg32(&mut w, reg);
        w.config_write(0, reg, &u32::MAX.to_le_bytes());
        w.config_write(0, reg + 4, &u32::MAX.to_le_bytes());
        let lo = cfg32(&mut w, reg);
        let hi = cfg32(&mut w, reg + 4);
        assert_eq!(lo & 0xf, 0xc, "64-bit prefetchable memory BAR");
        let mask = (u64::from(hi) << 32) | u64::from(lo & !0xf);
        sizes.push(mask.wrapping_neg());
        // Programming an address keeps the bits above the size.
        w.config_write(0, reg, &0xfe00_0000u32.to_le_bytes());
        w.config_write(0, reg + 4, &0x38u32.to_le_bytes());
        assert_eq!(w.device(0).config().bar_address(bar as u8), 0x38_fe00_0000);
        assert_eq!(orig_lo & 0xf, 0xc);
    }
    assert_eq!(sizes, vec![BAR0_SIZE, BAR2_SIZE, BAR4_SIZE]);
    // BARs 1, 3 and 5 are the upper halves; there is no expansion ROM.
    w.config_write(0, 0x30, &u32::MAX.to_le_bytes());
    assert_eq!(cfg32(&mut w, 0x30), 0);
}

#[test]
fn the_capability_lists_lead_to_pm_msix_pcie_vpd_and_dsn() {
    let mut w = world();
    assert_ne!(cfg16(&mut w, STATUS) & STATUS_CAP_LIST, 0);
    let mut found = Vec::new();
    let mut ptr = cfg32(&mut w, CAPABILITY_LIST) as u8;
    while ptr != 0 {
        assert!(found.len() < 48, "capability list loops");
        let hdr = cfg16(&mut w, ptr.into());
        found.push(((hdr & 0xff) as u8, ptr));
        ptr = (hdr >> 8) as u8;
    }
    let ids: Vec<u8> = found.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, vec![CAP_ID_PM, CAP_ID_MSIX, CAP_ID_EXP, CAP_ID_VPD]);
    let msix = found[1].1 as u16;
    assert_eq!((cfg16(&mut w, msix + 2) & 0x7ff) + 1, MSIX_VECTORS);
    assert_eq!(cfg32(&mut w, msix + 4), 4, "table at offset 0 of BAR4");
    assert_eq!(cfg32(&mut w, msix + 8) & 7, 4, "PBA in BAR4");
    let exp = found[2].1 as u16;
    assert_eq!(cfg16(&mut w, exp + 2) & 0xf, 2, "PCIe capability version 2");
    assert_eq!((cfg16(&mut w, exp + 2) >> 4) & 0xf, 0, "endpoint");
    assert_ne!(cfg32(&mut w, exp + EXP_DEVCAP) & DEVCAP_FLR, 0, "FLR supported");
    assert_eq!(cfg16(&mut w, exp + EXP_DEVCTL), DEVCTL_RESET);
    assert_ne!(cfg16(&mut w, exp + EXP_DEVCTL) & DEVCTL_RELAX_EN, 0, "relaxed ordering on at reset");
    assert_eq!(cfg16(&mut w, exp + 0x12) & 0xf, 5, "link at 32 GT/s");
    // Extended capabilities from 0x100: the serial number, matching FUNC_QCAPS.
    let ext = cfg32(&mut w, 0x100);
    assert_eq!(ext & 0xffff, u32::from(EXT_CAP_ID_DSN));
    assert_eq!(ext >> 20, 0, "last extended capability");
    let dsn = u64::from(cfg32(&mut w, 0x104)) | (u64::from(cfg32(&mut w, 0x108)) << 32);
    assert_eq!(dsn, serial_from_mac(w.nic_state(0).mac));
}

#[test]
fn read_only_registers_ignore_writes() {
    let mut w = world();
    w.config_write(0, 0, &0u32.to_le_bytes());
    w.config_write(0, 0x08, &0u32.to_le_bytes());
    w.config_write(0, MSIX_CAP + 4, &0x1234u32.to_le_bytes());
    w.config_write(0, EXP_CAP + EXP_DEVCAP, &0u32.to_le_bytes());
    assert_eq!(cfg32(&mut w, 0), 0x1760_14e4);
    assert_eq!(cfg32(&mut w, 0x08) >> 8, 0x02_0000);
    assert_eq!(cfg32(&mut w, MSIX_CAP + 4), 4);
    assert_ne!(cfg32(&mut w, EXP_CAP + EXP_DEVCAP) & DEVCAP_FLR, 0);
    // Command: I/O space enable is hardwired 0.
    w.config_write(0, COMMAND, &0xffffu16.to_le_bytes());
    assert_eq!(cfg16(&mut w, COMMAND), 0x0546);
}

#[test]
fn memory_space_off_reads_all_ones_and_drops_stores() {
    let mut w = world();
    assert_eq!(bar32(&mut w, 0, 0x520), u32::MAX);
    w.bar_write(0, 0, 0x0, &0x1234u32.to_le_bytes());
    assert_eq!(w.nic_state(0).memory_disabled_accesses, 2);
    w.config_write(0, COMMAND, &COMMAND_MEMORY.to_le_bytes());
    assert_eq!(bar32(&mut w, 0, 0x520), 0x8000, "firmware ready");
    assert_eq!(bar32(&mut w, 0, 0x0), 0, "the store was dropped");
    let kinds: Vec<_> = w.take_events().into_iter().map(|e| e.kind).collect();
    assert!(kinds.iter().filter(|k| matches!(k, EventKind::MemoryDisabledAccess { .. })).count() == 2);
    assert!(kinds.contains(&EventKind::CommandChanged { memory: true, bus_master: false }));
}

#[test]
fn bus_master_off_means_no_dma_at_all() {
    let mut rig = Rig::new(1);
    rig.world.config_write(0, COMMAND, &COMMAND_MEMORY.to_le_bytes());
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    let seq = rig.stamp(&mut bytes);
    rig.submit_direct(0, &bytes);
    assert!(rig.wait(0, seq, Duration::from_secs(1)).is_none());
    assert_eq!(rig.peek(0, common::RESP, 16), vec![0; 16]);
    assert_eq!(rig.world.nic_state(0).dma_errors, 1);
    // Nor can a short command be read.
    rig.submit_short(0, &bytes, 24, 0x4321);
    rig.world.advance(Duration::from_millis(1));
    assert_eq!(rig.world.nic_state(0).dma_errors, 2);
    // Back on, the mailbox answers again.
    rig.world.config_write(0, COMMAND, &(COMMAND_MEMORY | COMMAND_MASTER).to_le_bytes());
    rig.ok(0, req::<HwrmVerGetInput>());
}

#[test]
fn function_level_reset_returns_config_and_firmware_to_reset_state() {
    let mut rig = Rig::new(1);
    rig.ok(0, common::roomy_reservation());
    rig.ok(0, req::<HwrmFuncDrvRgtrInput>());
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = Pages::default().take(1).into();
    rig.ok(0, s);
    let devctl = EXP_CAP + EXP_DEVCTL;
    rig.world.config_write(0, devctl, &(DEVCTL_RESET & !DEVCTL_RELAX_EN).to_le_bytes());
    assert!(!rig.world.nic_state(0).relaxed_ordering);
    rig.world.bar_write(0, 4, 0, &0xfee0_0000u32.to_le_bytes());
    // A request in flight when the reset comes is never answered.
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    let seq = rig.stamp(&mut bytes);
    rig.submit_direct(0, &bytes);
    assert_eq!(rig.world.nic_state(0).pending_responses, 1);

    rig.world.config_write(0, devctl, &(DEVCTL_RESET | DEVCTL_BCR_FLR).to_le_bytes());
    let st = rig.world.nic_state(0);
    assert!(st.relaxed_ordering, "Device Control back to its reset value");
    assert!(!st.memory_enabled && !st.bus_master);
    assert!(!st.driver_registered);
    assert_eq!((st.stat_contexts, st.pending_responses), (0, 0));
    assert_eq!(st.dma_mappings, 1, "the host's mappings are the host's, not the function's");
    assert_eq!(cfg16(&mut rig.world, devctl) & DEVCTL_BCR_FLR, 0);
    rig.world.config_write(0, COMMAND, &(COMMAND_MEMORY | COMMAND_MASTER).to_le_bytes());
    assert_eq!(bar32(&mut rig.world, 4, 0), 0, "MSI-X table reset");
    assert_eq!(bar32(&mut rig.world, 4, 12), 1, "vectors masked");
    assert!(rig.wait(0, seq, Duration::from_secs(1)).is_none());
    assert!(rig.world.take_events().iter().any(|e| e.kind == EventKind::FunctionLevelReset));
    rig.ok(0, req::<HwrmFuncDrvRgtrInput>());
}

#[test]
fn bar0_status_grc_windows_and_hcomm_status_read_as_bnxt_en_expects() {
    let mut rig = Rig::new(1);
    let w = &mut rig.world;
    assert_eq!(bar32(w, 0, 0x520), 0x8000);
    // bnxt_try_map_fw_health_reg: window 3 onto HCOMM_STATUS_STRUCT_LOC.
    w.bar_write(0, 0, 0x408, &0x0310_01f0u32.to_le_bytes());
    assert_eq!(bar32(w, 0, 0x408), 0x0310_0000);
    let sig = bar32(w, 0, 0x3000 + 0x1f0);
    assert_eq!(sig >> 8, 0x48_4353, "'HCS'");
    let loc = bar32(w, 0, 0x3000 + 0x1f4);
    assert_eq!((loc & 3, loc & !3), (2, 0x520), "status register in BAR0 at 0x520");
    // Chip number through the same window.
    w.bar_write(0, 0, 0x408, &0x0026_0000u32.to_le_bytes());
    assert_eq!(bar32(w, 0, 0x3048) & 0xffff, 0x1760);
    assert_eq!(w.nic_state(0).unimplemented, 0);
}

#[test]
fn msix_table_and_pba_in_bar4() {
    let mut rig = Rig::new(1);
    let w = &mut rig.world;
    for v in [0u64, 5, 127] {
        assert_eq!(bar32(w, 4, v * 16 + 12), 1, "vector {v} masked at reset");
    }
    w.bar_write(0, 4, 5 * 16, &0x0000_0001_fee0_1000u64.to_le_bytes());
    w.bar_write(0, 4, 5 * 16 + 8, &0x41u32.to_le_bytes());
    w.bar_write(0, 4, 5 * 16 + 12, &0u32.to_le_bytes());
    let e = *w.device(0).msix().entry(5).unwrap();
    assert_eq!((e.address, e.data, e.control), (0x1_fee0_1000, 0x41, 0));
    let mut b = [0u8; 8];
    w.bar_read(0, 4, 5 * 16, &mut b);
    assert_eq!(u64::from_le_bytes(b), 0x1_fee0_1000);
    assert_eq!(bar32(w, 4, 0x2000), 0, "nothing pending");
    assert_eq!(w.nic_state(0).unimplemented, 0);
}

#[test]
fn unimplemented_registers_are_loud_counted_and_read_all_ones() {
    let mut rig = Rig::new(1);
    let w = &mut rig.world;
    assert_eq!(bar32(w, 0, 0x800), u32::MAX);
    assert_eq!(bar32(w, 0, 0x800), u32::MAX);
    w.bar_write(0, 0, 0xa00, &1u32.to_le_bytes()); // KONG
    w.bar_write(0, 0, 0x20000, &1u32.to_le_bytes()); // beyond BAR0
    w.bar_write(0, 0, 0x0, &[1, 2]); // 2-byte store
    let mut b = [0u8; 4];
    w.bar_read(0, 1, 0, &mut b); // no BAR 1
    assert_eq!(b, [0xff; 4]);
    assert_eq!(w.nic_state(0).unimplemented, 6);
    let hits = w.device(0).unimplemented_hits();
    assert!(hits.iter().any(|h| h.bar == 0 && h.offset == 0x800 && h.count == 2));
    assert!(hits.iter().any(|h| h.bar == 0 && h.offset == 0xa00));
}

#[test]
fn roce_mailbox_trigger_and_doorbells_are_taken_not_unimplemented() {
    let mut rig = Rig::new(1);
    let w = &mut rig.world;
    w.bar_write(0, 0, 0x600, &0xabcdu32.to_le_bytes()); // RoCE mailbox: kept
    assert_eq!(w.device(0).bar0().rcfw_mailbox()[..4], 0xabcdu32.to_le_bytes());
    w.bar_write(0, 0, 0x700, &1u32.to_le_bytes()); // trigger before the channel was started
    // A doorbell without the P7 valid bit on the kernel doorbell page.
    w.bar_write(0, 2, 0x10000, &0x1234_5678_0000_0001u64.to_le_bytes());
    let st = w.nic_state(0);
    assert_eq!(st.unimplemented, 0);
    assert_eq!(st.roce.channel_errors, 1);
    assert_eq!(st.roce.bad_doorbells_total(), 1);
    let events = w.take_events();
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::RoceChannelError { reason } if reason.contains("before the channel was started"))));
    let doorbell = events.iter().find_map(|e| match e.kind {
        EventKind::DoorbellIgnored { value, .. } => Some(value),
        _ => None,
    });
    assert_eq!(doorbell, Some(0x1234_5678_0000_0001), "an ignored doorbell is one event with its value");
}
