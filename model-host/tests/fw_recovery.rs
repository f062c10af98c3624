//! The error recovery capability (bnxt_model::firmware::recovery) as bnxt_en uses it: FUNC_QCAPS
//! advertises it, ERROR_RECOVERY_QCFG names the health registers, the ERROR_RECOVERY async event
//! turns the driver's watchdog on, the heartbeat moves while the firmware lives and stops while
//! it is down, the reset counter counts restarts. Without the option none of it is offered.

mod common;
mod l2_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model::firmware::reset::ResetKind;
use bnxt_model_host::world::WorldConfig;
use common::{Rig, req};
use l2_support::{L2Nic, Setup};

fn rig(error_recovery: bool) -> Rig {
    let firmware = FirmwareOptions { error_recovery, ..FirmwareOptions::default() };
    Rig::with_config(WorldConfig { nics: 1, firmware, ..WorldConfig::default() })
}

fn bar0(rig: &mut Rig, offset: u64) -> u32 {
    let mut v = [0u8; 4];
    rig.world.bar_read(0, 0, offset, &mut v);
    u32::from_le_bytes(v)
}

/// The async events on the NQ: (event_id, data1).
fn async_events(rig: &mut Rig, a: &mut L2Nic) -> Vec<(u16, u32)> {
    a.take_nq(rig)
        .iter()
        .filter(|e| u16::from_le_bytes([e[0], e[1]]) & 0x3f == 0x2e)
        .map(|e| (u16::from_le_bytes([e[2], e[3]]), u32::from_le_bytes(e[12..16].try_into().unwrap())))
        .collect()
}

#[test]
fn without_the_option_no_capability_no_query_and_no_health_registers() {
    let mut rig = rig(false);
    let q = rig.ok(0, req::<HwrmFuncQcapsInput>());
    assert_eq!(q.flags.get() & HwrmFuncQcapsOutput::FLAGS_ERROR_RECOVERY_CAPABLE, 0);
    let a = rig.call(0, req::<HwrmErrorRecoveryQcfgInput>());
    assert_eq!(a.code, 0xffff, "CMD_NOT_SUPPORTED");
    assert_eq!(bar0(&mut rig, 0x524), u32::MAX, "no heartbeat register: not implemented");
    let before = rig.world.nic_state(0).unimplemented;
    bar0(&mut rig, 0x528);
    assert_eq!(rig.world.nic_state(0).unimplemented, before + 1, "counted as not implemented");
}

#[test]
fn the_capability_names_bar0_health_registers_and_host_recovery() {
    let mut rig = rig(true);
    let q = rig.ok(0, req::<HwrmFuncQcapsInput>());
    assert_ne!(q.flags.get() & HwrmFuncQcapsOutput::FLAGS_ERROR_RECOVERY_CAPABLE, 0);
    let r = rig.ok(0, req::<HwrmErrorRecoveryQcfgInput>());
    // Not CO_CPU: bnxt_hwrm_error_recovery_qcfg refuses that without a KONG channel.
    assert_eq!(r.flags.get(), HwrmErrorRecoveryQcfgOutput::FLAGS_HOST);
    assert_eq!(r.driver_polling_freq.get(), 10);
    let bar0_space = HwrmErrorRecoveryQcfgOutput::FW_HEALTH_STATUS_REG_ADDR_SPACE_BAR0;
    assert_eq!(r.fw_health_status_reg.get(), 0x520 | bar0_space);
    assert_eq!(r.fw_heartbeat_reg.get(), 0x524 | bar0_space);
    assert_eq!(r.fw_reset_cnt_reg.get(), 0x528 | bar0_space);
    assert_eq!((r.reset_inprogress_reg.get(), r.reset_inprogress_reg_mask.get()), (0, 0));
    assert!(r.reg_array_cnt < 16, "bnxt_en refuses 16 or more");
    assert_eq!(r.reg_array_cnt, 0);
    assert!(r.master_func_wait_period_after_reset.get() > 0 && r.max_bailout_time_after_reset.get() >= 10);
}

#[test]
fn the_watchdog_is_turned_on_and_the_heartbeat_stops_while_the_firmware_is_down() {
    let mut rig = rig(true);
    let mut a = L2Nic::bring_up(&mut rig, 0, Setup { error_recovery: true, ..Setup::default() });
    // ERROR_RECOVERY: MASTER_FUNC | RECOVERY_ENABLED, once the async event ring is named.
    assert_eq!(async_events(&mut rig, &mut a), vec![(0x9, 0x3)]);
    let (hb0, resets0) = (bar0(&mut rig, 0x524), bar0(&mut rig, 0x528));
    rig.world.advance(Duration::from_secs(1));
    let hb1 = bar0(&mut rig, 0x524);
    assert_ne!(hb1, hb0, "a live firmware's heartbeat moves between two polls");
    assert_eq!(bar0(&mut rig, 0x528), resets0);

    assert!(rig.world.fw_reset(0, ResetKind::Fatal));
    let dead = bar0(&mut rig, 0x524);
    rig.world.advance(Duration::from_millis(500));
    assert_eq!(bar0(&mut rig, 0x524), dead, "bnxt_fw_health_check would see no heartbeat");
    rig.world.advance(Duration::from_millis(600));
    assert_eq!(bar0(&mut rig, 0x528), resets0 + 1, "the reset counter counts the restart");
    let after = bar0(&mut rig, 0x524);
    rig.world.advance(Duration::from_secs(1));
    assert_ne!(bar0(&mut rig, 0x524), after, "beating again");
}

#[test]
fn a_driver_registered_without_error_recovery_gets_no_error_recovery_event() {
    let mut rig = rig(true);
    let mut a = L2Nic::bring_up(&mut rig, 0, Setup::default());
    assert_eq!(async_events(&mut rig, &mut a), vec![]);
}
