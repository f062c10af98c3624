//! RoCE firmware commands on the CMDQ, structure-aware: an opcode (mostly one roce_hsi.h
//! defines), a body the fuzzer shapes, the response side buffer aimed anywhere (lent memory, the
//! read-only canary, unmapped), and now and then a command size of its own or a TLV wrapper.
//! Invariants: every command is completed on the CREQ (within a second of virtual time) with the
//! opcode it was answered as (after a command of a misstated size, the slots it did not cover are
//! read as commands of their own, whose answers are taken before the next command); the canary
//! is never written; afterwards QUERY_VERSION succeeds.
#![no_main]

use arbitrary::Arbitrary;
use bnxt_fuzz::common::MEM_LEN;
use bnxt_fuzz::snapshot::Snapshot;
use bnxt_fuzz::{Place, Roce, roce};
use bnxt_hsi::roce::layouts::CmdqQueryVersion;
use bnxt_hsi::roce::rcfw::CMD_DISCR_TLV_ENCAP;
use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use zerocopy::FromZeros;

#[derive(Debug, Arbitrary)]
enum Size {
    /// cmd_size as the slots written (the usual).
    Slots,
    /// A size of its own.
    Own(u8),
    /// Wrapped in a TLV header with this size.
    Tlv(u8),
}

#[derive(Debug, Arbitrary)]
struct Command {
    opcode: u8,
    /// 1 to 12 slots of 16 bytes.
    slots: u8,
    body: Vec<u8>,
    /// Side buffer: its size in slots and where it is.
    sb: Option<(u8, Place)>,
    size: Size,
}

thread_local! {
    /// One NIC with its RoCE function up and initialized.
    static MACHINE: Snapshot<Roce> = Snapshot::take(MEM_LEN, roce);
}

fuzz_target!(|commands: Vec<Command>| MACHINE.with(|m| m.run(|r| run(r, &commands))));

fn run(Roce { rig, canary, f }: &mut Roce, commands: &[Command]) {
    let rig = &mut *rig;
    for c in commands.iter().take(48) {
        // Opcodes of 0xc0 and up name asynchronous events in a completion, so a driver could
        // not tell such a command's completion apart: the model's tests (and a driver) never
        // send them.
        let opcode = c.opcode % 0xc0;
        let slots = usize::from(c.slots % 12) + 1;
        let mut b = c.body.clone();
        b.resize(slots * 16, 0);
        b[0] = opcode;
        if let Some((sb_slots, at)) = c.sb {
            b[6] = sb_slots;
            b[8..16].copy_from_slice(&at.address().to_le_bytes());
        }
        let (cookie, answered_as) = match c.size {
            Size::Slots => (f.send(rig, b), opcode),
            Size::Own(size) if u16::from_le_bytes([opcode, size]) == CMD_DISCR_TLV_ENCAP => {
                // Opcode 0 with cmd_size 0x80 reads as a TLV header (its first two bytes
                // are CMD_DISCR_TLV_ENCAP), whose size and cookie are then other
                // bytes': answered, but under a cookie of the fuzzer's making.
                b[1] = size;
                f.submit(rig, &b);
                f.settle(rig, Duration::from_millis(10));
                continue;
            }
            Size::Own(size) => {
                f.cookie = f.cookie.wrapping_add(1);
                b[1] = size;
                b[4..6].copy_from_slice(&f.cookie.to_le_bytes());
                f.submit(rig, &b);
                (f.cookie, opcode)
            }
            Size::Tlv(size) => {
                f.cookie = f.cookie.wrapping_add(1);
                b[0..2].copy_from_slice(&CMD_DISCR_TLV_ENCAP.to_le_bytes());
                b[8] = size;
                let inner = size >= 2 && slots >= 2;
                if inner {
                    b[16] = opcode;
                    b[20..22].copy_from_slice(&f.cookie.to_le_bytes());
                } else {
                    b[4..6].copy_from_slice(&f.cookie.to_le_bytes());
                }
                f.submit(rig, &b);
                (f.cookie, if inner { opcode } else { 0 })
            }
        };
        let done = f.wait(rig, cookie);
        assert_eq!(done.event, answered_as, "the completion names the command's opcode");
        if !matches!(c.size, Size::Slots) {
            // The slots its stated size did not cover are commands of their own, answered after
            // it, with cookies of the fuzzer's making: take their answers before the next.
            let seen = f.async_events.len();
            f.settle(rig, Duration::from_millis(10));
            if f.async_events[seen..].iter().any(|e| e.event == 0x02 && e.status == 0) {
                // One of them was a DEINITIALIZE_FW that took effect.
                f.initialize(rig);
            }
        }
        if answered_as == 0x02 && done.status == 0 {
            // DEINITIALIZE_FW took effect: initialize again, as a driver would.
            f.initialize(rig);
        }
    }
    canary.check();
    let q = f.call(rig, CmdqQueryVersion::new_zeroed());
    assert_eq!(q.status, 0, "QUERY_VERSION after the commands");
}
