//! What a type1 IOMMU container allows: `VFIO_IOMMU_GET_INFO`'s capability chain, read into the
//! bus-address ranges DMA may use and the number of mappings still available.
//!
//! Layouts: Linux `include/uapi/linux/vfio.h` (`struct vfio_iommu_type1_info`, `struct
//! vfio_info_cap_header`, `struct vfio_iommu_type1_info_cap_iova_range` with its `struct
//! vfio_iova_range` entries, `struct vfio_iommu_type1_info_dma_avail`; capability ids
//! `VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE` 1 and `VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL` 3). The
//! capabilities are in host byte order; `cap_offset` and each header's `next` are offsets from
//! the start of the whole buffer, 0 ending the chain.

use std::ops::RangeInclusive;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `struct vfio_iommu_type1_info`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub(crate) struct Type1Info {
    pub argsz: u32,
    pub flags: u32,
    pub iova_pgsizes: u64,
    pub cap_offset: u32,
    pub pad: u32,
}

/// `struct vfio_info_cap_header`.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct CapHeader {
    id: u16,
    version: u16,
    next: u32,
}

/// `struct vfio_iova_range`.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
struct IovaRange {
    start: u64,
    end: u64,
}

const _: () = {
    assert!(size_of::<Type1Info>() == 24);
    assert!(size_of::<CapHeader>() == 8);
    assert!(size_of::<IovaRange>() == 16);
};

/// `VFIO_IOMMU_INFO_CAPS`: the reply has a capability chain.
pub(crate) const INFO_CAPS: u32 = 1 << 1;
/// `VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE`.
const CAP_IOVA_RANGE: u16 = 1;
/// `VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL`.
const CAP_DMA_AVAIL: u16 = 3;
/// Offset of `nr_iovas` after the header, and of the first range.
const IOVA_RANGE_COUNT: usize = size_of::<CapHeader>();
const IOVA_RANGE_FIRST: usize = IOVA_RANGE_COUNT + 8;

/// What the container allows, as far as the kernel says (older kernels say less).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IommuLimits {
    /// Usable bus-address ranges, when the kernel lists them (`None`: not said).
    pub ranges: Option<Vec<RangeInclusive<u64>>>,
    /// Mappings still available (`dma_entry_limit` less those made), when said.
    pub dma_avail: Option<u32>,
}

/// Why a capability chain could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("VFIO_IOMMU_GET_INFO's capability chain is malformed: {0}")]
pub struct ChainError(String);

/// Read the capability chain of `buf` (the whole `VFIO_IOMMU_GET_INFO` reply).
pub(crate) fn parse(buf: &[u8]) -> Result<IommuLimits, ChainError> {
    let (info, _) = Type1Info::read_from_prefix(buf).map_err(|_| ChainError("shorter than its header".into()))?;
    let mut limits = IommuLimits::default();
    if info.flags & INFO_CAPS == 0 {
        return Ok(limits);
    }
    let mut at = info.cap_offset as usize;
    // A chain cannot hold more capabilities than headers fit in the buffer; more is a loop.
    for _ in 0..buf.len() / size_of::<CapHeader>() + 1 {
        if at == 0 {
            return Ok(limits);
        }
        let cap = buf.get(at..).ok_or_else(|| ChainError(format!("a capability at {at} past the reply's end")))?;
        let (header, _) = CapHeader::read_from_prefix(cap)
            .map_err(|_| ChainError(format!("a capability header cut short at {at}")))?;
        match header.id {
            CAP_IOVA_RANGE => limits.ranges = Some(iova_ranges(cap, at)?),
            CAP_DMA_AVAIL => {
                let avail = cap
                    .get(size_of::<CapHeader>()..size_of::<CapHeader>() + 4)
                    .and_then(|b| u32::read_from_bytes(b).ok())
                    .ok_or_else(|| ChainError(format!("the DMA_AVAIL capability at {at} cut short")))?;
                limits.dma_avail = Some(avail);
            }
            _ => {}
        }
        at = header.next as usize;
    }
    Err(ChainError("the chain loops".into()))
}

fn iova_ranges(cap: &[u8], at: usize) -> Result<Vec<RangeInclusive<u64>>, ChainError> {
    let short = || ChainError(format!("the IOVA_RANGE capability at {at} cut short"));
    let count =
        cap.get(IOVA_RANGE_COUNT..IOVA_RANGE_COUNT + 4).and_then(|b| u32::read_from_bytes(b).ok()).ok_or_else(short)?;
    let mut ranges = Vec::new();
    for i in 0..count as usize {
        let start = IOVA_RANGE_FIRST + i * size_of::<IovaRange>();
        let (r, _) = cap.get(start..).and_then(|b| IovaRange::read_from_prefix(b).ok()).ok_or_else(short)?;
        if r.end < r.start {
            return Err(ChainError(format!("IOVA range {i} ends ({:#x}) before it starts ({:#x})", r.end, r.start)));
        }
        ranges.push(r.start..=r.end);
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply as Linux's type1 driver writes it: the info, then the IOVA range capability (two
    /// ranges, the x86 MSI window left out) and the DMA_AVAIL one.
    fn reply() -> Vec<u8> {
        let mut b = Vec::new();
        let info = Type1Info { argsz: 0, flags: INFO_CAPS | 1, iova_pgsizes: 0x4000_1000, cap_offset: 24, pad: 0 };
        b.extend_from_slice(info.as_bytes());
        let ranges_len = 8 + 8 + 2 * 16;
        b.extend_from_slice(CapHeader { id: CAP_IOVA_RANGE, version: 1, next: (24 + ranges_len) as u32 }.as_bytes());
        b.extend_from_slice(&2u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(IovaRange { start: 0, end: 0xfedf_ffff }.as_bytes());
        b.extend_from_slice(IovaRange { start: 0xfef0_0000, end: (1 << 48) - 1 }.as_bytes());
        b.extend_from_slice(CapHeader { id: CAP_DMA_AVAIL, version: 1, next: 0 }.as_bytes());
        b.extend_from_slice(&65_000u32.to_ne_bytes());
        let len = b.len() as u32;
        b[..4].copy_from_slice(&len.to_ne_bytes());
        b
    }

    #[test]
    fn ranges_and_the_mappings_left_are_read_from_the_chain() {
        let limits = parse(&reply()).unwrap();
        assert_eq!(limits.ranges, Some(vec![0..=0xfedf_ffff, 0xfef0_0000..=(1 << 48) - 1]));
        assert_eq!(limits.dma_avail, Some(65_000));
    }

    #[test]
    fn no_chain_says_nothing_and_a_broken_one_is_an_error() {
        let mut b = reply();
        b[4..8].copy_from_slice(&1u32.to_ne_bytes()); // no INFO_CAPS
        assert_eq!(parse(&b).unwrap(), IommuLimits::default());
        let mut b = reply();
        b.truncate(60);
        assert!(parse(&b).unwrap_err().to_string().contains("cut short"));
        let mut b = reply();
        b[24 + 4..24 + 8].copy_from_slice(&24u32.to_ne_bytes()); // next points back at itself
        assert!(parse(&b).unwrap_err().to_string().contains("loops"));
        assert!(parse(&[0; 8]).is_err());
    }
}
