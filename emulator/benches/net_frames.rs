//! Throughput of RoCE v2 framing: build (headers, one payload copy, ICRC) and parse (checks and
//! ICRC) of 4 KiB-payload frames, a 1 MiB message moved as 256 such frames through the switch,
//! and 64-byte frames, each against the same machine's single-core memcpy bandwidth.
//!
//! `cargo bench -p bnxt-model --bench net_frames` (optionally `-- <seconds per figure> [<trials>]`
//! and words to select figures: `build`, `icrc`, `parse`, `message` (or just `at-once`), `floor`, `small`; memcpy is always
//! measured). Each figure is the best of its trials, interleaved with the memcpy trials (see
//! `support`). Figures from runs, and what costs what, are in `docs/performance.md`.
//!
//! A message costs two copies (source to frame, frame to destination) and two ICRC passes
//! (sender and receiver) per byte, plus per-frame work: headers, checks, the switch.

mod floor;
mod support;

use std::hint::black_box;
use std::time::Duration;

use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::icrc;
use bnxt_model::net::roce::{IPV4_OFFSET, Path, Transport, build_frame, build_frame_with};
use bnxt_model::net::switch::{Delivery, LinkTiming, Switch};
use bnxt_model::net::{MacAddr, Opcode, RoceFrame, WireError};
use floor::floor;
use support::{Args, Figure, measure, memcpy_figure};

fn main() {
    let args = Args::parse(1.0);
    let path = Path::between(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]), 0x10);
    let mib = 1 << 20;
    let src: Vec<u8> = (0..mib).map(|i| (i * 13) as u8).collect();
    let mut dst = vec![0u8; mib];
    let [mut dst2, mut dst3, mut dst4, mut dst5, mut dst6] = std::array::from_fn(|_| vec![0u8; mib]);
    let page = &src[..4096];
    let send = Transport::bth(BthRepr::new(Opcode::SendMiddle, 0x10, 1));
    let mut frame = Vec::with_capacity(4200);
    build_frame(&path, &send, page, &mut frame).unwrap();
    let mut figures = vec![memcpy_figure(&src, &mut dst)];

    if args.want("build") {
        let mut out = Vec::with_capacity(4200);
        figures.push(Figure::new("build 4 KiB frame (copy + ICRC)", 4096.0, move || {
            build_frame(&path, &send, black_box(page), &mut out).unwrap();
            black_box(&out);
        }));
        let mut out = Vec::with_capacity(4200);
        figures.push(Figure::new("  the same, payload zeroed first", 4096.0, move || {
            build_frame_with::<WireError>(&path, &send, 4096, &mut out, |d| {
                d.copy_from_slice(black_box(page));
                Ok(())
            })
            .unwrap();
            black_box(&out);
        }));
    }
    if args.want("icrc") {
        let f = &frame;
        figures.push(Figure::new("ICRC of a 4 KiB frame", 4096.0, move || {
            black_box(icrc::compute(black_box(&f[IPV4_OFFSET..f.len() - 4])).unwrap());
        }));
        figures.push(Figure::new("crc32fast over 4 KiB", 4096.0, move || {
            black_box(crc32fast::hash(black_box(page)));
        }));
    }
    if args.want("parse") {
        let f = &frame;
        figures.push(Figure::new("parse 4 KiB frame (checks + ICRC)", 4096.0, move || {
            let p = RoceFrame::parse(black_box(f)).unwrap();
            black_box(p.payload.len());
        }));
    }
    if args.want("message") {
        figures.push(Figure::new(
            "1 MiB message: build, switch, parse, copy",
            mib as f64,
            message(&path, &src, &mut dst2, false),
        ));
    }
    if args.want("message") || args.want("at-once") {
        figures.push(Figure::new(
            "  the same, each frame received at once",
            mib as f64,
            message(&path, &src, &mut dst3, true),
        ));
    }
    if args.want("floor") {
        figures.push(Figure::new("floor: copy in, ICRC, ICRC, copy out", mib as f64, floor(&src, &mut dst4, 2)));
        figures.push(Figure::new("floor: copy in, ICRC, copy out", mib as f64, floor(&src, &mut dst5, 1)));
        figures.push(Figure::new("  copy in and CRC interleaved by 1 KiB", mib as f64, interleaved(&src, &mut dst6)));
    }
    if args.want("small") {
        let small = &src[..64];
        let only = Transport::bth(BthRepr::new(Opcode::SendOnly, 0x10, 1));
        let mut out = Vec::with_capacity(128);
        figures.push(Figure::new("64-byte frame build + parse", 1.0, move || {
            build_frame(&path, &only, black_box(small), &mut out).unwrap();
            let f = RoceFrame::parse(&out).unwrap();
            black_box(f.payload.len());
        }));
    }

    measure(&args, &mut figures);
    let memcpy = figures[0].best;
    println!("{:<44} {:6.2} GB/s", figures[0].name, memcpy / 1e9);
    for f in &figures[1..] {
        if f.name.starts_with("64-byte") {
            println!("{:<44} {:6.2} M frames/s", f.name, f.best / 1e6);
        } else {
            println!("{:<44} {:6.2} GB/s  {:.2} of memcpy", f.name, f.best / 1e9, f.best / memcpy);
        }
    }
}

/// As `floor(.., 1)`, with the copy into the frame and the CRC interleaved a kilobyte at a time
/// (each piece checksummed while it is freshest), the CRC streamed over the pieces.
fn interleaved<'a>(src: &'a [u8], dst: &'a mut [u8]) -> impl FnMut() + 'a {
    let mut frame = vec![0u8; 4096];
    move || {
        for (from, to) in src.chunks(4096).zip(dst.chunks_mut(4096)) {
            let mut crc = crc32fast::Hasher::new();
            for (piece, part) in frame.chunks_mut(1024).zip(from.chunks(1024)) {
                piece.copy_from_slice(part);
                crc.update(piece);
            }
            black_box(crc.finalize());
            to.copy_from_slice(&frame);
        }
        black_box(&mut *dst);
    }
}

/// A 1 MiB message end to end: 256 frames built from `src`, through the switch, parsed, and
/// their payload copied into `dst`; all frames sent before any is received, or (`at_once`, with
/// no latency) each received right after it is sent, while it is still in cache.
fn message<'a>(path: &'a Path, src: &'a [u8], dst: &'a mut [u8], at_once: bool) -> impl FnMut() + 'a {
    let timing =
        if at_once { LinkTiming { latency: Duration::ZERO, bits_per_second: 0 } } else { LinkTiming::default() };
    let mut sw = Switch::new(timing);
    let (a, b) = (sw.add_port(), sw.add_port());
    let mut now = Duration::ZERO;
    let mut psn = 0u32;
    // Frame buffers go back to the sender once parsed, as the engine should recycle them: fresh
    // allocations of a megabyte per message cost page faults each time.
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut deliveries: Vec<Delivery> = Vec::new();
    let mut receive = move |sw: &mut Switch, now: Duration, pool: &mut Vec<Vec<u8>>| {
        sw.poll_into(now, &mut deliveries);
        for d in deliveries.drain(..) {
            if d.port != b {
                continue;
            }
            let f = RoceFrame::parse(&d.frame).unwrap();
            let at = (f.transport.bth.psn as usize % 256) * 4096;
            dst[at..at + f.payload.len()].copy_from_slice(f.payload);
            pool.push(d.frame);
        }
        black_box(&dst);
    };
    move || {
        for (i, chunk) in src.chunks(4096).enumerate() {
            let op = match i {
                0 => Opcode::SendFirst,
                255 => Opcode::SendLast,
                _ => Opcode::SendMiddle,
            };
            let mut f = pool.pop().unwrap_or_else(|| Vec::with_capacity(4200));
            build_frame(path, &Transport::bth(BthRepr::new(op, 0x10, psn)), chunk, &mut f).unwrap();
            psn = psn.wrapping_add(1);
            sw.send(now, a, f).unwrap();
            if at_once {
                receive(&mut sw, now, &mut pool);
            }
        }
        now += Duration::from_millis(1);
        receive(&mut sw, now, &mut pool);
    }
}
