//! The floor of a 1 MiB message as 256 frames of 4 KiB: what moving its bytes costs with nothing
//! but the copies and the ICRC, the bound every message figure is measured against.

use std::hint::black_box;

use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::icrc;
use bnxt_model::net::roce::{EXT_OFFSET, IPV4_OFFSET, Path, Transport, build_frame};
use bnxt_model::net::{MacAddr, Opcode};

/// The least a message of `src.len()` bytes (a multiple of 4 KiB) can cost as frames of 4 KiB
/// without headers, checks, switch or transport: each page copied from `src` into a frame, the
/// frame's ICRC computed `passes` times (sender, and receiver unless sealed), the page copied
/// out of the frame into `dst`.
pub fn floor<'a>(src: &'a [u8], dst: &'a mut [u8], passes: usize) -> impl FnMut() + 'a {
    let path = Path::between(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]), 0x10);
    let send = Transport::bth(BthRepr::new(Opcode::SendMiddle, 0x10, 1));
    let mut frame = Vec::with_capacity(4200);
    build_frame(&path, &send, &src[..4096], &mut frame).expect("a 4 KiB SEND frame builds");
    let payload = EXT_OFFSET..EXT_OFFSET + 4096;
    move || {
        for (from, to) in src.chunks(4096).zip(dst.chunks_mut(4096)) {
            frame[payload.clone()].copy_from_slice(from);
            for _ in 0..passes {
                let n = frame.len() - 4;
                black_box(icrc::compute(&frame[IPV4_OFFSET..n]).expect("the frame has its headers"));
            }
            to.copy_from_slice(&frame[payload.clone()]);
        }
        black_box(&mut *dst);
    }
}
