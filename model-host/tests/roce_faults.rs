//! Injected faults on RoCE firmware commands, against the small test driver: a command never
//! completed (and not acted on), completed late, refused with a CREQ status (and not acted on),
//! only the nth occurrence hit, and the events each fault leaves.

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::command::Command;
use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::rcfw::CreqStatus;
use bnxt_model::events::EventKind;
use bnxt_model::faults::{CommandAction, CommandFault, FaultPlan};
use bnxt_model::roce::caps::RCFW_LATENCY;
use common::Rig;
use roce_support::*;
use zerocopy::{FromZeros, IntoBytes};

fn plan(faults: Vec<CommandFault>) -> FaultPlan {
    FaultPlan { roce_commands: faults, ..FaultPlan::default() }
}

fn fault<C: Command>(nic: usize, nth: Option<u32>, action: CommandAction) -> CommandFault {
    CommandFault { nic, opcode: C::OPCODE, nth, action }
}

/// The RoCE faults that fired since the last call, in order.
fn fired(rig: &mut Rig) -> Vec<(usize, u8, u32, CommandAction)> {
    rig.world
        .take_events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::RoceFaultFired { opcode, nth, action } => Some((e.nic, opcode, nth, action)),
            _ => None,
        })
        .collect()
}

/// Stamp `cmd` with its opcode and submit it; the cookie.
fn submit<C: Command>(f: &mut Func, rig: &mut Rig, mut cmd: C) -> u16 {
    cmd.as_mut_bytes()[0] = C::OPCODE;
    f.send(rig, cmd.as_bytes().to_vec())
}

/// A CREATE_CQ of 64 entries notifying the CREQ's ring (any NQ-type ring will do), with fresh
/// memory.
fn create_cq(f: &mut Func, rig: &mut Rig) -> CmdqCreateCq {
    let (table, _) = pbl(rig, f.nic, &mut f.pages, 64 * 32);
    let mut c = CmdqCreateCq::new_zeroed();
    c.cq_handle = 0xc0ffee.into();
    c.pg_size_lvl = CmdqCreateCq::LVL_LVL_1.into();
    c.cq_fco_cnq_id = u32::from(f.creq.id).into();
    c.dpi = 16.into();
    c.cq_size = 64.into();
    c.pbl = table.into();
    c
}

fn up(rig: &mut Rig, nic: usize) -> Func {
    let mut f = Func::bring_up(rig, nic, 256, 256);
    f.initialize(rig);
    rig.world.take_events();
    f
}

#[test]
fn no_response_takes_the_command_and_neither_acts_on_it_nor_completes_it() {
    let mut rig = Rig::with(2, 1, plan(vec![fault::<CmdqCreateCq>(0, Some(1), CommandAction::NoResponse)]));
    let mut f = up(&mut rig, 0);
    let cmd = create_cq(&mut f, &mut rig);
    submit(&mut f, &mut rig, cmd);
    let wall = std::time::Instant::now();
    rig.world.advance(Duration::from_secs(60));
    assert!(wall.elapsed() < Duration::from_secs(5), "virtual time costs no wall time");
    assert!(f.creq.peek(&rig, 0).is_none(), "no completion on the CREQ after 60 s");
    let roce = rig.world.device(0).roce();
    assert!(roce.state().cqs.is_empty(), "the CQ was not made");
    assert_eq!(u32::from(roce.channel().consumer()), f.prod, "the command was taken from the CMDQ");
    assert_eq!(roce.channel().commands_seen(CmdqCreateCq::OPCODE), 1);
    assert_eq!(fired(&mut rig), vec![(0, CmdqCreateCq::OPCODE, 1, CommandAction::NoResponse)]);
    // The channel goes on: the next CREATE_CQ (the second occurrence) is made and completed.
    let cmd = create_cq(&mut f, &mut rig);
    let c = f.ok(&mut rig, cmd);
    assert!(rig.world.device(0).roce().state().cqs.contains_key(&c.xid));
    // The other NIC never had the fault.
    let mut g = up(&mut rig, 1);
    let cmd = create_cq(&mut g, &mut rig);
    g.ok(&mut rig, cmd);
    assert!(fired(&mut rig).is_empty());
}

#[test]
fn acts_no_response_makes_what_the_command_asks_and_never_completes_it() {
    let mut rig = Rig::with(1, 1, plan(vec![fault::<CmdqCreateCq>(0, Some(1), CommandAction::ActsNoResponse)]));
    let mut f = up(&mut rig, 0);
    let cmd = create_cq(&mut f, &mut rig);
    submit(&mut f, &mut rig, cmd);
    rig.world.advance(Duration::from_secs(60));
    assert!(f.creq.peek(&rig, 0).is_none(), "no completion on the CREQ after 60 s");
    let roce = rig.world.device(0).roce();
    assert_eq!(roce.state().cqs.len(), 1, "the CQ was made: the firmware holds its memory");
    assert_eq!(u32::from(roce.channel().consumer()), f.prod, "the command was taken from the CMDQ");
    assert_eq!(fired(&mut rig), vec![(0, CmdqCreateCq::OPCODE, 1, CommandAction::ActsNoResponse)]);
}

#[test]
fn delay_acts_and_completes_exactly_that_much_later() {
    let d = Duration::from_secs(3);
    let mut rig = Rig::with(1, 1, plan(vec![fault::<CmdqCreateCq>(0, None, CommandAction::Delay(d))]));
    let mut f = up(&mut rig, 0);
    let cmd = create_cq(&mut f, &mut rig);
    let t0 = rig.world.now();
    let cookie = submit(&mut f, &mut rig, cmd);
    rig.world.advance(RCFW_LATENCY + d - Duration::from_nanos(1));
    assert!(f.creq.peek(&rig, 0).is_none(), "not before its time");
    rig.world.advance(Duration::from_nanos(1));
    assert_eq!(rig.world.now(), t0 + RCFW_LATENCY + d);
    let c = f.wait(&mut rig, cookie);
    assert_eq!((c.status, c.event), (0, CmdqCreateCq::OPCODE));
    assert!(rig.world.device(0).roce().state().cqs.contains_key(&c.xid), "the CQ it names exists");
    assert_eq!(fired(&mut rig), vec![(0, CmdqCreateCq::OPCODE, 1, CommandAction::Delay(d))]);
}

#[test]
fn error_completes_with_the_status_without_acting() {
    // Every error status roce_hsi.h defines: CREQ_QP_EVENT_STATUS_FAIL (1) to INTERNAL_ERROR (7).
    let statuses: Vec<CreqStatus> = (1..=7).map(|v| CreqStatus::from_value(v).unwrap()).collect();
    let faults = statuses
        .iter()
        .enumerate()
        .map(|(i, s)| fault::<CmdqRegisterMr>(0, Some(i as u32 + 1), CommandAction::Error(s.value())))
        .collect();
    let mut rig = Rig::with(1, 1, plan(faults));
    let mut f = up(&mut rig, 0);
    let unimplemented_before = rig.world.device(0).roce_counters().unimplemented_total();
    for (i, status) in statuses.iter().enumerate() {
        let (table, base) = pbl(&rig, 0, &mut f.pages, 8192);
        let mut r = CmdqRegisterMr::new_zeroed();
        r.flags = CmdqRegisterMr::FLAGS_ALLOC_MR.into();
        r.log2_pg_size_lvl = CmdqRegisterMr::LVL_LVL_1 | CmdqRegisterMr::LOG2_PG_SIZE_PG_4K;
        r.log2_pbl_pg_size = CmdqRegisterMr::LOG2_PBL_PG_SIZE_PG_4K.into();
        r.key = 1.into();
        r.pbl = table.into();
        r.va = base.into();
        r.mr_size = 8192.into();
        let c = f.call(&mut rig, r);
        assert_eq!(c.status, status.value(), "{}", status.name());
        assert!(rig.world.device(0).roce().state().keys.is_empty(), "no key was allocated");
        let events = rig.world.take_events();
        let fired: Vec<_> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::RoceFaultFired { opcode, nth, action } => Some((*opcode, *nth, action.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(fired, vec![(CmdqRegisterMr::OPCODE, i as u32 + 1, CommandAction::Error(status.value()))]);
        let reason = events.iter().find_map(|e| match &e.kind {
            EventKind::RoceCompletion { reason, status: s, .. } if *s == status.value() => Some(reason.clone()),
            _ => None,
        });
        assert!(reason.is_some_and(|r| r.contains("injected")), "the completion says why");
    }
    // Injected NOT_IMPLEMENTED and INVALID_CMD are not the model's own gaps.
    assert_eq!(rig.world.device(0).roce_counters().unimplemented_total(), unimplemented_before);
    // The eighth REGISTER_MR has no fault: it registers.
    let (key, _) = f.region(&mut rig, 4096, 0);
    assert!(rig.world.device(0).roce().state().keys.get(key).is_some());
}

#[test]
fn nth_hits_one_occurrence_and_counts_survive_resets() {
    let mut rig = Rig::with(
        1,
        1,
        plan(vec![fault::<CmdqQueryVersion>(0, Some(3), CommandAction::Error(CreqStatus::Fail.value()))]),
    );
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    assert_eq!(f.call(&mut rig, CmdqQueryVersion::new_zeroed()).status, 0);
    assert_eq!(f.call(&mut rig, CmdqQueryVersion::new_zeroed()).status, 0);
    // FUNC_RESET drops the channel and every RoCE object; the count goes on.
    rig.ok(0, common::req::<bnxt_hsi::hwrm::layouts::HwrmFuncResetInput>());
    assert_eq!(rig.world.device(0).roce().channel().commands_seen(CmdqQueryVersion::OPCODE), 2);
    rig.world.take_events();
    // The next bring-up uses the same pages: clear the old CREQ's valid bits first.
    rig.poke(0, f.creq.base, &[0; 64 * 16]);
    let mut f = Func::bring_up(&mut rig, 0, 64, 64);
    assert_eq!(f.call(&mut rig, CmdqQueryVersion::new_zeroed()).status, CreqStatus::Fail.value());
    assert_eq!(f.call(&mut rig, CmdqQueryVersion::new_zeroed()).status, 0);
    assert_eq!(fired(&mut rig), vec![(0, CmdqQueryVersion::OPCODE, 3, CommandAction::Error(1))]);
}

#[test]
fn the_first_matching_fault_applies_and_events_name_the_command() {
    let mut rig = Rig::with(
        1,
        1,
        plan(vec![
            fault::<CmdqAddGid>(0, Some(2), CommandAction::NoResponse),
            fault::<CmdqAddGid>(0, None, CommandAction::Error(CreqStatus::Resources.value())),
        ]),
    );
    let mut f = up(&mut rig, 0);
    let mut g = CmdqAddGid::new_zeroed();
    g.gid.as_mut_bytes().copy_from_slice(&bnxt_hsi::roce::gid::gid_for_command(f.gid()));
    g.src_mac.as_mut_bytes().copy_from_slice(&bnxt_hsi::roce::gid::mac_for_command(f.mac));
    assert_eq!(f.call(&mut rig, g).status, CreqStatus::Resources.value());
    let text: Vec<String> = rig
        .world
        .take_events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RoceFaultFired { .. }))
        .map(|e| e.to_string())
        .collect();
    assert_eq!(text.len(), 1);
    assert!(text[0].contains("roce fault on ADD_GID #1: error RESOURCES"), "{}", text[0]);
    submit(&mut f, &mut rig, g);
    rig.world.advance(Duration::from_secs(1));
    assert!(f.creq.peek(&rig, 0).is_none());
    let ev = rig.world.take_events();
    let line = ev.iter().find(|e| matches!(e.kind, EventKind::RoceFaultFired { .. })).unwrap().to_string();
    assert!(line.contains("roce fault on ADD_GID #2: no-response"), "{line}");
    assert!(
        !ev.iter().any(|e| matches!(e.kind, EventKind::RoceCompletion { .. })),
        "a swallowed command has no completion event"
    );
    assert!(rig.world.device(0).roce().state().gids.is_empty());
}
