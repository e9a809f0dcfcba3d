//! `smtsched train`: the real binary in a fresh temporary directory, on small runs.

mod util;
use util::{assert_bad_input, smtsched, stdout};

use std::path::Path;
use std::process::Output;

const SMALL: &[&str] = &[
    "--instructions",
    "100000",
    "--warmup",
    "20000",
    "--windows",
    "10",
    "--runs",
    "2",
];

fn small_windows(dir: &Path, workloads: &str, out: &str, threads: &str) -> Output {
    let mut args = vec![
        "train",
        "windows",
        "-w",
        workloads,
        "-o",
        out,
        "--threads",
        threads,
    ];
    args.extend_from_slice(SMALL);
    smtsched(dir, &args)
}

#[test]
fn windows_fit_validate_and_the_model_loads_where_policies_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = small_windows(d, "gzip-like,mcf-like,swim-like,vortex-like", "w.csv", "2");
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("240 windows of 4 subjects"),
        "{}",
        stdout(&o)
    );
    let csv = std::fs::read_to_string(d.join("w.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(rows[0].starts_with(
        "subject,background,run,window,instructions,solo_cycles,corun_cycles,pr,instructions_subj,"
    ));
    // 4 subjects × 3 backgrounds × 2 runs × 10 windows.
    assert_eq!(rows.len(), 1 + 240);
    for r in &rows[1..] {
        let cells: Vec<&str> = r.split(',').collect();
        let pr: f64 = cells[7].parse().unwrap();
        assert!(pr > 0.05 && pr < 1.5, "{r}");
        // Each window holds a tenth of the 100,000 instructions.
        assert_eq!(cells[4], "10000");
    }
    // The same windows on one host thread.
    let o = small_windows(d, "gzip-like,mcf-like,swim-like,vortex-like", "w1.csv", "1");
    assert!(o.status.success());
    assert_eq!(std::fs::read(d.join("w1.csv")).unwrap(), csv.as_bytes());

    let o = smtsched(d, &["train", "fit", "w.csv", "-o", "m.toml"]);
    assert!(o.status.success());
    let s = stdout(&o);
    for needle in [
        "R² =",
        "coefficient",
        "std error",
        "p-value",
        "mean /1000 cyc",
        "importance",
        "LLC-subj",
        "Feature selection at p > 0.05",
    ] {
        assert!(s.contains(needle), "{needle}: {s}");
    }
    let toml_text = std::fs::read_to_string(d.join("m.toml")).unwrap();
    assert!(toml_text.contains("r_squared") && toml_text.contains("[[terms]]"));
    // JSON too, with every feature kept.
    let o = smtsched(
        d,
        &[
            "train",
            "fit",
            "w.csv",
            "--alpha",
            "none",
            "--features",
            "all",
            "-o",
            "m.json",
        ],
    );
    assert!(o.status.success());
    assert!(stdout(&o).contains("Feature selection: off"));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("m.json")).unwrap()).unwrap();
    assert_eq!(m["terms"].as_array().unwrap().len(), 16);

    // The policies load both files.
    for model in ["m.toml", "m.json"] {
        let o = smtsched(
            d,
            &[
                "run",
                "--tasks",
                "gzip-like,mcf-like,swim-like",
                "--cpus",
                "2-3",
                "--policies",
                "tryhard,fair",
                "--duration",
                "20",
                "--stagger",
                "1",
                "--estimator",
                model,
            ],
        );
        assert!(o.status.success(), "{model}");
    }

    // …and so does `reproduce`.
    let o = smtsched(
        d,
        &[
            "reproduce",
            "thesis-set-a",
            "--duration",
            "20",
            "--repetitions",
            "1",
            "--estimator",
            "m.toml",
        ],
    );
    assert!(o.status.success());
    assert!(stdout(&o).contains("tryhard"));
    let o = smtsched(
        d,
        &[
            "train",
            "validate",
            "w.csv",
            "--estimator",
            "m.toml",
            "--svg",
            "s.svg",
            "--csv",
            "e.csv",
        ],
    );
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.contains("correlation r =") && s.contains("troughs") && s.contains("By pair"),
        "{s}"
    );
    let svg = std::fs::read_to_string(d.join("s.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches("<circle").count() >= 240);
    // The kernel's fixed point stays within 0.002 of floating point on every window.
    let e = std::fs::read_to_string(d.join("e.csv")).unwrap();
    let mut n = 0;
    for line in e.lines().skip(1) {
        let c: Vec<f64> = line
            .split(',')
            .skip(4)
            .map(|x| x.parse().unwrap())
            .collect();
        assert!((c[1] - c[2]).abs() <= 0.002, "{line}");
        n += 1;
    }
    assert_eq!(n, 240);
    let o = smtsched(d, &["train", "validate", "w.csv", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["fixed_point_max_difference"].as_f64().unwrap() <= 0.002);
    assert_eq!(v["validation"]["n"], 240);

    let o = smtsched(
        d,
        &[
            "train",
            "compare",
            "w.csv",
            "w.csv",
            "--trees",
            "20",
            "--svg-dir",
            "plots",
        ],
    );
    assert!(o.status.success());
    let s = stdout(&o);
    for needle in [
        "thesis Table 3.8 model",
        "least squares, thesis features",
        "least squares, thesis features, program-CV selection",
        "boosted trees, all features",
    ] {
        assert!(s.contains(needle), "{needle}: {s}");
    }
    assert_eq!(std::fs::read_dir(d.join("plots")).unwrap().count(), 7);

    // Selection by leave-one-program-out error: each drop and the final score are printed and
    // recorded in the model file.
    let o = smtsched(
        d,
        &[
            "train",
            "fit",
            "w.csv",
            "--select",
            "program-cv",
            "-o",
            "cv.toml",
        ],
    );
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.contains("Feature selection by leave-one-program-out error"),
        "{s}"
    );
    assert!(
        s.contains("Leave-one-program-out (each subject program held out"),
        "{s}"
    );
    let m = std::fs::read_to_string(d.join("cv.toml")).unwrap();
    assert!(
        m.contains("selection = \"program-cv\"") && m.contains("cv_rmse ="),
        "{m}"
    );
    // Two subjects leave no windows to train a fold on: one line, exit 2.
    let two: String = csv
        .lines()
        .filter(|l| {
            l.starts_with('#')
                || l.starts_with("subject,")
                || (l.starts_with("gzip-like,mcf-like,") || l.starts_with("mcf-like,gzip-like,"))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("two.csv"), two).unwrap();
    let o = smtsched(d, &["train", "fit", "two.csv", "--select", "program-cv"]);
    assert_bad_input(
        &o,
        &["two.csv", "at least 3 subject workloads; these have 2"],
    );
}

#[test]
fn windows_from_measured_samples() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("s.csv"),
        "subject,background,run,thread,cycles,instructions,llc_misses\n\
         a,,0,subj,0,0,0\na,,0,subj,1000,1000,4\n\
         a,b,0,subj,0,0,0\na,b,0,subj,4000,1000,8\n\
         a,b,0,back,0,0,0\na,b,0,back,4000,2000,40\n",
    )
    .unwrap();
    let o = smtsched(
        d,
        &[
            "train",
            "windows",
            "--samples",
            "s.csv",
            "--windows",
            "2",
            "-o",
            "w.csv",
        ],
    );
    assert!(o.status.success());
    let csv = std::fs::read_to_string(d.join("w.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3);
    // Each window: 500 instructions, 500 cycles alone, 2000 beside b: PR 0.25.
    assert!(
        rows[1].starts_with("a,b,0,0,500,500,2000,0.25,0.25,,,0.002,"),
        "{}",
        rows[1]
    );
    // A fit on features the file lacks names them.
    let o = smtsched(d, &["train", "fit", "w.csv"]);
    assert_bad_input(&o, &["w.csv", "missing column(s)", "l1i_misses_subj"]);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A features file with missing columns.
    std::fs::write(d.join("cols.csv"), "subject,window,pr\nx,0,0.5\n").unwrap();
    let o = smtsched(d, &["train", "fit", "cols.csv"]);
    assert_bad_input(&o, &["cols.csv", "missing column(s) background"]);
    // An empty training set.
    std::fs::write(
        d.join("empty.csv"),
        "subject,background,pr,instructions_subj\n",
    )
    .unwrap();
    let o = smtsched(
        d,
        &[
            "train",
            "fit",
            "empty.csv",
            "--features",
            "instructions_subj",
        ],
    );
    assert_bad_input(&o, &["empty training set", "empty.csv has no windows"]);
    std::fs::write(d.join("nothing.csv"), "").unwrap();
    let o = smtsched(d, &["train", "fit", "nothing.csv"]);
    assert_bad_input(&o, &["empty training set"]);
    // A singular design matrix: one feature is twice another.
    let mut text = String::from("subject,background,pr,fp_ops_subj,fp_ops_back,loads_subj\n");
    for i in 0..10 {
        text.push_str(&format!(
            "x,y,{},{},{},3\n",
            0.5 + 0.01 * i as f64,
            i,
            2 * i
        ));
    }
    std::fs::write(d.join("sing.csv"), text).unwrap();
    let o = smtsched(
        d,
        &[
            "train",
            "fit",
            "sing.csv",
            "--features",
            "fp_ops_subj,fp_ops_back",
        ],
    );
    assert_bad_input(
        &o,
        &[
            "singular design matrix",
            "fp_ops_back",
            "linear combination",
        ],
    );
    // A constant feature is singular with the intercept.
    let o = smtsched(
        d,
        &[
            "train",
            "fit",
            "sing.csv",
            "--features",
            "fp_ops_subj,loads_subj",
        ],
    );
    assert_bad_input(
        &o,
        &[
            "singular design matrix",
            "loads_subj is the same (3) in every window",
        ],
    );
    let o = smtsched(
        d,
        &[
            "train",
            "fit",
            "sing.csv",
            "--features",
            "instructions_subj",
        ],
    );
    assert_bad_input(&o, &["missing column(s) instructions_subj"]);
    // A cell that is not a number names file, line and column.
    std::fs::write(
        d.join("bad.csv"),
        "subject,background,pr\nx,y,0.5\nx,y,lots\n",
    )
    .unwrap();
    let o = smtsched(d, &["train", "fit", "bad.csv"]);
    assert_bad_input(
        &o,
        &["bad.csv, line 3, column pr", "\"lots\" is not a number"],
    );
    // Unknown features, options and files.
    let o = smtsched(
        d,
        &["train", "fit", "sing.csv", "--features", "tlb_misses_subj"],
    );
    assert_bad_input(&o, &["unknown feature \"tlb_misses_subj\""]);
    let o = smtsched(d, &["train", "fit", "sing.csv", "--alpha", "2"]);
    assert_bad_input(&o, &["'--alpha <ALPHA>'", "'2'", "between 0 and 1"]);
    let o = smtsched(
        d,
        &["train", "validate", "sing.csv", "--estimator", "perfect"],
    );
    assert_bad_input(&o, &["--estimator perfect"]);
    let o = smtsched(d, &["train", "fit", "no-such.csv"]);
    assert_bad_input(&o, &["no-such.csv"]);
    let o = smtsched(
        d,
        &[
            "train",
            "validate",
            "sing.csv",
            "--estimator",
            "no-model.toml",
        ],
    );
    assert_bad_input(&o, &["--estimator no-model.toml"]);
    let o = smtsched(d, &["train", "windows", "-w", "gzip-like", "-o", "x.csv"]);
    assert_bad_input(&o, &["at least two workloads"]);
    let o = smtsched(
        d,
        &[
            "train",
            "windows",
            "-w",
            "gzip-like,mcf-like",
            "--windows",
            "0",
        ],
    );
    assert_bad_input(&o, &["--windows 0"]);
    let o = smtsched(
        d,
        &[
            "train",
            "windows",
            "-w",
            "gzip-like,mcf-like",
            "--machine",
            "no-such-machine",
        ],
    );
    assert_bad_input(&o, &["no-such-machine"]);
    std::fs::write(d.join("s.csv"), "subject,run\n").unwrap();
    let o = smtsched(d, &["train", "windows", "--samples", "s.csv"]);
    assert_bad_input(
        &o,
        &[
            "s.csv",
            "missing column(s) background, thread, cycles, instructions",
        ],
    );
    // An output is never one of the inputs, a workload is not paired with itself, a name
    // must be one a header can show, and the trees' and ablation's numbers are in range.
    let o = smtsched(
        d,
        &["train", "windows", "--samples", "s.csv", "-o", "s.csv"],
    );
    assert_bad_input(&o, &["s.csv: would replace this command's input s.csv"]);
    assert_eq!(
        std::fs::read_to_string(d.join("s.csv")).unwrap(),
        "subject,run\n"
    );
    let o = smtsched(d, &["train", "windows", "-w", "gzip-like,gzip-like"]);
    assert_bad_input(&o, &["--workloads", "gzip-like is named twice"]);
    for name in ["", "a\nb"] {
        let o = smtsched(d, &["train", "fit", "cols.csv", "--name", name]);
        assert_bad_input(&o, &["--name", "visible name"]);
    }
    for flag in ["--trees", "--depth", "--min-leaf"] {
        let o = smtsched(d, &["train", "compare", "cols.csv", "cols.csv", flag, "0"]);
        assert_bad_input(&o, &[&format!("{flag} 0: must be at least 1")]);
    }
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/northwood.toml");
    let ablation = |extra: &[&str]| {
        let mut a = vec!["train", "ablation", "--estimator", model];
        a.extend_from_slice(extra);
        smtsched(d, &a)
    };
    for value in ["0", "nan", "inf"] {
        assert_bad_input(&ablation(&["--duration", value]), &["--duration"]);
    }
    assert_bad_input(&ablation(&["--experiments", ""]), &["names no experiment"]);
    let twice = ablation(&["--experiments", "thesis-set-a,thesis-set-a"]);
    assert_bad_input(&twice, &["thesis-set-a is named twice"]);
    // Nothing was written by the failures.
    assert!(!d.join("x.csv").exists());
}

#[test]
fn a_workload_named_with_a_comma_and_quotes_survives_windows_then_fit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // gzip-like under another name: the windows file quotes it, and the fit reads it back.
    let gzip = include_str!("../../../workloads/spec2000/gzip-like.toml").replacen(
        "name = \"gzip-like\"",
        "name = \"gzip, \\\"the\\\" compressor\"",
        1,
    );
    assert!(gzip.contains("gzip, \\\"the\\\" compressor"));
    std::fs::write(d.join("odd.toml"), gzip).unwrap();
    let o = small_windows(d, "odd.toml,mcf-like,swim-like,vortex-like", "w.csv", "2");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(d.join("w.csv")).unwrap();
    assert!(csv.contains("\"gzip, \"\"the\"\" compressor\""), "{csv}");
    let o = smtsched(d, &["train", "fit", "w.csv", "-o", "m.toml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Every window was read: 4 subjects x 3 backgrounds x 2 runs x 10 windows.
    assert!(stdout(&o).contains("240 windows"), "{}", stdout(&o));
}

/// The shipped estimator of every machine preset is what `train model` writes for it:
/// regenerated here from nothing but the preset and the thesis's training programs, each equals
/// its file in `models/` byte for byte.
#[test]
fn every_shipped_estimator_is_regenerated_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let mut shipped: Vec<_> = std::fs::read_dir(&models)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    shipped.sort();
    assert_eq!(shipped.len(), 7, "one per machine preset: {shipped:?}");
    for file in shipped {
        let machine = file.file_stem().unwrap().to_str().unwrap();
        let out = format!("{machine}.toml");
        let o = smtsched(d, &["train", "model", "--machine", machine, "-o", &out]);
        assert!(o.status.success(), "{}", util::stderr(&o));
        assert!(
            std::fs::read(d.join(&out)).unwrap() == std::fs::read(&file).unwrap(),
            "{machine}: the model written differs from {}",
            file.display()
        );
    }
}

/// `run` uses the machine's fitted estimator by default, the published one on request, and the
/// published one where no model was fitted (a preset changed with --set is another machine);
/// asking for a fitted model there is refused with the reason.
#[test]
fn runs_use_the_estimator_fitted_on_the_machine_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        "run",
        "-t",
        "gzip-like,mcf-like,swim-like",
        "-p",
        "plan",
        "--cpus",
        "0,2",
        "--duration",
        "5",
        "--stagger",
        "1",
    ];
    let header = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let o = smtsched(d, &args);
        assert!(o.status.success(), "{}", util::stderr(&o));
        stdout(&o).lines().next().unwrap().to_string()
    };
    assert!(
        header(&[]).ends_with("estimator fitted-northwood"),
        "{}",
        header(&[])
    );
    let thesis = header(&["--estimator", "thesis"]);
    assert!(thesis.ends_with("estimator thesis-northwood"), "{thesis}");
    let changed = header(&["--set", "cache.L2.size_bytes=1048576"]);
    assert!(changed.ends_with("estimator thesis-northwood"), "{changed}");
    let args: Vec<&str> = base
        .iter()
        .chain(&[
            "--set",
            "cache.L2.size_bytes=1048576",
            "--estimator",
            "machine",
        ])
        .copied()
        .collect();
    assert_bad_input(
        &smtsched(d, &args),
        &["--estimator machine", "no estimator is fitted"],
    );
}

/// `train ablation` runs an experiment under each estimator with the same seeds: naive, which
/// uses no estimates, has the same figures under all three; a window too short for the tasks to
/// complete a run shows `-` and names them.
#[test]
fn ablation_keeps_naive_unchanged_and_names_tasks_without_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let model = repo.join("models/northwood.toml");
    let ablation = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "ablation",
            "--estimator",
            model.to_str().unwrap(),
            "--experiments",
            "thesis-set-b",
            "--repetitions",
            "1",
        ];
        args.extend_from_slice(extra);
        let o = smtsched(d, &args);
        assert!(o.status.success(), "{}", util::stderr(&o));
        o
    };
    let v = util::json(&ablation(&["--json"]));
    let rows = v["results"].as_array().unwrap();
    let naive = rows.iter().find(|r| r["policy"] == "naive").unwrap();
    for metric in ["system_speedup", "fairness"] {
        let m = &naive[metric];
        assert!(m["shipped"].as_f64().unwrap() > 0.0, "{m}");
        assert_eq!(m["shipped"], m["trained"], "{metric}");
        assert_eq!(m["shipped"], m["perfect"], "{metric}");
    }
    assert!(rows.iter().all(|r| r["missing"] == serde_json::json!([])));
    // 11 s with a 10 s staggered start: one second, in which no task completes a run.
    let text = stdout(&ablation(&["--duration", "11"]));
    let note = text
        .lines()
        .find(|l| l.starts_with("- thesis-set-b naive: "))
        .unwrap_or_else(|| panic!("{text}"));
    let tasks = repo.join("experiments/thesis-set-b.toml");
    let spec = std::fs::read_to_string(tasks).unwrap();
    for line in spec.lines().filter(|l| l.starts_with("workload = ")) {
        let w = line.trim_start_matches("workload = ").trim_matches('"');
        assert!(note.contains(w), "{w}: {note}");
    }
}
