//! Throughput of the RC transport between two QPs on two NICs through the model's switch: 1 MiB
//! SENDs (segmented, built with the payload gathered straight into the frame, ICRC computed,
//! switched, parsed with the ICRC checked, scattered straight from the frame, ACKed), as a ratio
//! of the same machine's single-core memcpy bandwidth measured in the same run, and the message
//! rate of 64-byte SENDs.
//!
//! `cargo bench -p bnxt-model --bench transport` (optionally `-- <seconds per figure>` and words
//! to select figures: `big`, `small`). Figures from one run are in the report of the change that
//! added this file and in `docs/` once the engine is wired to the NICs.
//!
//! Each frame is received right after it is sent (the switch has no latency here), so the
//! receiver checks the ICRC and scatters a payload that is still in cache, as an executor that
//! delivers frames as they are produced would.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bnxt_model::net::switch::{LinkTiming, PortId, Switch};
use bnxt_model::net::{MacAddr, Path, RoceFrame};
use bnxt_model::roce::transport::{
    AccessError, Memory, Mtu, QpAttrs, RcQp, RecvWqe, RemoteAccess, SendOp, SendWqe, Sge,
};

/// Regions as plain byte vectors at address 0; the key is the index.
struct Regions(Vec<Vec<u8>>);

impl Regions {
    fn get(&mut self, key: u32, addr: u64, len: usize) -> Result<&mut [u8], AccessError> {
        let r = self
            .0
            .get_mut(key as usize)
            .ok_or(AccessError::InvalidKey { key })?;
        let at = addr as usize;
        r.get_mut(at..at + len).ok_or(AccessError::OutOfBounds {
            key,
            addr,
            len: len as u64,
        })
    }
}

impl Memory for Regions {
    fn gather(&mut self, sge: &Sge, offset: u32, dst: &mut [u8]) -> Result<(), AccessError> {
        let n = dst.len();
        dst.copy_from_slice(self.get(sge.lkey, sge.addr + u64::from(offset), n)?);
        Ok(())
    }
    fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError> {
        self.get(sge.lkey, sge.addr + u64::from(offset), src.len())?
            .copy_from_slice(src);
        Ok(())
    }
    fn check_remote(
        &mut self,
        rkey: u32,
        va: u64,
        len: u32,
        _: RemoteAccess,
    ) -> Result<(), AccessError> {
        self.get(rkey, va, len as usize).map(|_| ())
    }
    fn remote_read(&mut self, rkey: u32, va: u64, dst: &mut [u8]) -> Result<(), AccessError> {
        let n = dst.len();
        dst.copy_from_slice(self.get(rkey, va, n)?);
        Ok(())
    }
    fn remote_write(&mut self, rkey: u32, va: u64, src: &[u8]) -> Result<(), AccessError> {
        self.get(rkey, va, src.len())?.copy_from_slice(src);
        Ok(())
    }
}

struct Nic {
    port: PortId,
    qp: RcQp,
    mem: Regions,
}

/// Two NICs with one QP each, connected, on a switch without latency.
struct Segment {
    sw: Switch,
    nics: Vec<Nic>,
    pool: Vec<Vec<u8>>,
    now: Duration,
}

impl Segment {
    fn new(region: usize) -> Segment {
        let mut sw = Switch::new(LinkTiming {
            latency: Duration::ZERO,
            bits_per_second: 0,
        });
        let macs = [MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2])];
        let qpns = [0x11, 0x22];
        let nics = (0..2)
            .map(|i| {
                let attrs = QpAttrs {
                    qpn: qpns[i],
                    dest_qpn: qpns[1 - i],
                    path: Path::between(macs[i], macs[1 - i], qpns[1 - i]),
                    mtu: Mtu::Mtu4096,
                    sq_psn: 0,
                    rq_psn: 0,
                    timeout: 14,
                    retry_cnt: 7,
                    rnr_retry: 7,
                    min_rnr_timer: 1,
                    max_rd_atomic: 16,
                    max_dest_rd_atomic: 16,
                    access: RemoteAccess::ALL,
                };
                let src: Vec<u8> = (0..region).map(|j| (j * 13 + i) as u8).collect();
                Nic {
                    port: sw.add_port(),
                    qp: RcQp::new(attrs).unwrap(),
                    mem: Regions(vec![src, vec![0; region]]),
                }
            })
            .collect();
        let mut seg = Segment {
            sw,
            nics,
            pool: Vec::new(),
            now: Duration::ZERO,
        };
        // Let the switch learn both MACs.
        for (i, mac) in macs.iter().enumerate() {
            let mut hello = vec![0u8; 60];
            hello[..6].copy_from_slice(&MacAddr::BROADCAST.0);
            hello[6..12].copy_from_slice(&mac.0);
            hello[12..14].copy_from_slice(&[0x88, 0xb5]);
            let port = seg.nics[i].port;
            seg.sw.send(Duration::ZERO, port, hello).unwrap();
        }
        seg.sw.poll(Duration::ZERO);
        seg
    }

    /// Send everything there is to send, each frame received as soon as it is sent, until
    /// neither QP has anything to send.
    fn run(&mut self) {
        loop {
            let mut busy = false;
            for i in 0..2 {
                loop {
                    let mut buf = self.pool.pop().unwrap_or_else(|| Vec::with_capacity(4200));
                    let nic = &mut self.nics[i];
                    if !nic.qp.poll_transmit(self.now, &mut nic.mem, &mut buf) {
                        self.pool.push(buf);
                        break;
                    }
                    busy = true;
                    self.sw.send(self.now, nic.port, buf).unwrap();
                    for d in self.sw.poll(self.now) {
                        let to = if d.port == self.nics[0].port { 0 } else { 1 };
                        let frame = RoceFrame::parse(&d.frame).expect("no faults on this segment");
                        let nic = &mut self.nics[to];
                        nic.qp.handle_frame(self.now, &frame, &mut nic.mem);
                        self.pool.push(d.frame);
                    }
                }
            }
            if !busy {
                return;
            }
        }
    }
}

/// Run `f` (which moves `units` a call) repeatedly for about `secs`; units per second.
fn rate(secs: f64, units: f64, mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        f();
        calls += 1;
    }
    calls as f64 * units / start.elapsed().as_secs_f64()
}

fn send_wqe(id: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: SendOp::Send { imm: None },
        sges: vec![Sge {
            addr: 0,
            lkey: 0,
            len,
        }],
        length: len,
        signaled: true,
        solicited: false,
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let secs: f64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(2.0);
    let words: Vec<&String> = args.iter().filter(|a| a.parse::<f64>().is_err()).collect();
    let want = |name: &str| words.is_empty() || words.iter().any(|w| *w == name);
    let mib = 1usize << 20;

    let src: Vec<u8> = (0..mib).map(|i| (i * 7) as u8).collect();
    let mut dst = vec![0u8; mib];
    let memcpy = rate(secs, mib as f64, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&dst);
    });
    println!(
        "memcpy 1 MiB (single core)              {:7.2} GB/s",
        memcpy / 1e9
    );

    if want("big") {
        let mut seg = Segment::new(mib);
        let mut id = 0u64;
        let big = rate(secs, mib as f64, || {
            id += 1;
            seg.nics[1].qp.post_recv(RecvWqe {
                id,
                sges: vec![Sge {
                    addr: 0,
                    lkey: 1,
                    len: mib as u32,
                }],
            });
            seg.nics[0].qp.post_send(send_wqe(id, mib as u32));
            seg.run();
            let s = seg.nics[0]
                .qp
                .pop_send_completion()
                .expect("send completed");
            let r = seg.nics[1]
                .qp
                .pop_recv_completion()
                .expect("receive completed");
            assert!(s.status.is_ok() && r.status.is_ok() && r.bytes == mib as u32);
        });
        assert!(
            seg.nics[1].mem.0[1] == seg.nics[0].mem.0[0],
            "the bytes arrived"
        );
        println!(
            "1 MiB SEND, QP to QP over the switch    {:7.2} GB/s  {:.2} of memcpy",
            big / 1e9,
            big / memcpy
        );
    }

    if want("small") {
        let mut seg = Segment::new(1 << 16);
        let batch = 256u64;
        let mut id = 0u64;
        let small = rate(secs, batch as f64, || {
            for k in 0..batch {
                let at = (k % 1024) * 64;
                seg.nics[1].qp.post_recv(RecvWqe {
                    id: id + k,
                    sges: vec![Sge {
                        addr: at,
                        lkey: 1,
                        len: 64,
                    }],
                });
                let mut w = send_wqe(id + k, 64);
                w.sges[0].addr = at;
                seg.nics[0].qp.post_send(w);
            }
            seg.run();
            for _ in 0..batch {
                let s = seg.nics[0]
                    .qp
                    .pop_send_completion()
                    .expect("send completed");
                let r = seg.nics[1]
                    .qp
                    .pop_recv_completion()
                    .expect("receive completed");
                assert!(s.status.is_ok() && r.status.is_ok() && r.bytes == 64);
            }
            id += batch;
        });
        println!(
            "64-byte SENDs, QP to QP over the switch {:7.2} M messages/s (batches of {batch})",
            small / 1e6
        );
    }
}
