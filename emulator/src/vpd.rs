//! The function's Vital Product Data: the read-only image the VPD capability serves (PCI Local Bus
//! Specification 3.0, §6.4 and appendix I; PCIe Base Specification §6.28), and what bnxt_en reads
//! from it at probe: the part number (`PN`) and serial number (`SN`) keywords of the read-only
//! resource (Linux drivers/net/ethernet/broadcom/bnxt/bnxt.c `bnxt_vpd_read_info`, through
//! drivers/pci/vpd.c `pci_vpd_alloc` and `pci_vpd_find_ro_info_keyword`).
//!
//! Layout: a large-resource Identifier String (tag 0x82), a large-resource VPD-R list (tag 0x90)
//! of keywords (two ASCII bytes, a length byte, the data), whose last keyword `RV` carries the
//! checksum byte that makes every byte from the start through it sum to zero, then the small
//! End tag (0x78). The values are the model's own, saying so: Broadcom's real part numbers are
//! not public for this board.

/// Large resource tag: Identifier String.
const TAG_ID_STRING: u8 = 0x82;
/// Large resource tag: VPD-R (read-only keywords).
const TAG_VPD_R: u8 = 0x90;
/// Small resource tag: End (item name 0xf, length 0).
const TAG_END: u8 = 0x78;

/// The part number the model reports.
pub const PART_NUMBER: &str = "BCM957608-MODEL";
/// The product name the model reports.
pub const PRODUCT_NAME: &str = "Broadcom BCM57608 NetXtreme-E (bnxt-rig model)";

fn large(tag: u8, body: &[u8]) -> Vec<u8> {
    let len = body.len() as u16;
    let mut out = vec![tag, len as u8, (len >> 8) as u8];
    out.extend_from_slice(body);
    out
}

fn keyword(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = name.as_bytes().to_vec();
    out.push(value.len() as u8);
    out.extend_from_slice(value);
    out
}

/// The VPD image of the function whose device serial number is `serial`: its `SN` is the serial
/// number in hexadecimal.
pub fn image(serial: u64) -> Vec<u8> {
    let mut out = large(TAG_ID_STRING, PRODUCT_NAME.as_bytes());
    let mut ro = Vec::new();
    ro.extend(keyword("PN", PART_NUMBER.as_bytes()));
    ro.extend(keyword("EC", b"A0"));
    ro.extend(keyword("SN", format!("{serial:016X}").as_bytes()));
    ro.extend(keyword("MN", b"14E4"));
    // RV: the checksum byte, then nothing (a reserved byte would follow in padded images).
    ro.extend(keyword("RV", &[0]));
    let at_csum = out.len() + 3 + ro.len() - 1;
    out.extend(large(TAG_VPD_R, &ro));
    let sum = out[..at_csum].iter().fold(0u8, |a, &b| a.wrapping_add(b));
    out[at_csum] = 0u8.wrapping_sub(sum);
    out.push(TAG_END);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader written from the specification: the read-only keywords and whether the checksum
    /// holds.
    fn read_only_keywords(vpd: &[u8]) -> (Vec<(String, Vec<u8>)>, bool) {
        let mut at = 0;
        let mut out = Vec::new();
        let mut csum_ok = false;
        while at < vpd.len() {
            let tag = vpd[at];
            if tag & 0x80 == 0 {
                assert_eq!(tag, TAG_END, "only the End small resource is used");
                break;
            }
            let len = usize::from(vpd[at + 1]) | usize::from(vpd[at + 2]) << 8;
            let body = &vpd[at + 3..at + 3 + len];
            if tag == TAG_VPD_R {
                let mut k = 0;
                while k < body.len() {
                    let name = String::from_utf8(body[k..k + 2].to_vec()).unwrap();
                    let n = usize::from(body[k + 2]);
                    let value = body[k + 3..k + 3 + n].to_vec();
                    if name == "RV" {
                        let through = at + 3 + k + 3;
                        csum_ok = vpd[..=through].iter().fold(0u8, |a, &b| a.wrapping_add(b)) == 0;
                    }
                    out.push((name, value));
                    k += 3 + n;
                }
            }
            at += 3 + len;
        }
        (out, csum_ok)
    }

    #[test]
    fn the_image_carries_part_and_serial_numbers_with_a_good_checksum() {
        let vpd = image(0x0257_60ff_fe80_0001);
        assert_eq!(vpd[0], TAG_ID_STRING);
        assert_eq!(&vpd[3..3 + PRODUCT_NAME.len()], PRODUCT_NAME.as_bytes());
        assert_eq!(*vpd.last().unwrap(), TAG_END);
        let (kw, csum_ok) = read_only_keywords(&vpd);
        assert!(csum_ok, "RV checksum");
        let get = |n: &str| kw.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("PN").as_deref(), Some(PART_NUMBER.as_bytes()));
        assert_eq!(get("SN").as_deref(), Some(&b"025760FFFE800001"[..]));
        assert_eq!(kw.last().map(|(k, _)| k.as_str()), Some("RV"));
    }
}
