//! Throughput of RoCE v2 framing: build (headers, one payload copy, ICRC) and parse (checks and
//! ICRC) of 4 KiB-payload frames, a 1 MiB message moved as 256 such frames through the switch,
//! and 64-byte frames, each against the same machine's single-core memcpy bandwidth.
//!
//! `cargo bench -p bnxt-model --bench net_frames` (optionally `-- <seconds per figure>` and
//! words to select figures: `memcpy`, `build`, `icrc`, `parse`, `message`, `small`).
//!
//! One run on a 2-core AMD EPYC VM (shared with other builds, so expect noise):
//!
//! ```text
//! memcpy 1 MiB (single core)                  59.22 GB/s
//! build 4 KiB frame (copy + ICRC)             27.01 GB/s  0.46 of memcpy
//! ICRC of a 4 KiB frame                       42.30 GB/s  0.71 of memcpy
//! parse 4 KiB frame (checks + ICRC)           33.65 GB/s  0.57 of memcpy
//! 1 MiB message: build, switch, parse, copy    8.03 GB/s  0.14 of memcpy
//!   the same, each frame received at once      8.71 GB/s  0.15 of memcpy
//! 64-byte frame build + parse                  8.52 M frames/s
//! ```
//!
//! A message costs two copies (source to frame, frame to destination) and two ICRC passes
//! (sender and receiver) per byte; the profile is about half copies and a third CRC, with the
//! switch, header code and allocation in the rest.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::icrc;
use bnxt_model::net::roce::{IPV4_OFFSET, Path, Transport, build_frame};
use bnxt_model::net::switch::{LinkTiming, Switch};
use bnxt_model::net::{MacAddr, Opcode, RoceFrame};

/// Run `f` (which handles `bytes` bytes a call) repeatedly for about `secs`; bytes per second.
fn rate(secs: f64, bytes: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        for _ in 0..16 {
            f();
        }
        calls += 16;
    }
    (calls as f64 * bytes as f64) / start.elapsed().as_secs_f64()
}

fn gb(x: f64) -> String {
    format!("{:6.2} GB/s", x / 1e9)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let secs: f64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(1.0);
    let words: Vec<&String> = args.iter().filter(|a| a.parse::<f64>().is_err()).collect();
    let want = |name: &str| words.is_empty() || words.iter().any(|w| *w == name);
    let path = Path::between(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]), 0x10);
    let mib = 1 << 20;
    let src: Vec<u8> = (0..mib).map(|i| (i * 13) as u8).collect();
    let mut dst = vec![0u8; mib];

    // Always measured: the other figures are ratios to it.
    let memcpy = rate(secs, mib, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&dst);
    });
    println!("memcpy 1 MiB (single core)                 {}", gb(memcpy));

    let page = &src[..4096];
    let send = Transport::bth(BthRepr::new(Opcode::SendMiddle, 0x10, 1));
    let mut frame = Vec::with_capacity(4200);
    build_frame(&path, &send, page, &mut frame).unwrap();
    if want("build") {
        let build = rate(secs, 4096, || {
            build_frame(&path, &send, black_box(page), &mut frame).unwrap();
            black_box(&frame);
        });
        println!("build 4 KiB frame (copy + ICRC)            {}  {:.2} of memcpy", gb(build), build / memcpy);
    }
    if want("icrc") {
        let ip_end = frame.len();
        let icrc_only = rate(secs, 4096, || {
            black_box(icrc::compute(black_box(&frame[IPV4_OFFSET..ip_end - 4])).unwrap());
        });
        println!("ICRC of a 4 KiB frame                      {}  {:.2} of memcpy", gb(icrc_only), icrc_only / memcpy);
    }
    if want("parse") {
        let parse = rate(secs, 4096, || {
            let f = RoceFrame::parse(black_box(&frame)).unwrap();
            black_box(f.payload.len());
        });
        println!("parse 4 KiB frame (checks + ICRC)          {}  {:.2} of memcpy", gb(parse), parse / memcpy);
    }
    if want("message") {
        let moved = rate(secs, mib, message(&path, &src, &mut dst, false));
        println!("1 MiB message: build, switch, parse, copy  {}  {:.2} of memcpy", gb(moved), moved / memcpy);
        let moved = rate(secs, mib, message(&path, &src, &mut dst, true));
        println!("  the same, each frame received at once    {}  {:.2} of memcpy", gb(moved), moved / memcpy);
    }
    if want("small") {
        let small = &src[..64];
        let only = Transport::bth(BthRepr::new(Opcode::SendOnly, 0x10, 1));
        let mut out = Vec::with_capacity(128);
        let per_msg = rate(secs, 1, || {
            build_frame(&path, &only, black_box(small), &mut out).unwrap();
            let f = RoceFrame::parse(&out).unwrap();
            black_box(f.payload.len());
        });
        println!("64-byte frame build + parse                {:6.2} M frames/s", per_msg / 1e6);
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
    let mut receive = move |sw: &mut Switch, now: Duration, pool: &mut Vec<Vec<u8>>| {
        for d in sw.poll(now) {
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
