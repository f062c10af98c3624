//! Random input from a driver never crashes the model, and the model keeps working after it:
//! HWRM requests with random bodies (direct and short form), RoCE firmware commands with random
//! bodies and sizes, random doorbells and BAR accesses, random config-space writes. Each test
//! draws from a fixed seed, so a failure reproduces; after the storm, a well-formed request or
//! command still gets its normal answer.

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::HwrmVerGetInput;
use bnxt_hsi::roce::layouts::CmdqQueryVersion;
use bnxt_model::firmware::dispatch::IMPLEMENTED;
use common::{Rig, req};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_support::Func;
use zerocopy::FromZeros;

/// Requests, commands or accesses per test by default: enough to reach every handler many times
/// over, few enough to take well under a second.
const DEFAULT_ROUNDS: usize = 1500;

/// Rounds per test: `BNXT_RANDOM_ROUNDS` for a longer search (`BNXT_RANDOM_SEED` moves every
/// test to other draws), [`DEFAULT_ROUNDS`] otherwise.
fn rounds() -> usize {
    std::env::var("BNXT_RANDOM_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_ROUNDS)
}

/// The generator of the test whose own seed is `seed`.
fn rng(seed: u64) -> ChaCha8Rng {
    let extra = std::env::var("BNXT_RANDOM_SEED").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    ChaCha8Rng::seed_from_u64(seed ^ extra.rotate_left(17))
}

/// Random bytes of length `len`.
fn bytes(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.random()).collect()
}

/// A `req_type`: mostly one the model implements, sometimes any.
fn req_type(rng: &mut ChaCha8Rng) -> u16 {
    if rng.random_bool(0.85) { IMPLEMENTED[rng.random_range(0..IMPLEMENTED.len())] } else { rng.random() }
}

#[test]
fn hwrm_requests_with_random_bodies_are_answered_and_leave_the_firmware_working() {
    let mut rig = Rig::new(1);
    let rounds = rounds();
    let mut rng = rng(0x5eed_0001);
    let mut answered = 0;
    let mut codes = std::collections::BTreeMap::new();
    for _ in 0..rounds {
        let short = rng.random_bool(0.3);
        let len = if short { rng.random_range(4..512) } else { rng.random_range(4..=128) };
        let mut b = bytes(&mut rng, len.max(16));
        b[..2].copy_from_slice(&req_type(&mut rng).to_le_bytes());
        let seq = rig.stamp(&mut b);
        if short {
            // A size that may not match the request, and now and then a wrong signature.
            let size = if rng.random_bool(0.8) { b.len() as u16 } else { rng.random() };
            let signature = if rng.random_bool(0.9) { 0x4321 } else { rng.random() };
            rig.submit_short(0, &b, size, signature);
        } else {
            rig.submit_direct(0, &b[..b.len().min(128)]);
        }
        if let Some(a) = rig.wait(0, seq, Duration::from_secs(1)) {
            answered += 1;
            *codes.entry(a.code).or_insert(0) += 1;
        }
    }
    // Requests of undefined types, bad lengths or fields are answered with an error; only a short
    // command whose signature or size the firmware cannot take has no response to write.
    assert!(answered > rounds * 3 / 4, "only {answered} of {rounds} random requests were answered");
    // The handlers ran: some random bodies pass their checks, most are refused.
    assert!(codes.get(&0).is_some_and(|&n| n > 0) && codes.len() > 2, "answers by code: {codes:?}");
    let v = rig.ok(0, req::<HwrmVerGetInput>());
    assert_eq!(v.chip_num.get(), 0x1760, "VER_GET after the random requests");
}

#[test]
fn roce_commands_with_random_bodies_are_each_completed_and_leave_the_channel_working() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 256, 256);
    f.initialize(&mut rig);
    let rounds = rounds();
    let mut rng = rng(0x5eed_0002);
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..rounds {
        // Mostly opcodes roce_hsi.h defines (0x01 to 0x99), otherwise any below 0xc0 (a
        // completion's event byte of 0xc0 and up names an asynchronous event, so a driver could
        // not tell such a command's completion apart), sizes from one slot to a few past the
        // longest command, and the response buffer mostly where the driver keeps it.
        let opcode: u8 = if rng.random_bool(0.9) { rng.random_range(1..0x9a) } else { rng.random_range(0..0xc0) };
        let slots = rng.random_range(1..=12);
        let mut b = bytes(&mut rng, slots * 16);
        b[0] = opcode;
        if rng.random_bool(0.8) {
            b[6] = rng.random_range(0..8);
            b[8..16].copy_from_slice(&f.sb.to_le_bytes());
        }
        // A quarter of the commands go as written, with a size of their own: none (0), or at
        // least the slots produced (up to past what the firmware takes), or wrapped in a TLV
        // header (bnxt_hsi.h CMD_DISCR_TLV_ENCAP) with the command from the second slot on.
        // Each is answered on its cookie; a TLV command names the inner command's opcode, one
        // with no room for a command (or whose command was not produced) the header's.
        let (cookie, answered_as) = if rng.random_bool(0.25) {
            f.cookie = f.cookie.wrapping_add(1);
            let cookie = f.cookie;
            let tlv = rng.random_bool(0.5);
            let size =
                if slots == 1 && rng.random_bool(0.5) { u8::from(tlv) } else { rng.random_range(slots..=40) as u8 };
            if tlv {
                b[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
                b[8] = size;
                if size >= 2 && slots >= 2 {
                    b[16] = opcode;
                    b[20..22].copy_from_slice(&cookie.to_le_bytes());
                } else {
                    b[4..6].copy_from_slice(&cookie.to_le_bytes());
                }
            } else {
                b[1] = size;
                b[4..6].copy_from_slice(&cookie.to_le_bytes());
            }
            f.submit(&mut rig, &b);
            (cookie, if tlv && (size < 2 || slots < 2) { 0 } else { opcode })
        } else {
            (f.send(&mut rig, b), opcode)
        };
        let c = f.wait(&mut rig, cookie);
        assert_eq!(c.event, answered_as, "the completion names the command's opcode");
        *statuses.entry(c.status).or_insert(0) += 1;
        if answered_as == 0x02 && c.status == 0 {
            // DEINITIALIZE_FW took effect.
            f.initialize(&mut rig);
        }
    }
    assert!(statuses.get(&0).is_some_and(|&n| n > 0) && statuses.len() > 2, "completions by status: {statuses:?}");
    let c = f.call(&mut rig, CmdqQueryVersion::new_zeroed());
    assert_eq!(c.status, 0, "QUERY_VERSION after the random commands");
}

#[test]
fn random_bar_accesses_and_doorbells_do_not_disturb_the_firmware() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 256, 256);
    f.initialize(&mut rig);
    let rounds = rounds();
    let mut rng = rng(0x5eed_0003);
    for _ in 0..rounds * 4 {
        // BAR2 (doorbells) most of the time, BAR4 (MSI-X) and BAR0 apart from the mailboxes,
        // whose writes would start requests and commands of their own (the tests above).
        let bar = [2u8, 2, 2, 4, 0][rng.random_range(0..5)];
        let size: u64 = match bar {
            0 => 0x1_0000,
            2 => 0x10_0000,
            _ => 0x4000,
        };
        let mut offset = rng.random_range(0..size + 64) & !3;
        if bar == 0 && offset < 0x800 {
            offset += 0x800;
        }
        let wide = rng.random_bool(0.5);
        let len = if wide { 8 } else { 4 };
        if rng.random_bool(0.7) {
            let data = bytes(&mut rng, len);
            rig.world.bar_write(0, bar, offset & !(len as u64 - 1), &data);
        } else {
            let mut data = vec![0u8; len];
            rig.world.bar_read(0, bar, offset & !(len as u64 - 1), &mut data);
        }
        if rng.random_bool(0.05) {
            rig.world.advance(Duration::from_micros(rng.random_range(1..1000)));
        }
    }
    rig.world.advance(Duration::from_secs(1));
    let c = f.call(&mut rig, CmdqQueryVersion::new_zeroed());
    assert_eq!(c.status, 0, "QUERY_VERSION after the random accesses");
    let v = rig.ok(0, req::<HwrmVerGetInput>());
    assert_eq!(v.chip_num.get(), 0x1760, "VER_GET after the random accesses");
}

#[test]
fn random_config_space_writes_leave_a_function_a_reset_brings_back() {
    let mut rig = Rig::new(1);
    let rounds = rounds();
    let mut rng = rng(0x5eed_0004);
    for _ in 0..rounds {
        let offset: u16 = rng.random_range(0..0x1000) & !3;
        let len = [1usize, 2, 4][rng.random_range(0..3)];
        let offset = offset & !(len as u16 - 1);
        if rng.random_bool(0.7) {
            let data = bytes(&mut rng, len);
            rig.world.config_write(0, offset, &data);
        } else {
            let mut data = vec![0u8; len];
            rig.world.config_read(0, offset, &mut data);
        }
    }
    // Whatever the writes did (BARs moved, memory or bus mastering off, a function-level reset),
    // the identity stays, and a driver that sets the command register again is answered.
    let mut id = [0u8; 4];
    rig.world.config_read(0, 0, &mut id);
    assert_eq!(id, [0xe4, 0x14, 0x60, 0x17], "vendor and device ids");
    let mut cmd = [0u8; 2];
    rig.world.config_read(0, 4, &mut cmd);
    let on = u16::from_le_bytes(cmd) | 0x6;
    rig.world.config_write(0, 4, &on.to_le_bytes());
    let v = rig.ok(0, req::<HwrmVerGetInput>());
    assert_eq!(v.chip_num.get(), 0x1760, "VER_GET after the random config writes");
}
