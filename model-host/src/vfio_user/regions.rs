//! The regions a vfio-user client sees (vfio-pci's layout, `<linux/vfio.h>`): BAR0-BAR5 as
//! regions 0-5, the expansion ROM as 6, config space as 7, VGA as 8. The model's function has
//! 64-bit BARs 0, 2 and 4 (1, 3 and 5 are their upper halves, so they are empty regions), no
//! ROM and no VGA. Sizes come from the model's config space ([`bnxt_model::config_space::BAR_SIZES`]).
//!
//! No region is mappable (no `VFIO_REGION_INFO_FLAG_MMAP`): every access reaches the model as a
//! `VFIO_USER_REGION_READ`/`WRITE`, in order, as the model needs to see each register access.

use bnxt_vfio_user::linux::{PCI_CONFIG_REGION_INDEX, PCI_NUM_REGIONS, REGION_INFO_FLAG_READ, REGION_INFO_FLAG_WRITE};
use bnxt_vfio_user::payload::RegionInfo;

use bnxt_model::config_space::{BAR_SIZES, CONFIG_SPACE_SIZE};

/// What a region index names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    /// A BAR the function implements.
    Bar(u8),
    /// PCI configuration space (4 KiB).
    Config,
    /// A region the function does not have (size 0).
    Absent,
}

/// What region `index` is.
pub fn kind(index: u32) -> RegionKind {
    if index == PCI_CONFIG_REGION_INDEX {
        return RegionKind::Config;
    }
    match BAR_SIZES.iter().find(|(bar, _)| u32::from(*bar) == index) {
        Some((bar, _)) => RegionKind::Bar(*bar),
        None => RegionKind::Absent,
    }
}

/// Size of region `index` in bytes (0 for regions the function does not have).
pub fn size(index: u32) -> u64 {
    match kind(index) {
        RegionKind::Bar(bar) => BAR_SIZES.iter().find(|(b, _)| *b == bar).map_or(0, |&(_, s)| s),
        RegionKind::Config => CONFIG_SPACE_SIZE as u64,
        RegionKind::Absent => 0,
    }
}

/// Number of regions the device reports (`VFIO_PCI_NUM_REGIONS`).
pub const NUM_REGIONS: u32 = PCI_NUM_REGIONS;

/// The `VFIO_USER_DEVICE_GET_REGION_INFO` reply payload for region `index`, or `None` if the
/// index is past the last region.
pub fn info(index: u32) -> Option<RegionInfo> {
    if index >= NUM_REGIONS {
        return None;
    }
    let size = size(index);
    let flags = if size > 0 { REGION_INFO_FLAG_READ | REGION_INFO_FLAG_WRITE } else { 0 };
    Some(RegionInfo { argsz: size_of::<RegionInfo>() as u32, flags, index, cap_offset: 0, size, offset: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_model::config_space::{BAR0_SIZE, BAR2_SIZE, BAR4_SIZE};

    #[test]
    fn bars_0_2_4_and_config_space_have_the_model_sizes_and_the_rest_are_empty() {
        let sizes: Vec<u64> = (0..NUM_REGIONS).map(|i| info(i).unwrap().size).collect();
        assert_eq!(sizes, vec![BAR0_SIZE, 0, BAR2_SIZE, 0, BAR4_SIZE, 0, 0, 4096, 0]);
        assert_eq!(info(0).unwrap().flags, REGION_INFO_FLAG_READ | REGION_INFO_FLAG_WRITE);
        assert_eq!(info(1).unwrap().flags, 0);
        assert_eq!(info(9), None);
        assert_eq!(kind(7), RegionKind::Config);
        assert_eq!(kind(2), RegionKind::Bar(2));
    }
}
