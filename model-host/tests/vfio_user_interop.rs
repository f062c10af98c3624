//! `bnxt-model serve` against a vfio-user client this project did not write: rust-vmm's
//! `vfio_user` crate (0.1.7, the client cloud-hypervisor used). It negotiates, reads every
//! region's information, reads config space, lends a memfd with DMA_MAP and drives an
//! HWRM_VER_GET through BAR0, all through its own code.

mod vfio_user_support;

use std::os::fd::AsRawFd;
use std::time::Duration;

use bnxt_model::config_space::{BAR0_SIZE, BAR2_SIZE, BAR4_SIZE};
use vfio_user_support::{Server, memfd, ver_get, wait_response};

#[test]
fn rust_vmm_client_sees_the_device_and_gets_a_ver_get_answer() {
    let server = Server::start(&[]);
    let mut client = vfio_user::Client::new(&server.socket).expect("rust-vmm's client connects and negotiates");
    let size = |c: &vfio_user::Client, i| c.region(i).map(|r| r.size);
    assert_eq!(size(&client, 0), Some(BAR0_SIZE));
    assert_eq!(size(&client, 2), Some(BAR2_SIZE));
    assert_eq!(size(&client, 4), Some(BAR4_SIZE));
    assert_eq!(size(&client, 7), Some(4096));

    let mut id = [0u8; 12];
    client.region_read(7, 0, &mut id).unwrap();
    assert_eq!(u16::from_le_bytes([id[0], id[1]]), 0x14e4);
    assert_eq!(u16::from_le_bytes([id[2], id[3]]), 0x1760);
    assert_eq!(u32::from_le_bytes(id[8..12].try_into().unwrap()) >> 8, 0x02_0000);

    let ram = memfd(0x2000);
    client.dma_map(0, 0x4000_0000, 0x2000, ram.as_raw_fd()).unwrap();
    client.region_write(7, 4, &0x0006u16.to_le_bytes()).unwrap();
    let req = ver_get(3, 0x4000_1000);
    let mut window = [0u8; 128];
    window[..req.len()].copy_from_slice(&req);
    client.region_write(0, 0, &window).unwrap();
    client.region_write(0, 0x100, &1u32.to_le_bytes()).unwrap();
    let resp = wait_response(&ram, 0x1000, 3, Duration::from_secs(5)).expect("a response");
    assert_eq!(u16::from_le_bytes([resp[0], resp[1]]), 0, "error_code");
    assert_eq!(u16::from_le_bytes([resp[0x70], resp[0x71]]), 0x1760, "chip_num");
    client.reset().unwrap();
    client.shutdown().unwrap();
}
