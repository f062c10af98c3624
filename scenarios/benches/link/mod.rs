//! What the end-to-end benches share: two open NICs joined by a connected queue pair, a source
//! region on the first and a destination region on the second, and a checked transfer between
//! them through our driver, whatever machine the NICs are on (the in-process model, model
//! processes over vfio-user).

use std::time::Duration;

use bnxt::{Nic, Qp, Region, Side, Status};

/// Generous: a completion that has not come in this much time (virtual on the in-process model,
/// real over vfio-user) is a failure.
pub const WAIT: Duration = Duration::from_secs(10);

/// A connected queue pair from NIC `a` to NIC `b`, with a region of `bytes` on each side, the
/// source filled with a pattern.
pub struct Link {
    pub qa: Qp,
    pub qb: Qp,
    pub src: Region,
    pub dst: Region,
}

impl Link {
    /// Make and connect the queue pairs and regions on `a` (sender) and `b` (receiver).
    pub fn between(a: &Nic, b: &Nic, bytes: usize) -> Link {
        let src = Region::host(a, bytes).expect("source region");
        let dst = Region::host(b, bytes).expect("destination region");
        let pattern: Vec<u8> = (0..bytes).map(|i| (i * 7 + i / 4096) as u8).collect();
        src.write(0, &pattern);
        let mut qa = Qp::make(a).expect("queue pair on the sending NIC");
        let mut qb = Qp::make(b).expect("queue pair on the receiving NIC");
        let (ea, eb) = (qa.endpoint(), qb.endpoint());
        qa.connect(&eb).expect("connect the sending queue pair");
        qb.connect(&ea).expect("connect the receiving queue pair");
        Link { qa, qb, src, dst }
    }

    /// Post `count` receives and sends of `len` bytes, the `i`th at `i * stride` (modulo the
    /// regions' size) on both sides, and take every completion, checking each.
    pub fn transfer(&mut self, count: usize, len: usize, stride: usize) {
        for i in 0..count {
            self.qb.receive(&self.dst, (i * stride) % self.dst.len(), len);
        }
        for i in 0..count {
            self.qa.send(&self.src, (i * stride) % self.src.len(), len);
        }
        for (qp, side) in [(&mut self.qa, Side::Send), (&mut self.qb, Side::Receive)] {
            for n in 0..count {
                let what = || format!("{side:?} completion {n} of {count} ({len} bytes each)");
                let c = qp.wait(side, WAIT).unwrap_or_else(|| panic!("{}: none within {WAIT:?}", what()));
                assert_eq!(c.status, Status::Ok, "{} failed", what());
            }
        }
    }

    /// Move `bytes` from the source's start to the destination's and check they arrived intact.
    pub fn check(&mut self, bytes: usize) {
        self.transfer(1, bytes, 0);
        assert_eq!(self.dst.read(0, bytes), self.src.read(0, bytes), "{bytes} bytes arrived changed");
    }
}
