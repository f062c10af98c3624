//! Throughput of the RC transport between two QPs on two NICs through the model's switch: 1 MiB
//! SENDs (segmented, built with the payload gathered straight into the frame, ICRC computed,
//! switched, parsed with the ICRC checked, scattered straight from the frame, ACKed), as a ratio
//! of the same machine's single-core memcpy bandwidth measured in the same run, and the message
//! rate of 64-byte SENDs.
//!
//! `cargo bench -p bnxt-model --bench transport` (optionally `-- <seconds per figure> [<trials>]`
//! and words to select figures: `big`, `sealed`, `small`, `small-sealed`). Each figure is the best of its
//! trials, which are interleaved with the memcpy trials (see `support`). Figures and what costs
//! what are in `docs/performance.md`.
//!
//! `sealed` is the same 1 MiB transfer through the sealed-frame API (`poll_transmit_sealed`,
//! `send_sealed`, `poll_wire_into`, `parse_wire`): the segment has no faults, so the receiver
//! does not compute again the ICRC the sender computed (see `bnxt_model::net::sealed`); every
//! other check, copy and header is the same.
//!
//! Each frame is received right after it is sent (the switch has no latency here), so the
//! receiver checks the ICRC and scatters a payload that is still in cache, as an executor that
//! delivers frames as they are produced would.

mod support;

use std::time::Duration;

use support::{Args, Figure, measure, memcpy_figure};

use bnxt_model::net::switch::{LinkTiming, PortId, Switch, WireDelivery};
use bnxt_model::net::{MacAddr, Path, RoceFrame};
use bnxt_model::roce::transport::{
    AccessError, Memory, Mtu, QpAttrs, RcQp, RecvWqe, RemoteAccess, SendOp, SendWqe, Sge,
};

/// Regions as plain byte vectors at address 0; the key is the index.
struct Regions(Vec<Vec<u8>>);

impl Regions {
    fn get(&mut self, key: u32, addr: u64, len: usize) -> Result<&mut [u8], AccessError> {
        let r = self.0.get_mut(key as usize).ok_or(AccessError::InvalidKey { key })?;
        let at = addr as usize;
        r.get_mut(at..at + len).ok_or(AccessError::OutOfBounds { key, addr, len: len as u64 })
    }
}

impl Memory for Regions {
    fn gather(&mut self, sge: &Sge, offset: u32, dst: &mut [u8]) -> Result<(), AccessError> {
        let n = dst.len();
        dst.copy_from_slice(self.get(sge.lkey, sge.addr + u64::from(offset), n)?);
        Ok(())
    }
    fn scatter(&mut self, sge: &Sge, offset: u32, src: &[u8]) -> Result<(), AccessError> {
        self.get(sge.lkey, sge.addr + u64::from(offset), src.len())?.copy_from_slice(src);
        Ok(())
    }
    fn check_remote(&mut self, rkey: u32, va: u64, len: u32, _: RemoteAccess) -> Result<(), AccessError> {
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
    deliveries: Vec<WireDelivery>,
    now: Duration,
    /// Frames go sealed (the receiver trusts the ICRC of a frame built in this process that
    /// nothing changed) instead of plain (the receiver computes it again).
    sealed: bool,
}

impl Segment {
    fn new(region: usize, sealed: bool) -> Segment {
        let mut sw = Switch::new(LinkTiming { latency: Duration::ZERO, bits_per_second: 0 });
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
                Nic { port: sw.add_port(), qp: RcQp::new(attrs).unwrap(), mem: Regions(vec![src, vec![0; region]]) }
            })
            .collect();
        let mut seg = Segment { sw, nics, pool: Vec::new(), deliveries: Vec::new(), now: Duration::ZERO, sealed };
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
                    if self.sealed {
                        let Some(frame) = nic.qp.poll_transmit_sealed(self.now, &mut nic.mem, &mut buf) else {
                            self.pool.push(buf);
                            break;
                        };
                        self.sw.send_sealed(self.now, nic.port, frame).unwrap();
                    } else {
                        if !nic.qp.poll_transmit(self.now, &mut nic.mem, &mut buf) {
                            self.pool.push(buf);
                            break;
                        }
                        self.sw.send(self.now, nic.port, buf).unwrap();
                    }
                    busy = true;
                    self.sw.poll_wire_into(self.now, &mut self.deliveries);
                    for d in self.deliveries.drain(..) {
                        let to = if d.port == self.nics[0].port { 0 } else { 1 };
                        let frame = RoceFrame::parse_wire(&d.frame).expect("no faults on this segment");
                        let nic = &mut self.nics[to];
                        nic.qp.handle_frame(self.now, &frame, &mut nic.mem);
                        self.pool.push(d.frame.into_vec());
                    }
                }
            }
            if !busy {
                return;
            }
        }
    }
}

fn send_wqe(id: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: SendOp::Send { imm: None },
        sges: smallvec::smallvec![Sge { addr: 0, lkey: 0, len }],
        length: len,
        signaled: true,
        solicited: false,
    }
}

impl Segment {
    /// A receive of `len` bytes at `at` on NIC 1 and a send of as many from `at` on NIC 0.
    fn post(&mut self, id: u64, at: u64, len: u32) {
        let sges: bnxt_model::roce::transport::SgeList = smallvec::smallvec![Sge { addr: at, lkey: 1, len }];
        self.nics[1].qp.post_recv(RecvWqe { id, sges });
        let mut w = send_wqe(id, len);
        w.sges[0].addr = at;
        self.nics[0].qp.post_send(w);
    }

    /// Take the completions of one message of `len` bytes on each side, all good.
    fn complete(&mut self, len: u32) {
        let s = self.nics[0].qp.pop_send_completion().expect("send completed");
        let r = self.nics[1].qp.pop_recv_completion().expect("receive completed");
        assert!(s.status.is_ok() && r.status.is_ok() && r.bytes == len);
    }
}

/// 1 MiB SENDs from NIC 0 to NIC 1, one a call, sealed or not.
fn big(mib: usize, sealed: bool) -> impl FnMut() {
    let mut seg = Segment::new(mib, sealed);
    let mut id = 0u64;
    move || {
        id += 1;
        seg.post(id, 0, mib as u32);
        seg.run();
        seg.complete(mib as u32);
        // Every byte on the first call (a warm-up call), a sample after that.
        let n = if id == 1 { mib } else { 64 };
        assert!(seg.nics[1].mem.0[1][..n] == seg.nics[0].mem.0[0][..n], "the bytes arrived");
    }
}

/// `batch` 64-byte SENDs from NIC 0 to NIC 1 a call, sealed or not.
fn small(batch: u64, sealed: bool) -> impl FnMut() {
    let mut seg = Segment::new(1 << 16, sealed);
    let mut id = 0u64;
    move || {
        for k in 0..batch {
            seg.post(id + k, (k % 1024) * 64, 64);
        }
        seg.run();
        for _ in 0..batch {
            seg.complete(64);
        }
        id += batch;
    }
}

fn main() {
    let args = Args::parse(2.0);
    let mib = 1usize << 20;
    let src: Vec<u8> = (0..mib).map(|i| (i * 7) as u8).collect();
    let mut dst = vec![0u8; mib];
    let mut figures = vec![memcpy_figure(&src, &mut dst)];
    let batch = 256u64;
    if args.want("big") {
        figures.push(Figure::new("1 MiB SEND, QP to QP over the switch", mib as f64, big(mib, false)));
    }
    if args.want("sealed") {
        figures.push(Figure::new("  the same, sealed (one ICRC pass, not two)", mib as f64, big(mib, true)));
    }
    if args.want("small") {
        figures.push(Figure::new("64-byte SENDs, QP to QP over the switch", batch as f64, small(batch, false)));
    }
    if args.want("small-sealed") {
        figures.push(Figure::new("64-byte SENDs, sealed", batch as f64, small(batch, true)));
    }

    measure(&args, &mut figures);
    let memcpy = figures[0].best;
    println!("{:<48} {:7.2} GB/s", figures[0].name, memcpy / 1e9);
    for f in &figures[1..] {
        if f.name.starts_with("64-byte") {
            println!("{:<48} {:7.2} M messages/s (batches of {batch})", f.name, f.best / 1e6);
        } else {
            println!("{:<48} {:7.2} GB/s  {:.2} of memcpy", f.name, f.best / 1e9, f.best / memcpy);
        }
    }
}
