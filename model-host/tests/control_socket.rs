//! `bnxt-model serve --control`: faults armed by name while a client runs, and the control
//! socket kept up whatever its clients send (bad JSON, unknown names, a second client, a client
//! that goes away mid-line, a line too long); `bnxt-model ctl` speaking to it.

mod peers_support;
mod vfio_user_support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bnxt_hsi::hwrm::layouts::HwrmVerGetOutput;
use bnxt_model::faults::ActionKind;
use bnxt_model_host::serve::ctl::client::call;
use bnxt_model_host::serve::ctl::protocol::{FaultSpec, Reply, Request};
use bnxt_vfio_user::header::Command;
use bnxt_vfio_user::linux::PCI_CONFIG_REGION_INDEX;
use bnxt_vfio_user::payload::{DmaMap, RegionAccess};
use peers_support::{exchange, leave_mid_line_and_send_a_line_too_long};
use vfio_user_support::{Raw, Server, fd_of, memfd, peek, ver_get, wait_response, write_region};
use zerocopy::{FromBytes, IntoBytes};

const IOVA: u64 = 0x10000;
const TIMEOUT: Duration = Duration::from_secs(10);

/// A server with a control socket, and a vfio-user client with 8 KiB of memory mapped at IOVA
/// and memory space and bus mastering on.
struct Rig {
    server: Server,
    control: PathBuf,
    client: Raw,
    ram: std::os::fd::OwnedFd,
    _dir: tempfile::TempDir,
}

impl Rig {
    fn start() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let control = dir.path().join("ctl.sock");
        let server = Server::start(&["--control", control.to_str().unwrap()]);
        // The control socket is bound before the vfio-user one.
        assert!(control.exists(), "the control socket exists once the server listens");
        let mut client = Raw::negotiated(&server.socket);
        let ram = memfd(0x2000);
        let map = DmaMap { argsz: 32, flags: 3, offset: 0, address: IOVA, size: 0x2000 };
        client.ok(Command::DmaMap, &[map.as_bytes()], &[fd_of(&ram)]);
        write_region(&mut client, PCI_CONFIG_REGION_INDEX, 4, &0x0006u16.to_le_bytes());
        Rig { server, control, client, ram, _dir: dir }
    }

    fn ctl(&self, request: Request) -> Reply {
        call(&self.control, &request, TIMEOUT).unwrap()
    }

    /// Send VER_GET with `seq`; the response's header bytes once the valid byte is written, or
    /// `None` if none comes within `wait`.
    fn ver_get(&mut self, seq: u16, wait: Duration) -> Option<Vec<u8>> {
        let resp = 0x1000;
        self.ram_clear(resp, 256);
        let mut window = [0u8; 128];
        let req = ver_get(seq, IOVA + resp);
        window[..req.len()].copy_from_slice(&req);
        write_region(&mut self.client, 0, 0, &window);
        write_region(&mut self.client, 0, 0x100, &1u32.to_le_bytes());
        wait_response(&self.ram, resp, seq, wait)
    }

    fn ram_clear(&self, offset: u64, len: usize) {
        rustix::io::pwrite(&self.ram, &vec![0u8; len], offset).unwrap();
    }
}

fn spec(request: &str, action: ActionKind) -> FaultSpec {
    FaultSpec { request: request.into(), action, code: None, delay_ms: None, nth: None, count: None }
}

#[test]
fn faults_armed_by_name_meet_the_next_requests_and_are_listed_with_what_they_did() {
    let mut rig = Rig::start();
    let mode = std::fs::metadata(&rig.control).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the owner may connect");
    assert_eq!(rig.ver_get(1, TIMEOUT).map(|r| r[0]), Some(0), "no fault yet");

    let mut fault = spec("ver_get", ActionKind::Error);
    fault.code = Some("RESOURCE_ALLOC_ERROR".into());
    fault.nth = Some(2);
    let reply = rig.ctl(Request::FaultAdd { fault });
    assert!(reply.ok, "{reply:?}");
    let id = reply.id.unwrap();
    let codes: Vec<u8> = (2..=4).map(|seq| rig.ver_get(seq, TIMEOUT).expect("answered")[0]).collect();
    assert_eq!(codes, vec![0, 4, 0], "the second VER_GET after arming, once");

    let listed = rig.ctl(Request::FaultList {}).faults.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].id, listed[0].request.as_str(), listed[0].fired), (id, "VER_GET", 1));
    assert_eq!(listed[0].code.as_deref(), Some("RESOURCE_ALLOC_ERROR"));

    // Malformed answers: the seq_id is off by one; the valid byte never comes.
    assert!(
        rig.ctl(Request::FaultAdd { fault: FaultSpec { count: Some(1), ..spec("VER_GET", ActionKind::WrongSeqId) } })
            .ok
    );
    assert_eq!(rig.ver_get(5, Duration::from_millis(300)), None, "no response with seq 5");
    let head = peek(&rig.ram, 0x1000, 8);
    assert_eq!(u16::from_le_bytes([head[4], head[5]]), 6, "answered as seq 6");
    assert!(
        rig.ctl(Request::FaultAdd { fault: FaultSpec { count: Some(1), ..spec("VER_GET", ActionKind::NoValidByte) } })
            .ok
    );
    assert_eq!(rig.ver_get(7, Duration::from_millis(300)), None);
    let head = peek(&rig.ram, 0x1000, 8);
    let len = usize::from(u16::from_le_bytes([head[6], head[7]]));
    assert_eq!(
        (u16::from_le_bytes([head[4], head[5]]), peek(&rig.ram, 0x1000, len)[len - 1]),
        (7, 0),
        "all but the valid byte"
    );
    assert!(
        rig.ctl(Request::FaultAdd { fault: FaultSpec { count: Some(1), ..spec("VER_GET", ActionKind::WrongRespLen) } })
            .ok
    );
    assert_eq!(rig.ver_get(8, Duration::from_millis(300)), None, "the valid byte is not where resp_len says");
    let head = peek(&rig.ram, 0x1000, 8);
    let len = usize::from(u16::from_le_bytes([head[6], head[7]]));
    assert_eq!(len, size_of::<HwrmVerGetOutput>() + 16, "resp_len 16 bytes too long");

    let cleared = rig.ctl(Request::FaultClear { id: None });
    assert_eq!(cleared.cleared, Some(4));
    assert_eq!(rig.ver_get(10, TIMEOUT).map(|r| r[0]), Some(0), "cleared faults fire no more");
    assert!(!rig.ctl(Request::FaultClear { id: Some(id) }).ok, "a fault cleared is not there to clear again");

    // The state names what the model holds; the link goes and comes back.
    let state = rig.ctl(Request::State {}).state.unwrap();
    assert_eq!(state["nic"]["dma_mappings"], 1);
    assert_eq!(state["nic"]["link_up"], true);
    assert_eq!(rig.ctl(Request::Link { up: false }).link_changed, Some(true));
    assert_eq!(rig.ctl(Request::State {}).state.unwrap()["nic"]["link_up"], false);
    assert_eq!(rig.ctl(Request::Link { up: false }).link_changed, Some(false), "already down");
    assert_eq!(rig.ctl(Request::Link { up: true }).link_changed, Some(true));
}

#[test]
fn a_yanked_card_reads_all_ones_and_answers_nothing() {
    let mut rig = Rig::start();
    assert!(rig.ctl(Request::PcieSurpriseRemoval {}).ok);
    let req = RegionAccess { offset: 0, region: PCI_CONFIG_REGION_INDEX, count: 4 };
    let body = rig.client.ok(Command::RegionRead, &[req.as_bytes()], &[]);
    let (_, id) = RegionAccess::read_from_prefix(&body).unwrap();
    assert_eq!(id, [0xff; 4], "vendor and device read all-ones");
    assert_eq!(rig.ver_get(1, Duration::from_millis(300)), None, "the firmware is gone");
    assert_eq!(peek(&rig.ram, 0x1000, 16), vec![0; 16], "and does no DMA");
    let state = rig.ctl(Request::State {}).state.unwrap();
    assert_eq!(state["removed"], true);
    assert!(!rig.ctl(Request::Link { up: false }).ok);
}

#[test]
fn bad_requests_and_bad_clients_get_answers_and_leave_the_server_up() {
    let mut rig = Rig::start();
    let idle = UnixStream::connect(&rig.control).unwrap(); // a second client, connected throughout
    let replies: Vec<Reply> = exchange(
        &rig.control,
        &[
            "this is not json",
            r#"{"cmd":"fault-add","request":"FUNC_QCFGG","action":"no-response"}"#,
            r#"{"cmd":"fault-add","request":"CREATE_QP","action":"wrong-seq-id"}"#,
            r#"{"cmd":"fault-add","request":"VER_GET","action":"error"}"#,
            r#"{"cmd":"fault-add","request":"VER_GET","action":"error","code":"NOPE"}"#,
            r#"{"cmd":"fault-add","request":"VER_GET","action":"no-response","nth":0}"#,
            r#"{"cmd":"launch"}"#,
            r#"{"cmd":"state"}"#,
        ],
    );
    let errors: Vec<String> = replies.iter().map(|r| r.error.clone().unwrap_or_default()).collect();
    assert!(errors[0].contains("bad request"), "{errors:?}");
    assert!(errors[1].contains("did you mean `FUNC_QCFG`"), "{errors:?}");
    assert!(errors[2].contains("HWRM response"), "{errors:?}");
    assert!(errors[3].contains("needs `code`"), "{errors:?}");
    assert!(errors[4].contains("unknown HWRM error code `NOPE`"), "{errors:?}");
    assert!(errors[5].contains("nth must be 1 or more"), "{errors:?}");
    assert!(errors[6].contains("launch"), "{errors:?}");
    assert!(replies[7].ok && replies[7].state.as_ref().unwrap()["control_clients"].as_u64().unwrap() >= 2);

    // A client that goes away in the middle of a line, and one that sends a line too long.
    leave_mid_line_and_send_a_line_too_long(&rig.control, br#"{"cmd":"fault-"#);

    drop(idle);
    // The server still serves both sockets.
    assert!(rig.ctl(Request::FaultList {}).ok);
    assert_eq!(rig.ver_get(1, TIMEOUT).map(|r| r[0]), Some(0));
    assert!(rig.server.running());
}

#[test]
fn the_ctl_command_speaks_the_channel_and_says_refusals_in_its_status() {
    let rig = Rig::start();
    let ctl = |args: &[&str]| {
        let deadline = Instant::now() + 2 * TIMEOUT;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
            .arg("ctl")
            .arg(&rig.control)
            .args(args)
            .output()
            .unwrap();
        assert!(Instant::now() < deadline);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = ctl(&["fault", "add", "PORT_QSTATS_EXT", "delay", "250", "--count", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(r#""id":1"#), "{out}");
    let (code, out, _) = ctl(&["fault", "list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains(r#""request":"PORT_QSTATS_EXT""#) && out.contains(r#""delay_ms":250"#), "{out}");
    let (code, _, err) = ctl(&["fault", "add", "VER_GET", "no-response", "oops"]);
    assert_eq!(code, Some(2), "a value for an action that takes none is a bad command line: {err}");
    let (code, _, err) = ctl(&["fault", "clear", "99"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no fault 99"), "{err}");
    let (code, out, _) = ctl(&["link", "down"]);
    assert_eq!((code, out.contains(r#""link_changed":true"#)), (Some(0), true), "{out}");
    let (code, out, _) = ctl(&["raw", r#"{"cmd":"state"}"#]);
    assert_eq!(code, Some(0));
    assert!(out.contains(r#""peer_present":false"#), "{out}");
    let schema =
        std::process::Command::new(env!("CARGO_BIN_EXE_bnxt-model")).args(["ctl", "--schema"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert!(schema["request"].to_string().contains("fault-add"), "{schema}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["ctl", "/nonexistent/ctl.sock", "state"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn two_clients_talking_at_once_each_get_their_own_replies_in_order() {
    let rig = Rig::start();
    let connect = || {
        let s = UnixStream::connect(&rig.control).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        let r = BufReader::new(s.try_clone().unwrap());
        (s, r)
    };
    let (mut a, mut ar) = connect();
    let (mut b, mut br) = connect();
    // Interleaved: a's two requests around b's one, before either reads.
    a.write_all(b"{\"cmd\":\"fault-add\",\"request\":\"VER_GET\",\"action\":\"no-response\"}\n").unwrap();
    b.write_all(b"{\"cmd\":\"fault-list\"}\n{\"cmd\":\"nope\"}\n").unwrap();
    a.write_all(b"{\"cmd\":\"fault-clear\"}\n").unwrap();
    let line = |r: &mut BufReader<UnixStream>| {
        let mut s = String::new();
        r.read_line(&mut s).unwrap();
        serde_json::from_str::<Reply>(&s).unwrap()
    };
    let (a1, a2) = (line(&mut ar), line(&mut ar));
    assert_eq!((a1.ok, a1.id), (true, Some(1)), "{a1:?}");
    assert_eq!((a2.ok, a2.cleared), (true, Some(1)), "{a2:?}");
    let (b1, b2) = (line(&mut br), line(&mut br));
    assert!(b1.ok && b1.faults.is_some(), "{b1:?}");
    assert!(!b2.ok && b2.error.unwrap().contains("nope"));
}

#[test]
fn a_client_that_leaves_before_reading_its_reply_is_forgotten_and_what_it_asked_is_done() {
    let mut rig = Rig::start();
    {
        let mut s = UnixStream::connect(&rig.control).unwrap();
        s.write_all(b"{\"cmd\":\"fault-add\",\"request\":\"VER_GET\",\"action\":\"no-response\",\"count\":1}\n")
            .unwrap();
    }
    // The request was carried out (the server reads the line before it sees the hang-up).
    let deadline = Instant::now() + TIMEOUT;
    while rig.ctl(Request::FaultList {}).faults.unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the fault was never armed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let state = rig.ctl(Request::State {}).state.unwrap();
    assert_eq!(state["control_clients"], 1, "only this client is left: {state}");
    assert_eq!(rig.ver_get(1, Duration::from_millis(300)), None, "the armed fault took the request");
    assert_eq!(rig.ver_get(2, TIMEOUT).map(|r| r[0]), Some(0));
}

#[test]
fn fw_reset_over_the_channel_starts_one_reset_and_the_firmware_answers_again_after_it() {
    let mut rig = Rig::start();
    let reply = rig.ctl(Request::FwReset { fatal: true });
    assert_eq!((reply.ok, reply.reset_started), (true, Some(true)), "{reply:?}");
    let again = rig.ctl(Request::FwReset { fatal: false });
    assert_eq!(again.reset_started, Some(false), "one reset at a time");
    assert_eq!(rig.ver_get(1, Duration::from_millis(300)), None, "a dead firmware answers nothing");
    // It restarts a second after the notice; bnxt_en polls VER_GET until it answers.
    let deadline = Instant::now() + TIMEOUT;
    let mut seq = 2;
    while rig.ver_get(seq, Duration::from_millis(200)).is_none() {
        assert!(Instant::now() < deadline, "the firmware never came back");
        seq += 1;
    }
    assert!(rig.server.running());
}
