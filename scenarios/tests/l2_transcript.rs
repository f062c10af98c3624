//! An open on the model, as its transcript records it: the driver's HWRM requests in bnxt_en's
//! order (probe, the L2 side as `bnxt_open` sets it up, then bnxt_re's RoCE start), and close
//! freeing them in reverse.

use std::path::Path;
use std::process::Command;

const OPEN_CLOSE: &str = "name: open-close\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - close: a\n";

/// The driver's requests, in order, from a transcript.
fn requests(transcript: &str) -> Vec<String> {
    transcript
        .lines()
        .filter_map(|l| l.split_once(" drv0 ").map(|(_, rest)| rest.trim_start()))
        .filter_map(|rest| rest.strip_prefix("hwrm-request "))
        .map(|rest| rest.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// Where `want` starts as a run of consecutive items of `got`.
fn find(got: &[String], want: &[&str]) -> Option<usize> {
    got.windows(want.len()).position(|w| w.iter().zip(want).all(|(a, b)| a == b))
}

#[test]
fn an_open_records_the_l2_setup_in_bnxt_en_order_and_close_frees_it_in_reverse() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.yaml"), OPEN_CLOSE).unwrap();
    let out = dir.path().join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_bnxt-rig"))
        .args(["run", "s.yaml", "--transcript", out.to_str().unwrap()])
        .current_dir(dir.path())
        .env("BNXT_RIG_RUNS", dir.path().join("runs"))
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(Path::new(&out).join("open-close.transcript")).unwrap();
    let got = requests(&text);
    let probe_end = ["FUNC_RESOURCE_QCAPS", "FUNC_QCFG", "VNIC_QCAPS", "PORT_PHY_QCAPS", "PORT_PHY_QCFG"];
    let l2_open = [
        "FUNC_DRV_IF_CHANGE",
        "FUNC_CFG",
        "FUNC_QCFG",
        "STAT_CTX_ALLOC",
        "RING_ALLOC",
        "RING_ALLOC",
        "RING_ALLOC",
        "VNIC_ALLOC",
        "VNIC_RSS_COS_LB_CTX_ALLOC",
        "VNIC_RSS_CFG",
        "VNIC_CFG",
        "CFA_L2_FILTER_ALLOC",
    ];
    let roce_start = ["RING_ALLOC", "STAT_CTX_ALLOC", "RING_ALLOC"];
    let mut open: Vec<&str> = probe_end.to_vec();
    open.extend(l2_open);
    open.extend(roce_start);
    let at = find(&got, &open).unwrap_or_else(|| panic!("the open's order in {got:?}"));
    assert_eq!(got[..at].last().map(String::as_str), Some("FUNC_BACKING_STORE_CFG_V2"), "after the context memory");
    let close = [
        "RING_FREE",
        "STAT_CTX_FREE",
        "RING_FREE",
        "CFA_L2_FILTER_FREE",
        "VNIC_FREE",
        "VNIC_RSS_COS_LB_CTX_FREE",
        "RING_FREE",
        "RING_FREE",
        "RING_FREE",
        "STAT_CTX_FREE",
        "FUNC_DRV_IF_CHANGE",
        "FUNC_DRV_UNRGTR",
    ];
    let tail: Vec<&str> = got[got.len() - close.len()..].iter().map(String::as_str).collect();
    assert_eq!(tail, close);
    // The model's side of the same: the reservation's counts and the filter's MAC.
    assert!(text.contains("nic0   hwrm-request FUNC_CFG"), "{text}");
    let cfg = text.lines().find(|l| l.contains("nic0   hwrm-request FUNC_CFG")).unwrap();
    for count in
        ["RX_rings=1", "completion_rings=1", "MSI-X_vectors=3", "statistics_contexts=2", "VNICs=1", "RSS_contexts=1"]
    {
        assert!(cfg.contains(count), "{cfg}");
    }
}
