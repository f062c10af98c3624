//! `bnxt-model segment --control`: wire faults set on the hub while peers run really drop and
//! damage the frames between them, a port's pulled cable passes nothing either way until it is
//! plugged back, `state` shows ports and counters; the control socket stays up whatever its
//! clients send (bad JSON, unknown commands and ports, a plan that does not hold together, a
//! second client, a client that goes away mid-line); `bnxt-model ctl` speaks to it.

mod peers_support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use bnxt_model_host::serve::ctl::client::call;
use bnxt_model_host::serve::ctl::hub::{HubReply, HubRequest, HubState};
use bnxt_model_host::serve::segment::{Hub, SegmentOptions, SegmentSummary};
use bnxt_model_host::serve::signals::Stopper;
use bnxt_model_host::stream::{FrameDecoder, encode_frame};
use peers_support::{exchange, frame, leave_mid_line_and_send_a_line_too_long, receive, receive_within, wait_socket};

const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a frame that does not come is waited for.
const NOTHING: Duration = Duration::from_millis(300);
const MA: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const MB: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

/// A hub with a control socket on a thread of this test, and two peers (ports 0 and 1) whose
/// addresses it has learned.
struct Rig {
    control: PathBuf,
    a: (UnixStream, FrameDecoder),
    b: (UnixStream, FrameDecoder),
    hub: JoinHandle<SegmentSummary>,
    stop: Stopper,
    _dir: tempfile::TempDir,
}

impl Rig {
    fn start() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let (socket, control) = (dir.path().join("seg.sock"), dir.path().join("seg.ctl"));
        let options =
            SegmentOptions { socket: socket.clone(), pcap: None, control: Some(control.clone()), catch_signals: false };
        let hub = Hub::bind(&options).unwrap();
        let stop = hub.stopper().unwrap();
        let hub = std::thread::spawn(move || hub.run().unwrap());
        let connect = || {
            let s = UnixStream::connect(&socket).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
            (s, FrameDecoder::new())
        };
        let mut rig = Rig { control, a: connect(), b: connect(), hub, stop, _dir: dir };
        // Each learned: a's broadcast reaches b, b's answer reaches a.
        rig.send_a(frame([0xff; 6], MA, 0));
        assert_eq!(rig.at_b(TIMEOUT), Some(frame([0xff; 6], MA, 0)));
        rig.b.0.write_all(&encode_frame(&frame(MA, MB, 0))).unwrap();
        assert_eq!(receive(&mut rig.a.0, &mut rig.a.1), Some(frame(MA, MB, 0)));
        rig
    }

    fn ctl(&self, request: HubRequest) -> HubReply {
        call(&self.control, &request, TIMEOUT).unwrap()
    }

    fn state(&self) -> HubState {
        self.ctl(HubRequest::State {}).state.unwrap()
    }

    fn send_a(&mut self, f: Vec<u8>) {
        self.a.0.write_all(&encode_frame(&f)).unwrap();
    }

    fn at_b(&mut self, within: Duration) -> Option<Vec<u8>> {
        receive_within(&mut self.b.0, &mut self.b.1, within)
    }

    fn finish(self) -> SegmentSummary {
        self.stop.stop();
        self.hub.join().unwrap()
    }
}

fn wire(plan: &str) -> HubRequest {
    HubRequest::Wire { plan: serde_json::from_str(plan).unwrap(), seed: 7 }
}

#[test]
fn a_wire_plan_set_on_the_hub_corrupts_and_drops_the_frames_it_names_and_clearing_it_lets_them_pass() {
    let mut rig = Rig::start();
    let mode = std::fs::metadata(&rig.control).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the owner may connect");
    // The second frame from port 0 from now on is corrupted: one bit past the Ethernet header.
    assert!(rig.ctl(wire(r#"{"rules":[{"nic":0,"nth":2,"kind":"corrupt"}]}"#)).ok);
    for tag in 1..=3 {
        rig.send_a(frame(MB, MA, tag));
    }
    let got: Vec<Vec<u8>> = (0..3).map(|_| rig.at_b(TIMEOUT).expect("every frame arrives")).collect();
    assert_eq!((&got[0], &got[2]), (&frame(MB, MA, 1), &frame(MB, MA, 3)), "the first and third untouched");
    let sent = frame(MB, MA, 2);
    let flipped: Vec<u32> = sent.iter().zip(&got[1]).map(|(x, y)| (x ^ y).count_ones()).collect();
    assert_eq!(flipped.iter().sum::<u32>(), 1, "one bit flipped: {:?}", got[1]);
    assert!(flipped[..14].iter().all(|&n| n == 0), "past the Ethernet header");
    let state = rig.state();
    assert_eq!((state.wire_faults.frames, state.wire_faults.corrupted), (3, 1), "{state:?}");
    assert_eq!(state.wire_seed, Some(7));
    assert_eq!(state.wire.unwrap().rules[0].nic, Some(0));

    // Every frame dropped: none reaches b; b's own still reach a only if the plan spares them.
    assert!(rig.ctl(wire(r#"{"drop":1.0}"#)).ok);
    rig.send_a(frame(MB, MA, 4));
    assert_eq!(rig.at_b(NOTHING), None, "dropped at the hub");
    let state = rig.state();
    assert_eq!((state.wire_faults.frames, state.wire_faults.dropped), (1, 1), "counted from the new plan: {state:?}");
    assert_eq!(state.ports[0].frames_in, 5, "the hub read it: {state:?}");
    assert_eq!(state.ports[1].frames_out, 4, "and never wrote it to b: {state:?}");

    assert!(rig.ctl(HubRequest::WireClear {}).ok);
    rig.send_a(frame(MB, MA, 5));
    assert_eq!(rig.at_b(TIMEOUT), Some(frame(MB, MA, 5)));
    assert!(rig.state().wire.is_none());
    let summary = rig.finish();
    assert_eq!((summary.frames_in, summary.frames_out, summary.dropped), (7, 6, 0), "{summary:?}");
}

#[test]
fn a_pulled_cable_passes_no_frame_either_way_until_it_is_plugged_back() {
    let mut rig = Rig::start();
    let down = rig.ctl(HubRequest::Link { port: 1, up: false });
    assert_eq!((down.ok, down.link_changed), (true, Some(true)), "{down:?}");
    assert_eq!(rig.ctl(HubRequest::Link { port: 1, up: false }).link_changed, Some(false), "already out");
    rig.send_a(frame(MB, MA, 1));
    assert_eq!(rig.at_b(NOTHING), None, "nothing goes out to port 1");
    rig.b.0.write_all(&encode_frame(&frame(MA, MB, 2))).unwrap();
    assert_eq!(receive_within(&mut rig.a.0, &mut rig.a.1, NOTHING), None, "nothing comes in from port 1");
    let state = rig.state();
    assert!(!state.ports[1].link_up && state.ports[0].link_up, "{state:?}");
    assert_eq!((state.ports[1].dropped_link_down, state.counters.dropped_link_down), (2, 2), "{state:?}");

    assert_eq!(rig.ctl(HubRequest::Link { port: 1, up: true }).link_changed, Some(true));
    rig.send_a(frame(MB, MA, 3));
    assert_eq!(rig.at_b(TIMEOUT), Some(frame(MB, MA, 3)));
    let refused = rig.ctl(HubRequest::Link { port: 9, up: false });
    assert!(!refused.ok && refused.error.unwrap().contains("no peer holds port 9 (connected: 0, 1)"));
    assert_eq!(rig.finish().dropped_link_down, 2);
}

#[test]
fn bad_requests_and_bad_clients_get_answers_and_leave_the_hub_up() {
    let mut rig = Rig::start();
    let idle = UnixStream::connect(&rig.control).unwrap(); // a second client, connected throughout
    let replies: Vec<HubReply> = exchange(
        &rig.control,
        &[
            "this is not json",
            r#"{"cmd":"launch"}"#,
            r#"{"cmd":"fault-add","request":"VER_GET","action":"no-response"}"#,
            r#"{"cmd":"wire","plan":{"dorp":0.5}}"#,
            r#"{"cmd":"wire","plan":{"corrupt":1.5}}"#,
            r#"{"cmd":"wire","plan":{"rules":[{"nic":5,"kind":"drop"}]}}"#,
            r#"{"cmd":"wire","plan":{"rules":[{"nth":0,"kind":"drop"}]}}"#,
            r#"{"cmd":"wire","plan":{"delay":1.0,"delay_by":{"secs":18446744073709551615,"nanos":999999999}}}"#,
            r#"{"cmd":"link","up":false}"#,
            r#"{"cmd":"state"}"#,
        ],
    );
    let errors: Vec<String> = replies.iter().map(|r| r.error.clone().unwrap_or_default()).collect();
    assert!(errors[0].starts_with("bad request"), "{errors:?}");
    assert!(errors[1].contains("launch"), "{errors:?}");
    assert!(errors[2].contains("fault-add"), "serve's requests are not the hub's: {errors:?}");
    assert!(errors[3].contains("dorp"), "{errors:?}");
    assert!(errors[4].contains("1.5"), "{errors:?}");
    assert!(errors[5].contains("names port 5, which no peer holds (connected: 0, 1)"), "{errors:?}");
    assert!(errors[6].contains("occurrence 0"), "{errors:?}");
    assert!(!replies[7].ok && !errors[7].is_empty(), "a delay past any clock: {errors:?}");
    assert!(errors[8].contains("port"), "{errors:?}");
    let state = replies[9].state.as_ref().unwrap();
    assert!(replies[9].ok && state.control_clients >= 2 && state.wire.is_none(), "{state:?}");

    // A client that goes away in the middle of a line, and one that sends a line too long.
    leave_mid_line_and_send_a_line_too_long(&rig.control, br#"{"cmd":"wi"#);
    drop(idle);

    // The hub still forwards, and still answers.
    rig.send_a(frame(MB, MA, 1));
    assert_eq!(rig.at_b(TIMEOUT), Some(frame(MB, MA, 1)));
    assert_eq!(rig.state().control_clients, 1, "only this client is left");
    assert_eq!(rig.finish().garbage_peers, 0);
}

#[test]
fn the_ctl_command_speaks_to_a_hub_and_says_refusals_in_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, control) = (dir.path().join("seg.sock"), dir.path().join("seg.ctl"));
    let mut hub = Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["segment", "--socket"])
        .arg(&socket)
        .arg("--control")
        .arg(&control)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_socket(&mut hub, &socket);
    assert!(control.exists(), "the control socket is bound before the hub's");
    let ctl = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_bnxt-model")).arg("ctl").arg(&control).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = ctl(&[
        "wire",
        "set",
        r#"{"drop":0.25,"rules":[{"kind":"delay","delay":{"secs":0,"nanos":5000}}]}"#,
        "--seed",
        "3",
    ]);
    assert_eq!(code, Some(0), "{out} {err}");
    let (code, out, _) = ctl(&["state"]);
    assert_eq!(code, Some(0));
    let reply: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (reply["state"]["wire"]["drop"].as_f64(), reply["state"]["wire_seed"].as_u64()),
        (Some(0.25), Some(3)),
        "{out}"
    );
    assert_eq!(reply["state"]["ports"], serde_json::json!([]), "no peer yet");
    let (code, _, err) = ctl(&["link", "0", "down"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no peer holds port 0 (connected: none)"), "{err}");
    let (code, _, err) = ctl(&["link", "down"]);
    assert_eq!(code, Some(1), "serve's link request, refused by the hub: {err}");
    assert!(err.contains("port"), "{err}");
    let (code, _, err) = ctl(&["wire", "set", "{\"drop\":"]);
    assert_eq!(code, Some(2), "a plan that is not JSON is a bad command line: {err}");
    let (code, _, err) = ctl(&["link", "x", "down"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, out, _) = ctl(&["wire", "clear"]);
    assert_eq!((code, out.trim()), (Some(0), r#"{"ok":true}"#));
    let (code, out, _) = ctl(&["raw", r#"{"cmd":"state"}"#]);
    assert_eq!(code, Some(0), "{out}");
    let schema = Command::new(env!("CARGO_BIN_EXE_bnxt-model")).args(["ctl", "--schema"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    let hub_schema = schema["segment"]["request"].to_string();
    assert!(hub_schema.contains("wire-clear") && hub_schema.contains("delay_by"), "{schema}");

    rustix::process::kill_process(rustix::process::Pid::from_child(&hub), rustix::process::Signal::TERM).unwrap();
    let out = hub.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
