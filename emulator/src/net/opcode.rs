//! The BTH opcodes the model handles (reliable connected, atomics included, and unreliable
//! datagram SEND Only) and the headers each implies.
//!
//! IBA Vol 1 §9.2.1 (OpCode field: bits 7-5 the transport, 000 = RC, 011 = UD; bits 4-0 the
//! operation) and
//! §9.3 (which extended headers follow the BTH for each operation); cross-checked with Linux
//! include/rdma/ib_pack.h (`IB_OPCODE_RC_*`) and drivers/infiniband/sw/rxe/rxe_opcode.c
//! (`rxe_opcode[]`: header masks per opcode; `IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE` 0x12 with AETH and
//! AtomicAckETH, `IB_OPCODE_RC_COMPARE_SWAP` 0x13 and `IB_OPCODE_RC_FETCH_ADD` 0x14 with
//! AtomicETH; `IB_OPCODE_UD_SEND_ONLY` 0x64 and
//! `IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE` 0x65 carry a DETH, §9.3.2).

use super::error::{Layer, WireError};

/// An opcode the model sends and receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Opcode {
    /// SEND First.
    SendFirst = 0x00,
    /// SEND Middle.
    SendMiddle = 0x01,
    /// SEND Last.
    SendLast = 0x02,
    /// SEND Last with Immediate.
    SendLastImm = 0x03,
    /// SEND Only.
    SendOnly = 0x04,
    /// SEND Only with Immediate.
    SendOnlyImm = 0x05,
    /// RDMA WRITE First.
    WriteFirst = 0x06,
    /// RDMA WRITE Middle.
    WriteMiddle = 0x07,
    /// RDMA WRITE Last.
    WriteLast = 0x08,
    /// RDMA WRITE Last with Immediate.
    WriteLastImm = 0x09,
    /// RDMA WRITE Only.
    WriteOnly = 0x0a,
    /// RDMA WRITE Only with Immediate.
    WriteOnlyImm = 0x0b,
    /// RDMA READ Request.
    ReadRequest = 0x0c,
    /// RDMA READ response First.
    ReadResponseFirst = 0x0d,
    /// RDMA READ response Middle.
    ReadResponseMiddle = 0x0e,
    /// RDMA READ response Last.
    ReadResponseLast = 0x0f,
    /// RDMA READ response Only.
    ReadResponseOnly = 0x10,
    /// Acknowledge.
    Acknowledge = 0x11,
    /// ATOMIC Acknowledge (IBA §9.4.5: AETH and AtomicAckETH).
    AtomicAcknowledge = 0x12,
    /// CmpSwap (an atomic compare-and-swap request: AtomicETH).
    CompareSwap = 0x13,
    /// FetchAdd (an atomic fetch-and-add request: AtomicETH).
    FetchAdd = 0x14,
    /// UD SEND Only (IBA §9.2.1: transport 011, operation 00100).
    UdSendOnly = 0x64,
    /// UD SEND Only with Immediate.
    UdSendOnlyImm = 0x65,
}

/// Every opcode in [`Opcode`], in numeric order.
pub const ALL_OPCODES: [Opcode; 23] = [
    Opcode::SendFirst,
    Opcode::SendMiddle,
    Opcode::SendLast,
    Opcode::SendLastImm,
    Opcode::SendOnly,
    Opcode::SendOnlyImm,
    Opcode::WriteFirst,
    Opcode::WriteMiddle,
    Opcode::WriteLast,
    Opcode::WriteLastImm,
    Opcode::WriteOnly,
    Opcode::WriteOnlyImm,
    Opcode::ReadRequest,
    Opcode::ReadResponseFirst,
    Opcode::ReadResponseMiddle,
    Opcode::ReadResponseLast,
    Opcode::ReadResponseOnly,
    Opcode::Acknowledge,
    Opcode::AtomicAcknowledge,
    Opcode::CompareSwap,
    Opcode::FetchAdd,
    Opcode::UdSendOnly,
    Opcode::UdSendOnlyImm,
];

impl Opcode {
    /// The opcode byte.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The name the specification and Wireshark use.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::SendFirst => "RC Send First",
            Opcode::SendMiddle => "RC Send Middle",
            Opcode::SendLast => "RC Send Last",
            Opcode::SendLastImm => "RC Send Last Immediate",
            Opcode::SendOnly => "RC Send Only",
            Opcode::SendOnlyImm => "RC Send Only Immediate",
            Opcode::WriteFirst => "RC RDMA Write First",
            Opcode::WriteMiddle => "RC RDMA Write Middle",
            Opcode::WriteLast => "RC RDMA Write Last",
            Opcode::WriteLastImm => "RC RDMA Write Last Immediate",
            Opcode::WriteOnly => "RC RDMA Write Only",
            Opcode::WriteOnlyImm => "RC RDMA Write Only Immediate",
            Opcode::ReadRequest => "RC RDMA Read Request",
            Opcode::ReadResponseFirst => "RC RDMA Read Response First",
            Opcode::ReadResponseMiddle => "RC RDMA Read Response Middle",
            Opcode::ReadResponseLast => "RC RDMA Read Response Last",
            Opcode::ReadResponseOnly => "RC RDMA Read Response Only",
            Opcode::Acknowledge => "RC Acknowledge",
            Opcode::AtomicAcknowledge => "RC Atomic Acknowledge",
            Opcode::CompareSwap => "RC Compare Swap",
            Opcode::FetchAdd => "RC Fetch Add",
            Opcode::UdSendOnly => "UD Send Only",
            Opcode::UdSendOnlyImm => "UD Send Only Immediate",
        }
    }

    /// Whether a RETH follows the BTH: RDMA WRITE First/Only and RDMA READ Request (§9.3.3).
    pub fn has_reth(self) -> bool {
        matches!(self, Opcode::WriteFirst | Opcode::WriteOnly | Opcode::WriteOnlyImm | Opcode::ReadRequest)
    }

    /// Whether an AETH follows: Acknowledge, ATOMIC Acknowledge and RDMA READ response
    /// First/Last/Only (§9.3.5).
    pub fn has_aeth(self) -> bool {
        matches!(
            self,
            Opcode::Acknowledge
                | Opcode::AtomicAcknowledge
                | Opcode::ReadResponseFirst
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
        )
    }

    /// Whether an AtomicETH follows the BTH: CmpSwap and FetchAdd (§9.3.4).
    pub fn has_atomic_eth(self) -> bool {
        self.is_atomic()
    }

    /// Whether an AtomicAckETH follows the AETH: ATOMIC Acknowledge (§9.3.6).
    pub fn has_atomic_ack_eth(self) -> bool {
        self == Opcode::AtomicAcknowledge
    }

    /// Whether it is an atomic request (CmpSwap or FetchAdd).
    pub fn is_atomic(self) -> bool {
        matches!(self, Opcode::CompareSwap | Opcode::FetchAdd)
    }

    /// Whether immediate data follows (after the RETH, if any) (§9.3.7).
    pub fn has_immdt(self) -> bool {
        matches!(
            self,
            Opcode::SendLastImm
                | Opcode::SendOnlyImm
                | Opcode::WriteLastImm
                | Opcode::WriteOnlyImm
                | Opcode::UdSendOnlyImm
        )
    }

    /// Whether a DETH follows the BTH: the UD opcodes (§9.3.2).
    pub fn has_deth(self) -> bool {
        self.is_ud()
    }

    /// Whether it is an unreliable-datagram opcode (transport bits 011).
    pub fn is_ud(self) -> bool {
        matches!(self, Opcode::UdSendOnly | Opcode::UdSendOnlyImm)
    }

    /// Whether the packet may carry payload (READ requests, atomics and ACKs carry none).
    pub fn has_payload(self) -> bool {
        !matches!(
            self,
            Opcode::ReadRequest
                | Opcode::Acknowledge
                | Opcode::AtomicAcknowledge
                | Opcode::CompareSwap
                | Opcode::FetchAdd
        )
    }

    /// Bytes of extended headers after the BTH.
    pub fn ext_headers_len(self) -> usize {
        usize::from(self.has_deth()) * super::ext::DETH_LEN
            + usize::from(self.has_reth()) * super::ext::RETH_LEN
            + usize::from(self.has_aeth()) * super::ext::AETH_LEN
            + usize::from(self.has_immdt()) * super::ext::IMMDT_LEN
            + usize::from(self.has_atomic_eth()) * super::ext::ATOMIC_ETH_LEN
            + usize::from(self.has_atomic_ack_eth()) * super::ext::ATOMIC_ACK_ETH_LEN
    }

    /// Whether an RC requester sends it (the RC opcodes but READ responses and ACKs).
    pub fn is_request(self) -> bool {
        self <= Opcode::ReadRequest || self.is_atomic()
    }

    /// Whether it starts a message (First or Only, or a READ request).
    pub fn is_first(self) -> bool {
        matches!(
            self,
            Opcode::SendFirst
                | Opcode::SendOnly
                | Opcode::SendOnlyImm
                | Opcode::WriteFirst
                | Opcode::WriteOnly
                | Opcode::WriteOnlyImm
                | Opcode::ReadRequest
                | Opcode::ReadResponseFirst
                | Opcode::ReadResponseOnly
                | Opcode::AtomicAcknowledge
                | Opcode::CompareSwap
                | Opcode::FetchAdd
                | Opcode::UdSendOnly
                | Opcode::UdSendOnlyImm
        )
    }

    /// Whether it ends a message (Last or Only, or a READ request).
    pub fn is_last(self) -> bool {
        matches!(
            self,
            Opcode::SendLast
                | Opcode::SendLastImm
                | Opcode::SendOnly
                | Opcode::SendOnlyImm
                | Opcode::WriteLast
                | Opcode::WriteLastImm
                | Opcode::WriteOnly
                | Opcode::WriteOnlyImm
                | Opcode::ReadRequest
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
                | Opcode::AtomicAcknowledge
                | Opcode::CompareSwap
                | Opcode::FetchAdd
                | Opcode::UdSendOnly
                | Opcode::UdSendOnlyImm
        )
    }
}

impl TryFrom<u8> for Opcode {
    type Error = WireError;

    fn try_from(code: u8) -> Result<Self, WireError> {
        ALL_OPCODES.iter().copied().find(|o| o.code() == code).ok_or(WireError::Unsupported {
            layer: Layer::Bth,
            field: "opcode",
            value: code.into(),
            why: "not an opcode the model handles (RC SEND, RDMA WRITE, RDMA READ, atomics, Acknowledge; UD SEND Only)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_others_are_refused() {
        for (i, op) in ALL_OPCODES.iter().enumerate() {
            if i < 0x15 {
                assert_eq!(usize::from(op.code()), i);
            }
            assert_eq!(Opcode::try_from(op.code()).unwrap(), *op);
        }
        assert_eq!((Opcode::UdSendOnly.code(), Opcode::UdSendOnlyImm.code()), (0x64, 0x65));
        for code in [0x15u8, 0x16, 0x24, 0x66, 0x81, 0xff] {
            assert!(matches!(Opcode::try_from(code), Err(WireError::Unsupported { field: "opcode", .. })));
        }
    }

    #[test]
    fn header_sets_match_the_rxe_opcode_table() {
        // (opcode, RETH, AETH, ImmDt, payload) from rxe_opcode.c's masks.
        let table = [
            (Opcode::SendFirst, false, false, false, true),
            (Opcode::SendLastImm, false, false, true, true),
            (Opcode::WriteFirst, true, false, false, true),
            (Opcode::WriteMiddle, false, false, false, true),
            (Opcode::WriteLastImm, false, false, true, true),
            (Opcode::WriteOnlyImm, true, false, true, true),
            (Opcode::ReadRequest, true, false, false, false),
            (Opcode::ReadResponseFirst, false, true, false, true),
            (Opcode::ReadResponseMiddle, false, false, false, true),
            (Opcode::ReadResponseOnly, false, true, false, true),
            (Opcode::Acknowledge, false, true, false, false),
        ];
        for (op, reth, aeth, imm, payload) in table {
            assert_eq!(
                (op.has_reth(), op.has_aeth(), op.has_immdt(), op.has_payload()),
                (reth, aeth, imm, payload),
                "{op:?}"
            );
        }
        assert_eq!(Opcode::WriteOnlyImm.ext_headers_len(), 20);
        assert_eq!(Opcode::Acknowledge.ext_headers_len(), 4);
        // rxe_opcode.c: UD SEND Only is BTH + DETH (8); with immediate, + ImmDt.
        assert_eq!(Opcode::UdSendOnly.ext_headers_len(), 8);
        assert_eq!(Opcode::UdSendOnlyImm.ext_headers_len(), 12);
        assert!(Opcode::UdSendOnly.is_first() && Opcode::UdSendOnly.is_last() && !Opcode::UdSendOnly.is_request());
        assert!(Opcode::ReadRequest.is_request() && !Opcode::ReadResponseOnly.is_request());
        // rxe_opcode.c: CmpSwap and FetchAdd are BTH + AtomicETH (28); ATOMIC Acknowledge is
        // BTH + AETH + AtomicAckETH (4 + 8); none carries payload.
        for op in [Opcode::CompareSwap, Opcode::FetchAdd] {
            assert_eq!((op.ext_headers_len(), op.has_payload(), op.is_request()), (28, false, true), "{op:?}");
        }
        let ack = Opcode::AtomicAcknowledge;
        assert_eq!((ack.ext_headers_len(), ack.has_payload(), ack.is_request()), (12, false, false));
    }
}
