//! The executor: several NICs, one virtual clock, deterministic.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::events::EventKind;
use bnxt_model::faults::{FaultPlan, FirmwareAction, FirmwareFault};
use bnxt_model::host_memory::{HeapBacking, MapError};
use bnxt_model_host::world::{World, WorldConfig};
use common::{Rig, req};
use zerocopy::IntoBytes;

fn config(nics: usize, seed: u64) -> WorldConfig {
    WorldConfig { nics, seed, ..WorldConfig::default() }
}

#[test]
fn the_same_seed_gives_the_same_macs_and_the_firmware_reports_them() {
    let a: Vec<_> = (0..4).map(|i| World::new(config(4, 42)).nic_state(i).mac).collect();
    let b: Vec<_> = (0..4).map(|i| World::new(config(4, 42)).nic_state(i).mac).collect();
    let c: Vec<_> = (0..4).map(|i| World::new(config(4, 43)).nic_state(i).mac).collect();
    assert_eq!(a, b);
    assert_ne!(a, c);
    for (i, m) in a.iter().enumerate() {
        assert_eq!(m[..3], [0x00, 0x0a, 0xf7], "Broadcom OUI");
        assert!(!a[..i].contains(m), "distinct");
    }
    let mut rig = Rig::with(2, 42, FaultPlan::default());
    let mut q: HwrmFuncQcapsInput = req();
    q.fid = 0xffff.into();
    assert_eq!(rig.ok(1, q).mac_address, a[1]);
}

#[test]
fn buses_and_mappings_are_per_nic() {
    let mut w = World::new(config(3, 0));
    assert_eq!(w.nic_count(), 3);
    assert_eq!(
        (0..3).map(|i| w.nic_state(i).bus).collect::<Vec<_>>(),
        ["0000:01:00.0", "0000:02:00.0", "0000:03:00.0"]
    );
    let mem = Arc::new(HeapBacking::new(8192));
    w.map_dma(1, 0x10_0000, mem.clone()).unwrap();
    assert!(matches!(w.map_dma(1, 0x10_1000, mem.clone()), Err(MapError::Overlap { .. })));
    w.map_dma(2, 0x10_1000, mem).unwrap();
    assert_eq!((w.nic_state(0).dma_mappings, w.nic_state(1).dma_mappings, w.nic_state(2).dma_mappings), (0, 1, 1));
    assert!(matches!(w.unmap_dma(0, 0x10_0000), Err(MapError::NotMapped { .. })));
    w.unmap_dma(1, 0x10_0000).unwrap();
    assert_eq!(w.nic_state(1).dma_mappings, 0);
}

#[test]
fn work_of_several_nics_runs_in_time_order_ties_by_nic_index() {
    // NIC 1's answer is delayed so it falls between NIC 0's two answers.
    let faults = FaultPlan {
        firmware: vec![FirmwareFault {
            nic: 1,
            req_type: 0,
            nth: None,
            action: FirmwareAction::Delay(Duration::from_micros(30)),
        }],
        ..FaultPlan::default()
    };
    let mut rig = Rig::with(2, 5, faults);
    let send = |rig: &mut Rig, nic: usize| {
        let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
        rig.stamp(&mut bytes);
        rig.submit_direct(nic, &bytes);
    };
    let t0 = rig.world.now();
    send(&mut rig, 1); // answered at t0 + 50 µs
    send(&mut rig, 0); // answered at t0 + 20 µs
    rig.world.advance(Duration::from_micros(30));
    send(&mut rig, 0); // answered at t0 + 50 µs, tying NIC 1
    rig.world.advance(Duration::from_millis(1));
    let answers: Vec<_> = rig
        .world
        .take_events()
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::HwrmResponse { .. }))
        .map(|e| (e.at - t0, e.nic))
        .collect();
    let us = Duration::from_micros;
    assert_eq!(answers, vec![(us(20), 0), (us(50), 0), (us(50), 1)]);
}

#[test]
fn events_are_drained_once_and_strict_mode_reports_unimplemented_hits() {
    let mut rig = Rig::new(1);
    rig.ok(0, req::<HwrmVerGetInput>());
    assert!(!rig.world.take_events().is_empty());
    assert!(rig.world.take_events().is_empty());
    assert!(!rig.world.strict());
    rig.world.set_strict(true);
    assert!(!rig.world.strict_violated());
    rig.world.bar_write(0, 0, 0xb00, &1u32.to_le_bytes());
    assert_eq!(rig.world.unimplemented_total(), 1);
    assert!(rig.world.strict_violated());
}

#[test]
#[should_panic(expected = "NIC 4 does not exist (the world has 2)")]
fn naming_a_nic_that_does_not_exist_is_a_clear_panic() {
    let w = World::new(config(2, 0));
    w.nic_state(4);
}
