//! PCI identity of a BCM57608 physical function.

/// Broadcom's PCI vendor id.
pub const VENDOR_ID: u16 = 0x14e4;
/// BCM57608 (P7 PF). Source: Linux bnxt.c `bnxt_pci_tbl` (`BCM57608`), DPDK bnxt.h
/// `BROADCOM_DEV_ID_57608`.
pub const DEVICE_ID_57608: u16 = 0x1760;
/// PCI class code of an Ethernet controller (base class 0x02, subclass 0x00, prog-if 0x00).
pub const CLASS_ETHERNET: u32 = 0x02_0000;
/// `chip_num` a P7 reports in HWRM_VER_GET; bnxt_en keys `BNXT_CHIP_P7()` on it
/// (bnxt.h `CHIP_NUM_57608`).
pub const CHIP_NUM_57608: u16 = 0x1760;
/// The BAR (PCI resource index) holding the register space: HWRM mailbox, RoCE mailbox, GRC windows.
/// Source: bnxt.c `bnxt_init_board` (`pci_ioremap_bar(pdev, 0)`).
pub const BAR_REGS: u8 = 0;
/// The BAR holding the doorbells. Source: bnxt.c `bnxt_map_db_bar` (`pci_iomap(pdev, 2, ...)`),
/// bnxt_re qplib_rcfw.h `RCFW_DBR_PCI_BAR_REGION`.
pub const BAR_DOORBELLS: u8 = 2;
/// The third 64-bit BAR; bnxt_en maps it (`pci_ioremap_bar(pdev, 4)`) but never reads it. The model
/// places the MSI-X table and PBA there (an assumption: no public lspci of a P7 was found).
pub const BAR_MSIX: u8 = 4;
/// PCIe Device Control register bit enabling relaxed ordering (`PCI_EXP_DEVCTL_RELAX_EN`,
/// Linux include/uapi/linux/pci_regs.h).
pub const PCI_EXP_DEVCTL_RELAX_EN: u16 = 0x0010;
