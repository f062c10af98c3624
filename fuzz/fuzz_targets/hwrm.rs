//! HWRM requests through the BAR0 window and in short form, with structure-aware bodies: a
//! request type mostly among those the model implements, a body the fuzzer shapes, a response
//! address anywhere (inside the lent memory, in a read-only canary, unmapped), and for short
//! form the size and signature. Invariants: every request in the window with its response
//! address in lent memory is answered within bnxt_en's longest timeout; the device never writes
//! the read-only canary; afterwards HWRM_VER_GET is answered as on a fresh NIC.
#![no_main]

use std::time::Duration;

use arbitrary::Arbitrary;
use bnxt_fuzz::common::{MEM_LEN, RESP, TIMEOUT, req};
use bnxt_fuzz::snapshot::Snapshot;
use bnxt_fuzz::{One, Place, one};
use bnxt_hsi::hwrm::layouts::HwrmVerGetInput;
use bnxt_model::firmware::dispatch::IMPLEMENTED;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Form {
    /// In the BAR0 window (at most 128 bytes).
    Direct,
    /// In memory, named by a short input with this size and signature (0x4321 is the right one).
    Short { size: Option<u16>, signature: Option<u16> },
}

#[derive(Debug, Arbitrary)]
struct Request {
    /// An implemented type by index, or any.
    kind: Result<u8, u16>,
    form: Form,
    /// The response goes to RESP unless the input aims it elsewhere.
    response_at: Option<Place>,
    body: Vec<u8>,
    /// Virtual time to let pass after it, in microseconds.
    pause: u16,
}

thread_local! {
    /// One NIC, up to the point an input starts from (memory space and bus mastering on).
    static MACHINE: Snapshot<One> = Snapshot::take(MEM_LEN, one);
}

fuzz_target!(|requests: Vec<Request>| MACHINE.with(|m| m.run(|one| run(one, &requests))));

fn run(One { rig, canary }: &mut One, requests: &[Request]) {
    for r in requests.iter().take(64) {
        let req_type = match r.kind {
            Ok(i) => IMPLEMENTED[usize::from(i) % IMPLEMENTED.len()],
            Err(any) => any,
        };
        let mut bytes = r.body.clone();
        bytes.resize(bytes.len().clamp(16, 1024), 0);
        bytes[..2].copy_from_slice(&req_type.to_le_bytes());
        let seq = rig.stamp(&mut bytes);
        let aimed = r.response_at.map(Place::address);
        if let Some(at) = aimed {
            bytes[8..16].copy_from_slice(&at.to_le_bytes());
        }
        match r.form {
            Form::Direct => rig.submit_direct(0, &bytes[..bytes.len().min(128)]),
            Form::Short { size, signature } => {
                let size = size.unwrap_or(bytes.len() as u16);
                rig.submit_short(0, &bytes, size, signature.unwrap_or(0x4321));
            }
        }
        let answerable = matches!(r.form, Form::Direct) && aimed.is_none_or(|a| a == RESP);
        if answerable {
            assert!(rig.wait(0, seq, TIMEOUT).is_some(), "request {req_type:#x} in the window was not answered");
        } else {
            rig.world.advance(Duration::from_micros(u64::from(r.pause)));
        }
    }
    rig.world.advance(Duration::from_secs(1));
    canary.check();
    // Whatever came before (a reset, a function unregistered, context memory half set), the
    // firmware still answers VER_GET.
    let v = rig.ok(0, req::<HwrmVerGetInput>());
    assert_eq!(v.chip_num.get(), 0x1760);
}
