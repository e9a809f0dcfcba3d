//! `smtsched plot` and `smtsched diff`: saved matrices and timelines drawn again, two matrices
//! compared, through the real binary in a fresh directory.

mod util;
use util::{assert_bad_input, json, smtsched, stdout};

use std::path::Path;

/// A small matrix of `workloads` on `machine`, written to `out` with its heatmap in `svg`.
fn matrix_and_svg(d: &Path, machine: &str, workloads: &str, out: &str, svg: &str) {
    util::small_matrix(d, workloads, &["-m", machine, "-o", out, "--svg", svg]);
}

fn read(d: &Path, f: &str) -> String {
    std::fs::read_to_string(d.join(f)).unwrap()
}

/// PR of `subject` with `background` read from a matrix file's pairs, as the file states it.
fn cell(m: &serde_json::Value, subject: &str, background: &str) -> f64 {
    let names: Vec<&str> = m["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let (s, b) = (
        names.iter().position(|n| *n == subject).unwrap() as u64,
        names.iter().position(|n| *n == background).unwrap() as u64,
    );
    m["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| {
            let (a, c) = (p["a"].as_u64()?, p["b"].as_u64()?);
            if (a, c) == (s, b) {
                p["pr_a"].as_f64()
            } else if (c, a) == (s, b) {
                p["pr_b"].as_f64()
            } else {
                None
            }
        })
        .unwrap()
}

#[test]
fn a_saved_matrix_and_timeline_draw_as_they_did_when_computed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    matrix_and_svg(
        d,
        "northwood",
        "gzip-like,mcf-like,mesa-like",
        "m.json",
        "m.svg",
    );
    let o = smtsched(d, &["plot", "m.json", "-o", "again.svg"]);
    assert!(o.status.success(), "{}", util::stderr(&o));
    assert_eq!(read(d, "again.svg"), read(d, "m.svg"));
    let svg = read(d, "m.svg");
    // Full names, the machine and placement in the title, a colour bar with its title.
    assert!(svg.contains("3 workloads on northwood, siblings placement"));
    assert_eq!(svg.matches(">\nmesa-like\n</text>").count(), 2);
    assert!(svg.contains("performance ratio (0.5 = time-sharing)"));
    let o = smtsched(
        d,
        &[
            "run",
            "-t",
            "gzip-like,mcf-like,swim-like",
            "-p",
            "naive",
            "--duration",
            "4",
            "--stagger",
            "1",
            "--timeline",
            "t.json",
            "--timeline-svg",
            "t.svg",
            "--timeline-seconds",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", util::stderr(&o));
    let o = smtsched(d, &["plot", "t.json", "--timeline-seconds", "1"]);
    assert!(o.status.success(), "{}", util::stderr(&o));
    assert_eq!(stdout(&o), read(d, "t.svg"));
    // Not a matrix or a timeline: one line naming the file and what it holds.
    std::fs::write(d.join("x.json"), "{\"format\": \"something-else/1\"}").unwrap();
    assert_bad_input(
        &smtsched(d, &["plot", "x.json"]),
        &["x.json", "something-else/1"],
    );
    assert_bad_input(&smtsched(d, &["plot", "nothing.json"]), &["nothing.json"]);
    // A timeline edited into one no run gives is refused by field, before anything is drawn
    // (a hundred million CPUs would take gigabytes).
    let timeline: serde_json::Value = serde_json::from_str(&read(d, "t.json")).unwrap();
    let edits: [(&str, serde_json::Value, &str); 5] = [
        (
            "/logical_cpus",
            serde_json::json!(100_000_000),
            "logical_cpus = 100000000",
        ),
        ("/clock_hz", serde_json::json!(0.0), "clock_hz = 0"),
        ("/window_cycles/1", serde_json::json!(-1.0), "window_cycles"),
        (
            "/switches/0/cycle",
            serde_json::json!(-5.0),
            "switches[0].cycle = -5",
        ),
        (
            "/switches/1/cpu",
            serde_json::json!(99),
            "switches[1].cpu = 99",
        ),
    ];
    for (field, value, says) in edits {
        let mut t = timeline.clone();
        *t.pointer_mut(field).unwrap() = value;
        std::fs::write(d.join("edited.json"), t.to_string()).unwrap();
        let o = smtsched(d, &["plot", "edited.json", "-o", "edited.svg"]);
        assert_bad_input(&o, &["edited.json", says]);
        assert!(!d.join("edited.svg").exists());
    }
}

#[test]
fn diff_gives_b_minus_a_for_every_shared_cell() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    matrix_and_svg(
        d,
        "northwood",
        "gzip-like,mcf-like,mesa-like",
        "a.json",
        "a.svg",
    );
    matrix_and_svg(
        d,
        "prescott",
        "mesa-like,mcf-like,swim-like",
        "b.json",
        "b.svg",
    );
    let o = smtsched(d, &["diff", "a.json", "b.json", "--json", "--svg", "d.svg"]);
    assert!(o.status.success(), "{}", util::stderr(&o));
    let r = json(&o);
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&read(d, "a.json")).unwrap(),
        serde_json::from_str(&read(d, "b.json")).unwrap(),
    );
    // Shared: mcf and mesa, in A's order; gzip only in A, swim only in B.
    assert_eq!(r["workloads"], serde_json::json!(["mcf-like", "mesa-like"]));
    assert_eq!(r["only_in_a"], serde_json::json!(["gzip-like"]));
    assert_eq!(r["only_in_b"], serde_json::json!(["swim-like"]));
    let names = ["mcf-like", "mesa-like"];
    let mut sum = 0.0;
    for (i, s) in names.iter().enumerate() {
        for (j, g) in names.iter().enumerate() {
            let expect = cell(&b, s, g) - cell(&a, s, g);
            sum += expect;
            let got = r["cells"][i][j].as_f64().unwrap();
            assert!((got - expect).abs() < 1e-12, "{s}|{g}: {got} vs {expect}");
        }
    }
    assert!((r["mean_difference"].as_f64().unwrap() - sum / 4.0).abs() < 1e-12);
    assert!(read(d, "d.svg").contains("B = simulated siblings on prescott"));
    let text = stdout(&smtsched(d, &["diff", "a.json", "b.json"]));
    assert!(
        text.contains("only in A: gzip-like; only in B: swim-like"),
        "{text}"
    );
    // Nothing in common: refused, naming both files.
    matrix_and_svg(d, "northwood", "art-like", "c.json", "c.svg");
    assert_bad_input(
        &smtsched(d, &["diff", "a.json", "c.json"]),
        &["a.json", "c.json", "no workload in common"],
    );
}
