//! What a reliable-connected QP is told at MODIFY_QP (INIT→RTR→RTS) that its transport uses, and
//! the transport's own limits.
//!
//! The attributes are those of IBA Vol 1 §11.2.4.2 (Modify QP) for an RC QP, with the encodings
//! the IBA gives them: path MTU as the IB MTU enumeration (1 = 256 … 5 = 4096; Linux
//! include/rdma/ib_verbs.h `enum ib_mtu`), the local ACK timeout as 4.096 µs × 2^timeout with 0
//! meaning infinite (§9.7.6.1.3; rdma_rxe rxe_qp.c `rxe_qp_from_attr`: `4096 << timeout` ns), the
//! retry and RNR retry counts as 3-bit values with an RNR retry count of 7 meaning "retry for
//! ever" (§9.7.5.2.8), and the minimum RNR NAK timer as the 5-bit code of the RNR NAK timer table
//! (§9.7.5.2.8; [`rnr_timer_delay`]).

use std::time::Duration;

use crate::net::roce::Path;

pub use crate::net::ext::rnr_timer_delay;

/// A path MTU: the payload bytes of a full packet. Every packet of a message but the last carries
/// exactly this many (rdma_rxe rxe_resp.c `check_length` refuses First and Middle packets of
/// another size), the last 1 to this many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mtu {
    /// 256 bytes (IB MTU code 1).
    Mtu256,
    /// 512 bytes (code 2).
    Mtu512,
    /// 1024 bytes (code 3).
    Mtu1024,
    /// 2048 bytes (code 4).
    Mtu2048,
    /// 4096 bytes (code 5), the fabric's MTU in the seed contract.
    Mtu4096,
}

impl Mtu {
    /// Payload bytes of a full packet.
    pub fn bytes(self) -> u32 {
        match self {
            Mtu::Mtu256 => 256,
            Mtu::Mtu512 => 512,
            Mtu::Mtu1024 => 1024,
            Mtu::Mtu2048 => 2048,
            Mtu::Mtu4096 => 4096,
        }
    }

    /// The MTU of `bytes` (256, 512, 1024, 2048 or 4096).
    pub fn from_bytes(bytes: u32) -> Option<Mtu> {
        Some(match bytes {
            256 => Mtu::Mtu256,
            512 => Mtu::Mtu512,
            1024 => Mtu::Mtu1024,
            2048 => Mtu::Mtu2048,
            4096 => Mtu::Mtu4096,
            _ => return None,
        })
    }

    /// The MTU of an IB MTU code (1-5; Linux `enum ib_mtu`).
    pub fn from_code(code: u8) -> Option<Mtu> {
        Some(match code {
            1 => Mtu::Mtu256,
            2 => Mtu::Mtu512,
            3 => Mtu::Mtu1024,
            4 => Mtu::Mtu2048,
            5 => Mtu::Mtu4096,
            _ => return None,
        })
    }

    /// Packets a message of `len` bytes takes (at least one: a zero-length message is one
    /// packet without payload).
    pub fn packets(self, len: u32) -> u32 {
        len.div_ceil(self.bytes()).max(1)
    }
}

/// Remote operations a QP's responder allows (IBA §11.2.4.2 "Remote Access Flags"; rdma_rxe
/// rxe_resp.c `check_op_valid` refuses the others with an invalid-request NAK).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RemoteAccess {
    /// RDMA READ requests may be executed.
    pub read: bool,
    /// RDMA WRITE requests may be executed.
    pub write: bool,
    /// Atomic requests (CmpSwap, FetchAdd) may be executed.
    pub atomic: bool,
}

impl RemoteAccess {
    /// Reads, writes and atomics.
    pub const ALL: RemoteAccess = RemoteAccess { read: true, write: true, atomic: true };
}

/// The transport attributes of one RC QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAttrs {
    /// This QP's number (24 bits); request packets must carry it as their destination QP.
    pub qpn: u32,
    /// The connected peer QP's number (24 bits).
    pub dest_qpn: u32,
    /// Addresses and UDP source port of every frame this QP sends.
    pub path: Path,
    /// Path MTU.
    pub mtu: Mtu,
    /// PSN of the first request packet this QP sends (SQ PSN, set at RTS).
    pub sq_psn: u32,
    /// PSN this QP expects of the first request it receives (RQ PSN, set at RTR).
    pub rq_psn: u32,
    /// Local ACK timeout code (0-31): 4.096 µs × 2^timeout, 0 = never time out.
    pub timeout: u8,
    /// Transport retries (0-7) after a timeout or a PSN sequence error NAK, before the request
    /// fails with retry-exceeded.
    pub retry_cnt: u8,
    /// Retries (0-7) after an RNR NAK before the request fails with rnr-retry-exceeded; 7 means
    /// retry for ever.
    pub rnr_retry: u8,
    /// RNR NAK timer code (0-31) this QP's responder puts in its RNR NAKs.
    pub min_rnr_timer: u8,
    /// RDMA READs this QP may have outstanding as a requester (initiator depth).
    pub max_rd_atomic: u8,
    /// RDMA READs this QP keeps responder resources for (responder depth): how many of the
    /// latest READs a duplicate request can still replay.
    pub max_dest_rd_atomic: u8,
    /// Remote operations this QP's responder allows.
    pub access: RemoteAccess,
}

/// An RNR retry count that never runs out (IBA §9.7.5.2.8).
pub const RNR_RETRY_INFINITE: u8 = 7;

/// The local ACK timeout of code `timeout` (0-31): 4.096 µs × 2^timeout, or `None` for 0
/// (infinite).
pub fn local_ack_timeout(timeout: u8) -> Option<Duration> {
    (timeout != 0).then(|| Duration::from_nanos(4096u64 << timeout.min(31)))
}

/// An attribute outside its encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttrError {
    /// A field wider than its encoding allows.
    #[error("QP attribute {field} is {value}, more than its largest value {max}")]
    TooLarge {
        /// Attribute name.
        field: &'static str,
        /// Value given.
        value: u64,
        /// Largest value allowed.
        max: u64,
    },
    /// A transport limit of zero.
    #[error("transport limit {field} must be at least 1")]
    ZeroLimit {
        /// Limit name.
        field: &'static str,
    },
}

impl QpAttrs {
    /// Check every field against its encoding.
    pub fn validate(&self) -> Result<(), AttrError> {
        let check = |field, value: u64, max: u64| {
            if value > max { Err(AttrError::TooLarge { field, value, max }) } else { Ok(()) }
        };
        let psn_max = u64::from(super::psn::PSN_MASK);
        check("qpn", self.qpn.into(), psn_max)?;
        check("dest_qpn", self.dest_qpn.into(), psn_max)?;
        check("sq_psn", self.sq_psn.into(), psn_max)?;
        check("rq_psn", self.rq_psn.into(), psn_max)?;
        check("timeout", self.timeout.into(), 31)?;
        check("retry_cnt", self.retry_cnt.into(), 7)?;
        check("rnr_retry", self.rnr_retry.into(), 7)?;
        check("min_rnr_timer", self.min_rnr_timer.into(), 31)?;
        Ok(())
    }

    /// The local ACK timeout.
    pub fn ack_timeout(&self) -> Option<Duration> {
        local_ack_timeout(self.timeout)
    }
}

/// Limits of the transport that are not QP attributes. The defaults are rdma_rxe's (rxe_param.h
/// `RXE_MAX_UNACKED_PSNS` 128 and `RXE_MAX_PKT_PER_ACK` 64); the BCM57608's own values are not
/// public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most PSNs a requester sends past its oldest unacknowledged PSN.
    pub max_unacked_psns: u32,
    /// A requester sets AckReq on the last packet of every message and on every this-many-th
    /// packet in between.
    pub ack_req_every: u32,
    /// A responder acknowledges after this many packets executed without an ACK, even without
    /// AckReq.
    pub ack_every: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_unacked_psns: 128, ack_req_every: 64, ack_every: 64 }
    }
}

impl Limits {
    /// Check that no limit is zero.
    pub fn validate(&self) -> Result<(), AttrError> {
        for (field, v) in [
            ("max_unacked_psns", self.max_unacked_psns),
            ("ack_req_every", self.ack_req_every),
            ("ack_every", self.ack_every),
        ] {
            if v == 0 {
                return Err(AttrError::ZeroLimit { field });
            }
        }
        if u64::from(self.max_unacked_psns) >= super::psn::PSN_SPACE / 2 {
            return Err(AttrError::TooLarge {
                field: "max_unacked_psns",
                value: self.max_unacked_psns.into(),
                max: super::psn::PSN_SPACE / 2 - 1,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::MacAddr;

    pub(crate) fn attrs() -> QpAttrs {
        QpAttrs {
            qpn: 0x11,
            dest_qpn: 0x22,
            path: Path::between(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]), 0x22),
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
        }
    }

    #[rstest::rstest]
    #[case(1, 256)]
    #[case(2, 512)]
    #[case(3, 1024)]
    #[case(4, 2048)]
    #[case(5, 4096)]
    fn an_mtu_code_is_its_size(#[case] code: u8, #[case] bytes: u32) {
        let m = Mtu::from_code(code).unwrap();
        assert_eq!(m.bytes(), bytes);
        assert_eq!(Mtu::from_bytes(bytes), Some(m));
    }

    #[test]
    fn mtu_codes_outside_the_table_and_packet_counts() {
        assert_eq!(Mtu::from_code(0), None);
        assert_eq!(Mtu::from_code(6), None);
        assert_eq!(Mtu::from_bytes(1500), None);
        let m = Mtu::Mtu4096;
        assert_eq!([m.packets(0), m.packets(1), m.packets(4096), m.packets(4097)], [1, 1, 1, 2]);
        assert_eq!(m.packets(1 << 20), 256);
    }

    #[test]
    fn ack_timeout_encoding() {
        assert_eq!(local_ack_timeout(0), None);
        assert_eq!(local_ack_timeout(1), Some(Duration::from_nanos(8192)));
        // 14 is the common default: 4.096 µs × 16384 = 67.1 ms.
        assert_eq!(local_ack_timeout(14), Some(Duration::from_nanos(67_108_864)));
        assert_eq!(local_ack_timeout(31), Some(Duration::from_nanos(4096 << 31)));
    }

    #[test]
    fn out_of_range_attributes_are_named() {
        assert_eq!(attrs().validate(), Ok(()));
        let bad = QpAttrs { retry_cnt: 8, ..attrs() };
        assert_eq!(bad.validate(), Err(AttrError::TooLarge { field: "retry_cnt", value: 8, max: 7 }));
        let bad = QpAttrs { qpn: 1 << 24, ..attrs() };
        assert!(bad.validate().unwrap_err().to_string().contains("qpn"));
        assert!(Limits { ack_every: 0, ..Limits::default() }.validate().is_err());
        assert!(Limits { max_unacked_psns: 1 << 23, ..Limits::default() }.validate().is_err());
    }
}
