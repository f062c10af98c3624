//! Loading scenario files: the suite, the bad-input fixtures (each names the error it must give),
//! discovery, and malformed input that must never crash the loader.

use std::path::{Path, PathBuf};

use bnxt_model::faults::{FirmwareAction, FirmwareFault};
use bnxt_rig::scenario::load::{LoadError, load_str, scenario_files};
use bnxt_rig::scenario::{Action, fault_plan, load_paths};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn fixtures() -> Vec<PathBuf> {
    scenario_files(&repo().join("fixtures/bad-scenarios")).unwrap()
}

/// Issue 2's scenario, which must run as it is.
const ISSUE_2: &str = "name: firmware-never-answers-registration
about: The firmware takes the driver's registration and never answers; open fails and names it.
targets: [model]
nics: 2
faults:
  - firmware: {nic: 0, request: FUNC_DRV_RGTR, action: no-response}
steps:
  - open: {nic: 0, as: a}
    expect: {error: \"FUNC_DRV_RGTR\"}
  - open: {nic: 1, as: b}
  - config: {nic: 1, relaxed_ordering: off}
  - close: b
  - config: {nic: 1, relaxed_ordering: on}
";

#[test]
fn the_issue_2_scenario_is_in_the_suite_as_written() {
    let text = std::fs::read_to_string(repo().join("scenarios/nic/firmware-never-answers-registration.yaml")).unwrap();
    assert_eq!(text, ISSUE_2);
    let scenarios = load_str(Path::new("issue-2.yaml"), ISSUE_2).unwrap();
    let s = &scenarios[0];
    assert_eq!((s.name.as_str(), s.nics, s.steps.len()), ("firmware-never-answers-registration", 2, 5));
    assert_eq!(s.targets.as_deref(), Some(&["model".to_string()][..]));
    let register = FirmwareFault { nic: 0, req_type: 0x1d, nth: None, action: FirmwareAction::NoResponse };
    assert_eq!(fault_plan(&s.faults).firmware, [register]);
    assert!(matches!(&s.steps[3].action, Action::Close(alias) if alias.name == "b"));
    assert_eq!(s.steps[1].at.line, 10);
}

#[test]
fn the_suite_loads_without_problems_and_only_yaml_files_count() {
    let files = scenario_files(&repo().join("scenarios")).unwrap();
    assert!(files.iter().all(|f| matches!(f.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))), "{files:?}");
    assert!(files.iter().all(|f| !f.starts_with(repo().join("scenarios/src"))));
    let suite = load_paths(&[repo().join("scenarios")]);
    assert!(suite.errors.is_empty(), "{:#?}", suite.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>());
    assert!(suite.scenarios.len() > files.len(), "matrix files make several scenarios each");
}

#[test]
fn every_bad_fixture_is_rejected_with_the_message_it_names() {
    let files = fixtures();
    assert!(files.len() >= 20, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let expect =
            text.lines().next().and_then(|l| l.strip_prefix("# expect: ")).unwrap_or_else(|| {
                panic!("{} does not start with `# expect: LINE:COL: FIELD: MESSAGE`", file.display())
            });
        let errors = load_str(&file, &text).expect_err(&format!("{} loaded", file.display()));
        let first = errors[0].to_string();
        let want = format!("{}:{expect}", file.display());
        assert!(first.starts_with(&want), "\n want: {want}\n got:  {first}");
    }
}

#[test]
fn unknown_keys_list_the_valid_ones() {
    let file = repo().join("fixtures/bad-scenarios/typo-in-key.yaml");
    let errors = load_str(&file, &std::fs::read_to_string(&file).unwrap()).unwrap_err();
    assert!(errors[0].to_string().ends_with("valid keys here: nic, as"), "{}", errors[0]);
}

#[test]
fn a_folder_of_bad_files_gives_a_problem_per_file_and_no_scenario() {
    let suite = load_paths(&[repo().join("fixtures/bad-scenarios")]);
    assert!(suite.scenarios.is_empty());
    assert_eq!(suite.errors.len(), fixtures().len());
}

#[test]
fn names_are_unique_across_files_and_empty_folders_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let body = "about: x.\nnics: 1\nsteps:\n  - count: {equals: 1}\n";
    std::fs::write(dir.path().join("a.yaml"), format!("name: same\n{body}")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b.yml"), format!("name: same\n{body}")).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "name: not a scenario").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let suite = load_paths(&[dir.path().to_path_buf(), dir.path().join("empty"), dir.path().join("missing")]);
    assert_eq!(suite.scenarios.len(), 1);
    let errors: Vec<String> = suite.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(errors.iter().any(|e| e.contains("empty: no scenario files")), "{errors:#?}");
    assert!(errors.iter().any(|e| e.contains("missing: ")), "{errors:#?}");
    let dup = errors.iter().find(|e| e.contains("sub/b.yml:1:7: name: scenario name `same` is also used by")).unwrap();
    assert!(dup.ends_with("a.yaml"), "{dup}");
}

#[test]
fn files_that_are_not_text_or_too_large_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("binary.yaml"), [0xff, 0xfe, 0x00, 0x41]).unwrap();
    std::fs::write(dir.path().join("huge.yaml"), vec![b'#'; 2 << 20]).unwrap();
    let suite = load_paths(&[dir.path().to_path_buf()]);
    let errors: Vec<&LoadError> = suite.errors.iter().collect();
    assert!(matches!(errors[0], LoadError::NotText { .. }), "{errors:?}");
    assert!(matches!(errors[1], LoadError::TooLarge { .. }), "{errors:?}");
}

/// A small deterministic generator (xorshift64*), so the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `text` with one random edit: a character deleted, duplicated or replaced, lines swapped or
/// dropped, the text cut short, or YAML punctuation inserted.
fn mutate(text: &str, rng: &mut Rng) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() || text.lines().count() == 0 {
        return "{".to_string();
    }
    let at = rng.below(chars.len());
    const NOISE: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        "- ",
        "\t",
        "&a ",
        "*a",
        "!!binary ",
        "'",
        "\"",
        "#",
        "? ",
        "|",
        ">",
        "~",
        "\u{0}",
        "${x}",
        "999999999999999999999",
        "-1",
        "1.5",
        "\n  ",
    ];
    match rng.below(7) {
        0 => chars.iter().enumerate().filter(|(i, _)| *i != at).map(|(_, c)| c).collect(),
        1 => chars[..at].iter().chain(&chars[at..at + 1]).chain(&chars[at..]).collect(),
        2 => {
            let mut lines: Vec<&str> = text.lines().collect();
            let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
            lines.swap(i, j);
            lines.join("\n")
        }
        3 => {
            let mut lines: Vec<&str> = text.lines().collect();
            let i = rng.below(lines.len());
            lines.remove(i);
            lines.join("\n")
        }
        4 => chars[..at].iter().collect(),
        _ => {
            let noise = NOISE[rng.below(NOISE.len())];
            chars[..at].iter().collect::<String>() + noise + &chars[at..].iter().collect::<String>()
        }
    }
}

#[test]
fn mutated_scenario_files_never_crash_the_loader() {
    let mut sources: Vec<String> = scenario_files(&repo().join("scenarios"))
        .unwrap()
        .into_iter()
        .chain(fixtures())
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    sources.push(ISSUE_2.to_string());
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut accepted, mut rejected) = (0, 0);
    for round in 0..3000 {
        let base = &sources[round % sources.len()];
        let mut text = mutate(base, &mut rng);
        if round % 3 == 0 {
            text = mutate(&text, &mut rng);
        }
        match load_str(Path::new("mutant.yaml"), &text) {
            Ok(_) => accepted += 1,
            Err(errors) => {
                assert!(!errors.is_empty());
                for e in errors {
                    assert!(e.to_string().starts_with("mutant.yaml:"), "{e}");
                }
                rejected += 1;
            }
        }
    }
    // Both outcomes happen: the mutations are neither all harmless nor all fatal.
    assert!(accepted > 100 && rejected > 100, "accepted {accepted}, rejected {rejected}");
}

#[test]
fn hostile_yaml_is_refused_without_crashing() {
    let laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
    let deep = "[".repeat(100_000);
    let deep_map = (0..5_000).map(|i| format!("{}k:", " ".repeat(i))).collect::<Vec<_>>().join("\n");
    let long_name = format!("name: {}\n", "x".repeat(500_000));
    let inputs: Vec<String> = vec![
        laughs.into(),
        deep,
        deep_map,
        long_name,
        "\u{feff}name: bom\n".into(),
        "--- \nname: a\n---\nname: b\n".into(),
        "name: !include other.yaml\n".into(),
        "name: !!binary aGVsbG8=\n".into(),
        "? [complex, key]\n: value\n".into(),
        "name: x\nabout: y\nnics: 1\nsteps:\n  - wait: 1h\n  - wait: 1.0000000001s\n".into(),
        "name: x\nabout: y\nnics: 1e400\nsteps: []\n".into(),
        "\t\tname: x\n".into(),
        String::new(),
        "~".into(),
        "name: x\nabout: y\nnics: 1\nsteps:\n  - open: {nic: -1, as: a}\n".into(),
        "name: x\nabout: y\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n    expect: {error: \"(?:a{1000}){1000}\"}\n"
            .into(),
    ];
    for input in inputs {
        let result = load_str(Path::new("hostile.yaml"), &input);
        assert!(result.is_err(), "accepted: {}", &input[..input.len().min(80)]);
    }
}
