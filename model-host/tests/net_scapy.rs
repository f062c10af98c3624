//! scapy's RoCE layer (scapy/contrib/roce.py, an implementation independent of the model)
//! recomputes the ICRC of every frame the model builds, and finds the one frame whose ICRC was
//! spoiled on purpose.
//!
//! Needs a Python with scapy, so it is ignored by default. Run it with
//! `SCAPY_PYTHON=/path/to/venv/bin/python cargo test -p bnxt-model --test net_scapy -- --ignored`
//! (`python3 -m venv v && v/bin/pip install scapy`; scapy is not a dependency of the project).

#[path = "../../emulator/tests/net_support/mod.rs"]
mod net_support;

use std::process::Command;
use std::time::Duration;

use bnxt_model::net::Opcode;
use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::roce::{Path, Transport, build_frame};
use bnxt_model_host::pcap::PcapTap;
use net_support::{every_kind, mac};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SCRIPT: &str = r#"
import sys
from scapy.all import rdpcap, Ether, raw, load_contrib
load_contrib("roce")
from scapy.contrib.roce import BTH
frames = rdpcap(sys.argv[1])
bad = []
for i, p in enumerate(frames):
    carried = p[BTH].icrc
    # Without the Ethernet padding of short frames: scapy's ICRC would take it in.
    q = Ether(raw(p)[:14 + p["IP"].len])
    del q[BTH].icrc
    again = Ether(q.build())[BTH].icrc
    if again != carried:
        bad.append(i)
print(len(frames), " ".join(map(str, bad)) or "-")
"#;

#[test]
#[ignore = "needs a Python with scapy (SCAPY_PYTHON)"]
fn scapy_agrees_with_every_icrc() {
    let python = std::env::var("SCAPY_PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = tempfile::tempdir().unwrap();
    let (file, script) = (dir.path().join("frames.pcap"), dir.path().join("icrc.py"));
    std::fs::write(&script, SCRIPT).unwrap();

    let path = Path::between(mac(3), mac(4), 0xabcde);
    let mut frames = every_kind(&path, 0xabcde);
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    for psn in 0..200u32 {
        let len = rng.random_range(0..=4096usize);
        let payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let op = [Opcode::SendMiddle, Opcode::WriteMiddle, Opcode::ReadResponseMiddle][psn as usize % 3];
        let mut f = Vec::new();
        build_frame(&path, &Transport::bth(BthRepr::new(op, 0xabcde, psn)), &payload, &mut f).unwrap();
        frames.push(f);
    }
    let spoiled = frames.len() / 2;
    let icrc_at = 14 + usize::from(u16::from_be_bytes([frames[spoiled][16], frames[spoiled][17]])) - 1;
    frames[spoiled][icrc_at] ^= 0x01;

    let mut tap = PcapTap::create(&file).unwrap();
    for (i, f) in frames.iter().enumerate() {
        tap.record(Duration::from_micros(i as u64), f);
    }
    tap.finish().unwrap();
    let out = Command::new(&python).arg(&script).arg(&file).output().expect("python runs");
    assert!(out.status.success(), "scapy check failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.trim(), format!("{} {spoiled}", frames.len()));
}
