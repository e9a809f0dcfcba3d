//! `reproduce all -o DIR`: the report a user opens — one self-contained HTML file that a real
//! browser (Debian's headless Chromium) renders without console errors, and its JSON and
//! Markdown twins, whose claim counts add up to the claims of the experiments run.

mod util;

use std::path::Path;
use std::process::Command;
use util::{assert_bad_input, ended_by_sigterm_at_rename, killed_once_it_writes, smtsched};

const CHROMIUM: &str = "chromium-headless-shell";

/// Renders `html` to a PNG with headless Chromium; returns the browser's console messages.
fn render(html: &Path, png: &Path) -> Vec<String> {
    let out = Command::new(CHROMIUM)
        .args([
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,1600",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("{CHROMIUM}: {e} (install Debian's chromium-headless-shell, as .ci/run does)")
        });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// Distinct colours of a PNG's pixels (RGB), up to a few.
fn colours(png: &Path) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let mut seen = std::collections::BTreeSet::new();
    for px in buf[..info.buffer_size()].chunks(channels) {
        seen.insert((px[0], px[1], px[2]));
        if seen.len() > 16 {
            break;
        }
    }
    seen.len()
}

#[test]
fn the_console_check_sees_a_broken_page() {
    // The check below is only as good as its detector: a page with a script error must fail it.
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("bad.html");
    std::fs::write(
        &html,
        "<!DOCTYPE html><html><body><p>x</p><script>nosuchfn();</script></body></html>",
    )
    .unwrap();
    let console = render(&html, &dir.path().join("bad.png"));
    assert!(
        console.iter().any(|l| l.contains("nosuchfn")),
        "{console:?}"
    );
}

#[test]
fn reproduce_all_writes_a_report_that_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = smtsched(
        d,
        &[
            "reproduce",
            "all",
            "--only",
            "thesis-set-a,thesis-http",
            "--max-repetitions",
            "3",
            "-o",
            "rep",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rep = d.join("rep");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rep.join("report.json")).unwrap()).unwrap();
    let experiments = v["experiments"].as_array().unwrap();
    assert_eq!(experiments.len(), 2);
    // The counts at the top are the experiments' claims by verdict (set A has 4, Table 5.3 4).
    let claims: Vec<&serde_json::Value> = experiments
        .iter()
        .flat_map(|e| e["claims"].as_array().unwrap())
        .collect();
    assert_eq!(claims.len(), 8);
    for (key, verdict) in [
        ("holds", "holds"),
        ("does_not_hold", "does-not-hold"),
        ("inconclusive", "inconclusive"),
    ] {
        let n = claims.iter().filter(|c| c["verdict"] == verdict).count();
        assert_eq!(v["counts"][key], n, "{key}");
    }
    // Each claim carries what it rests on as numbers, the same fields for a policies and a
    // configurations experiment: a claim that holds has every interval measured, and its
    // evidence line shows each one's mean to three places.
    for c in &claims {
        let quantities = c["quantities"].as_array().unwrap();
        assert!(!quantities.is_empty(), "{c}");
        for q in quantities {
            assert!(!q["of"].as_str().unwrap().is_empty(), "{c}");
            if c["verdict"] == "holds" {
                let i = &q["interval"];
                let (lo, mean, hi) = (i["lo"].as_f64(), i["mean"].as_f64(), i["hi"].as_f64());
                let (lo, mean, hi) = (lo.unwrap(), mean.unwrap(), hi.unwrap());
                assert!(lo <= mean && mean <= hi, "{c}");
                let shown = format!("{mean:.3}");
                assert!(c["evidence"].as_str().unwrap().contains(&shown), "{c}");
            }
        }
    }
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    // Self-contained: no external resources; the results embedded.
    for external in ["src=\"http", "href=\"http", "<link", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    assert!(html.contains("<svg"));
    // The raw results in the page are report.json's, value for value.
    let (_, embedded) = html
        .split_once("type=\"application/json\" id=\"results\">")
        .unwrap();
    let (embedded, _) = embedded.split_once("</script>").unwrap();
    let embedded: serde_json::Value =
        serde_json::from_str(&embedded.replace("<\\/", "</")).unwrap();
    assert_eq!(embedded, v);
    let top = format!("{} hold</span>", v["counts"]["holds"]);
    assert!(html.contains(&top), "{top}");
    // Each experiment's entry in the contents counts its claims by verdict (a verdict it has none
    // of is not shown).
    for e in experiments {
        let entry = format!("<li><a href=\"#{}\">", e["name"].as_str().unwrap());
        let line = html
            .lines()
            .find(|l| l.starts_with(&entry))
            .expect("listed");
        for (label, verdict) in [
            ("holds", "holds"),
            ("does not hold", "does-not-hold"),
            ("inconclusive", "inconclusive"),
        ] {
            let n = e["claims"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["verdict"] == verdict)
                .count();
            assert_eq!(line.contains(&format!("{label}: {n}<")), n > 0, "{line}");
            assert_eq!(line.contains(&format!("{label}:")), n > 0, "{line}");
        }
    }
    // The paper's findings and the departures from them are in the open, after the claims and
    // before the collapsed tables, as the experiment file states them.
    let http = include_str!("../../../experiments/thesis-http.toml");
    let http: toml::Value = toml::from_str(http).unwrap();
    let section = html.split("<section id=\"thesis-http\">").nth(1).unwrap();
    let open = section.split("<details>").next().unwrap();
    for (heading, list) in [
        ("<h3>The paper (", "findings"),
        (
            "<h3>Where this simulation departs from what was measured</h3>",
            "departures",
        ),
    ] {
        assert!(open.contains(heading), "{heading}: {open}");
        for item in http["paper"][list].as_array().unwrap() {
            let item = item
                .as_str()
                .unwrap()
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('\'', "&#39;");
            assert!(open.contains(&format!("<li>{item}</li>")), "{item}");
        }
    }
    assert!(std::fs::metadata(rep.join("report.html")).unwrap().len() < 5 << 20);
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("## thesis-set-a") && md.contains("## thesis-http"));
    // Its top has the table of each experiment's claims by verdict, as the run printed it.
    for e in experiments {
        let name = e["name"].as_str().unwrap();
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .expect("a row per experiment");
        let counts: Vec<usize> = row
            .split_whitespace()
            .skip(1)
            .take(3)
            .map(|n| n.parse().unwrap())
            .collect();
        let n = |verdict: &str| {
            e["claims"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["verdict"] == verdict)
                .count()
        };
        assert_eq!(
            counts,
            [n("holds"), n("does-not-hold"), n("inconclusive")],
            "{row}"
        );
    }
    // A real browser renders it: no console message, and a screenshot that is not blank.
    let png = d.join("report.png");
    let console = render(&rep.join("report.html"), &png);
    assert!(console.is_empty(), "{console:?}");
    assert!(colours(&png) > 4, "the screenshot is (nearly) one colour");
}

/// The figure of `html` whose caption contains `caption`: its SVG.
fn figure<'a>(html: &'a str, caption: &str) -> &'a str {
    let at = html
        .find(caption)
        .unwrap_or_else(|| panic!("no figure captioned {caption:?}"));
    // A figure is its SVG, then its caption.
    let start = html[..at].rfind("<svg").expect("an SVG before the caption");
    &html[start..at]
}

/// The points of each line an SVG draws in `stroke` (a series' colour, not the grid's), as
/// (x, y) pixels.
fn polylines(svg: &str, stroke: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polyline")
        .skip(1)
        .filter(|p| p.contains(&format!("stroke=\"{stroke}\"")))
        .map(|p| {
            let (_, rest) = p.split_once("points=\"").unwrap();
            let (points, _) = rest.split_once('"').unwrap();
            points
                .split_whitespace()
                .map(|xy| {
                    let (x, y) = xy.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// The plots a reader of the seed papers looks for: the pairs' system speedups as the thesis's
/// box plots (Figs. 3.2, 3.6) and distribution (Fig. 3.4), the asymmetry study's distribution of
/// best over worst (Fig. 3.19), and Fedorova's IPC and L2 miss ratio by L2 size (Figs. 4, 5).
#[test]
fn the_report_draws_the_papers_plots_of_pairs_groups_of_four_and_the_l2_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("p.toml"),
        "name = \"p\"\ntitle = \"t\"\nkind = \"pairs\"\nmachine = \"northwood\"\n\
         repetitions = 1\nmax_repetitions = 1\n\
         workloads = [\"gzip-like\", \"mcf-like\", \"swim-like\"]\n\
         [pairs]\nplacements = [\"siblings\", \"cores\"]\nwarmup_instructions = 100000\n\
         measure_instructions = 200000\n",
    )
    .unwrap();
    let asymmetry = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/thesis-asymmetry.toml"),
    )
    .unwrap();
    let four = "workloads = [\"gzip-like\", \"mcf-like\", \"eon-like\", \"swim-like\"]";
    let asymmetry: String = asymmetry
        .lines()
        .map(|l| match l {
            l if l.starts_with("name =") => "name = \"a\"",
            l if l.starts_with("workloads =") => four,
            l => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(d.join("a.toml"), asymmetry).unwrap();
    // Fedorova's L2 sweep, two sizes of a small mix.
    std::fs::write(
        d.join("l.toml"),
        "name = \"l\"\ntitle = \"t\"\nkind = \"fedorova-l2\"\nmachine = \"cmt-fedorova\"\n\
         set = [\"topology.cores_per_package=2\"]\nrepetitions = 1\nmax_repetitions = 1\n\
         baseline = \"linux24\"\n\
         workloads = [\"gzip-like\", \"art-like\", \"crafty-like\", \"mcf-like\"]\n\
         [cmt]\nl2_sizes = [49152, 393216]\ncopies = 1\nwarmup_cycles = 50000\n\
         measure_cycles = 200000\nsamples = 2\nwindow_instructions = 1000000\nos_seconds = 2.0\n",
    )
    .unwrap();
    let o = smtsched(
        d,
        &[
            "reproduce",
            "all",
            "--only",
            "p.toml,a.toml,l.toml",
            "-o",
            "rep",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("rep/report.html")).unwrap();
    // Box plots: a box per subject and placement (3 x 2), each filled and outlined, on the
    // background, and a legend swatch (filled and outlined) per placement.
    let boxes = figure(&html, "(thesis Figs. 3.2 and 3.6)");
    assert_eq!(
        boxes.matches("<rect").count(),
        1 + 3 * 2 * 2 + 2 * 2,
        "{boxes}"
    );
    for name in ["gzip", "mcf", "swim", "siblings", "cores"] {
        assert!(
            boxes.contains(&format!(">\n{name}\n</text>")),
            "{name}: {boxes}"
        );
    }
    // Distributions: per placement a step at each of the 6 pairs (two corners each), rising
    // (y pixels fall) from the bottom to the top of the plot.
    // (The first two Okabe-Ito colours; each placement's legend mark is a two-point line.)
    let cdf = figure(&html, "(thesis Fig. 3.4)");
    let lines: Vec<Vec<(f64, f64)>> = ["#0072B2", "#E69F00"]
        .iter()
        .map(|colour| {
            let mut l: Vec<_> = polylines(cdf, colour)
                .into_iter()
                .filter(|l| l.len() > 2)
                .collect();
            assert_eq!(l.len(), 1, "{colour}: {cdf}");
            l.remove(0)
        })
        .collect();
    for l in &lines {
        assert_eq!(l.len(), 12);
        assert!(
            l.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 <= w[0].1),
            "{l:?}"
        );
    }
    // Both start at a share of 0 and end at 1: the same heights, the end above the start.
    let ends = |l: &Vec<(f64, f64)>| (l[0].1, l[l.len() - 1].1);
    assert_eq!(ends(&lines[0]), ends(&lines[1]));
    assert!(ends(&lines[0]).1 < ends(&lines[0]).0);
    // One group of four: one step, from none of the groups to all of them.
    let groups = figure(&html, "(thesis Fig. 3.19)");
    let steps = polylines(groups, "#0072B2");
    assert_eq!(steps.len(), 1, "{groups}");
    assert_eq!(steps[0].len(), 2);
    let ((x0, y0), (x1, y1)) = (steps[0][0], steps[0][1]);
    assert!(x0 == x1 && y1 < y0, "{steps:?}");
    // The L2 sweep: a marked point per size, named on the x axis, higher where report.json's
    // value is higher (Figs. 4 and 5).
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rep/report.json")).unwrap()).unwrap();
    let sizes = v["experiments"][2]["result"]["first_seed"]["result"]
        .as_array()
        .unwrap();
    for (caption, field) in [("Fig. 4)", "ipc"), ("Fig. 5)", "l2_miss_ratio")] {
        let svg = figure(&html, caption);
        let heights: Vec<f64> = svg
            .split("<circle")
            .skip(1)
            .map(|c| {
                let (_, rest) = c.split_once("cy=\"").unwrap();
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(heights.len(), 2, "{svg}");
        let value = |i: usize| sizes[i]["policies"][0]["perf"][field].as_f64().unwrap();
        // y pixels grow downwards.
        assert_eq!(
            value(1) > value(0),
            heights[1] < heights[0],
            "{field}: {svg}"
        );
        for name in ["48 KB", "384 KB"] {
            assert!(
                svg.contains(&format!(">\n{name}\n</text>")),
                "{name}: {svg}"
            );
        }
    }
    let png = d.join("report.png");
    let console = render(&d.join("rep/report.html"), &png);
    assert!(console.is_empty(), "{console:?}");
}

/// `report.json` without its timings and how it was run (the parts two runs of the same
/// experiments differ in).
fn untimed(path: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("continued_experiments");
    v.as_object_mut().unwrap().remove("seconds");
    v.as_object_mut().unwrap().remove("wall_seconds");
    v.as_object_mut().unwrap().remove("cpu_seconds");
    for e in v["experiments"].as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("seconds");
        e.as_object_mut().unwrap().remove("cpu_seconds");
    }
    v
}

#[test]
fn shards_of_one_seed_merge_with_their_unbounded_intervals() {
    // At one seed a claim's interval is unbounded, which JSON writes as null: the shards must
    // read it back, and the merged report must equal the whole run's.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |extra: &[&str]| {
        let mut args = vec!["reproduce", "all", "--only", "fedorova-cpi"];
        args.extend(["--repetitions", "1", "--max-repetitions", "1"]);
        args.extend(extra);
        let o = smtsched(d, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&["-o", "whole"]);
    run(&["--shard", "1/1", "-o", "s1.json"]);
    let o = smtsched(
        d,
        &["reproduce", "all", "--merge", "s1.json", "-o", "merged"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let whole = untimed(&d.join("whole/report.json"));
    assert_eq!(untimed(&d.join("merged/report.json")), whole);
    let claims = whole["experiments"][0]["claims"].as_array().unwrap();
    assert!(!claims.is_empty());
    for c in claims {
        assert_eq!(c["verdict"], "inconclusive", "{c}");
        let i = &c["quantities"][0]["interval"];
        assert_eq!(
            (i["n"].as_u64(), &i["lo"], &i["hi"]),
            (Some(1), &serde_json::Value::Null, &serde_json::Value::Null),
            "{c}"
        );
    }
}

/// User and system CPU time of this process's finished children, from the kernel.
fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

#[test]
fn reproduce_all_in_shards_or_stopped_and_continued_gives_the_report_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let only = "thesis-http,thesis-kernel-build,thesis-desktop";
    let run = |extra: &[&str]| {
        let mut args = vec!["reproduce", "all", "--only", only, "--max-repetitions", "2"];
        args.extend(extra);
        let o = smtsched(d, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let before = children_cpu_seconds();
    run(&["-o", "whole"]);
    let used = children_cpu_seconds() - before;
    run(&["--shard", "2/2", "-o", "s2.json"]);
    run(&["--shard", "1/2", "-o", "s1.json"]);
    // A shard of two experiments kept the first beside its file until the file was written.
    assert!(!d.join("s1.json.progress").exists());
    // Shard 1 of 2 took experiments 1 and 3, shard 2 experiment 2.
    let s1: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("s1.json")).unwrap()).unwrap();
    let places: Vec<u64> = s1["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o[0].as_u64().unwrap())
        .collect();
    assert_eq!(places, [0, 2]);
    let o = smtsched(
        d,
        &[
            "reproduce",
            "all",
            "--merge",
            "s2.json",
            "s1.json",
            "-o",
            "merged",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        untimed(&d.join("merged/report.json")),
        untimed(&d.join("whole/report.json"))
    );
    // One run knows its wall time; merged shards, which ran apart, have none to claim.
    let json = |dir: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(d.join(dir).join("report.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    assert!(json("whole")["wall_seconds"].as_f64().unwrap() > 0.0);
    assert!(json("merged")["wall_seconds"].is_null());
    // Each experiment's CPU time is its own threads': more than none, adding up to the total,
    // which is no more than the kernel counted for the run (and for whatever other test's
    // children ended meanwhile).
    let whole = json("whole");
    let cpu: Vec<f64> = whole["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["cpu_seconds"].as_f64().unwrap())
        .collect();
    assert!(cpu.iter().all(|&c| c > 0.0), "{cpu:?}");
    let total = whole["cpu_seconds"].as_f64().unwrap();
    assert!((total - cpu.iter().sum::<f64>()).abs() < 1e-6 * total);
    assert!(total <= used + 0.01, "{total} CPU s reported, {used} used");
    stopped_and_continued(d, only, &untimed(&d.join("whole/report.json")));
    let md = std::fs::read_to_string(d.join("merged/report.md")).unwrap();
    // (The shards' CPU time is their own, not the whole run's.)
    let merged = json("merged")["cpu_seconds"].as_f64().unwrap();
    let took = format!("(merged shards, {merged:.0} CPU s; the experiments' own times add up to");
    assert!(md.contains(&took), "{md}");
    let md = std::fs::read_to_string(d.join("whole/report.md")).unwrap();
    let took = format!("s wall clock, {total:.0} CPU s; the experiments ran side by side");
    assert!(md.contains(&took), "{md}");
    // Shards of another run (another seed), a missing shard or one given twice never merge.
    run(&["--seed", "2", "--shard", "2/2", "-o", "t2.json"]);
    for (files, says) in [
        (
            vec!["s1.json", "t2.json"],
            "t2.json: not a shard of the run s1.json is of: --seed 2 (not --seed 1)",
        ),
        (vec!["s1.json"], "shard 2/2 is missing"),
        (vec!["s1.json", "s1.json", "s2.json"], "shard 1/2 again"),
    ] {
        let mut args = vec!["reproduce", "all", "--merge"];
        args.extend(files);
        args.extend(["-o", "bad"]);
        let o = smtsched(d, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
    assert!(!d.join("bad").exists());
    // A shard needs a file to write; a shard 3/2 is no shard.
    for (args, says) in [
        (
            vec!["reproduce", "all", "--shard", "1/2"],
            "--shard needs -o",
        ),
        (
            vec!["reproduce", "all", "--shard", "3/2", "-o", "x.json"],
            "3/2",
        ),
    ] {
        let o = smtsched(d, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// How many items a progress journal keeps whole: its lines after the first (a last line cut
/// short by SIGKILL does not count).
fn kept_items(journal: &Path) -> usize {
    let text = std::fs::read_to_string(journal).unwrap();
    text.matches('\n').count() - 1
}

/// A run of `only` killed (SIGKILL, no chance to tidy up) once it has kept an experiment, then
/// started again, continues: it runs only what was left and writes `whole`'s report, and nothing
/// of the continuation is left beside it. What another run left is set aside, and a file of the
/// same name that is not ours is refused before any work.
fn stopped_and_continued(d: &Path, only: &str, whole: &serde_json::Value) {
    let args = ["reproduce", "all", "--only", only, "--max-repetitions", "2"];
    let kept = d.join("cont/reproduce-progress.json");
    killed_once_it_writes(d, &[&args[..], &["-o", "cont"]].concat(), &kept);
    let earlier = kept_items(&kept);
    assert!((1..3).contains(&earlier), "{earlier} kept");
    // Another build's experiments (here: the journal's build edited) are not continued.
    std::fs::create_dir(d.join("other")).unwrap();
    let journal = std::fs::read_to_string(&kept).unwrap();
    let build = serde_json::from_str::<serde_json::Value>(journal.lines().next().unwrap()).unwrap()
        ["build"]
        .as_str()
        .unwrap()
        .to_string();
    let rebuilt = journal.replacen(&build, "0000000000000000", 1);
    std::fs::write(d.join("other/reproduce-progress.json"), rebuilt).unwrap();
    let http_into_other = [
        "reproduce",
        "all",
        "--only",
        "thesis-http",
        "--max-repetitions",
        "2",
        "-o",
        "other",
    ];
    let o = smtsched(d, &http_into_other);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let set_aside = "other/reproduce-progress.json: experiment(s) of another build of smtsched: \
                     starting afresh";
    assert!(err.contains(set_aside), "{err}");
    // Another run (here: of other experiments) does not continue what it finds kept.
    std::fs::copy(&kept, d.join("other/reproduce-progress.json")).unwrap();
    let o = smtsched(d, &http_into_other);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let set_aside =
        "other/reproduce-progress.json: experiment(s) of another run (other experiments";
    assert!(
        err.contains(set_aside) && err.contains("starting afresh"),
        "{err}"
    );
    assert_eq!(err.matches(" claim(s), ").count(), 1, "{err}");
    assert!(!d.join("other/reproduce-progress.json").exists());
    let o = smtsched(d, &[&args[..], &["-o", "cont"]].concat());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "continuing: {earlier} of 3 experiment(s) finished earlier"
        )),
        "{err}"
    );
    // Only what was left ran, each announced at its place in the whole run (`[2/3]`).
    assert_eq!(err.matches(" claim(s), ").count(), 3 - earlier, "{err}");
    for (k, name) in only.split(',').enumerate() {
        if err.contains(&format!("] {name} ...")) {
            let place = format!("[{}/3] {name} ...", k + 1);
            assert!(err.contains(&place), "{place}: {err}");
        }
    }
    let report = d.join("cont/report.json");
    assert_eq!(&untimed(&report), whole);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(json["wall_seconds"].is_null());
    assert_eq!(json["continued_experiments"].as_u64(), Some(earlier as u64));
    let mut names: Vec<String> = std::fs::read_dir(d.join("cont"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["report.html", "report.json", "report.md"]);
    // A file of that name that is not a progress file is the user's: refused, left as it was.
    std::fs::write(&kept, "mine\n").unwrap();
    let o = smtsched(d, &[&args[..], &["-o", "cont"]].concat());
    assert_bad_input(&o, &["cont/reproduce-progress.json: not a progress file"]);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "mine\n");
}

#[test]
fn reproduce_all_on_a_one_node_slurm_cluster_writes_the_report_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // An experiment (USENIX set A, cut short) and the estimator its plan3 uses, named as files
    // relative to where the script is written; the jobs start in `out` (their --chdir) and
    // find them all the same.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let set_a = std::fs::read_to_string(repo.join("experiments/usenix05-set-a.toml")).unwrap();
    let set_a = set_a
        .replace("duration_s = 3600", "duration_s = 2")
        .replace(r#""basic", "tryhard", "plan3", "ipc""#, r#""plan3""#)
        .replace(r#"than = "tryhard""#, r#"than = "plan3""#);
    assert!(set_a.contains(r#"policies = ["naive", "plan3"]"#) && set_a.contains("= 2\n"));
    assert!(
        !set_a.contains("tryhard\""),
        "a claim of a policy not run is refused"
    );
    std::fs::write(d.join("set-a.toml"), set_a).unwrap();
    std::fs::create_dir(d.join("models")).unwrap();
    let model = "models/northwood.toml";
    std::fs::copy(repo.join(model), d.join(model)).unwrap();
    let only = [
        "--only",
        "set-a.toml,thesis-kernel-build",
        "--max-repetitions",
        "2",
        "--estimator",
        model,
    ];
    let mut whole = vec!["reproduce", "all", "-o", "whole"];
    whole.extend(only);
    assert!(smtsched(d, &whole).status.success());
    // `out` was used before with 3 shards: its shard-3.json is no shard of this submission.
    let mut stale = vec![
        "reproduce",
        "all",
        "--shard",
        "3/3",
        "-o",
        "out/shard-3.json",
    ];
    stale.extend(only);
    std::fs::create_dir(d.join("out")).unwrap();
    assert!(smtsched(d, &stale).status.success());
    // A real cluster: where Slurm cannot start, this fails and says why.
    let cluster = util::slurm::SlurmCluster::start(&d.join("slurm"))
        .unwrap_or_else(|e| panic!("a one-node Slurm cluster did not start: {e}"));
    let mut script = vec![
        "reproduce",
        "all",
        "--slurm",
        "--shards",
        "2",
        "--dir",
        "out",
    ];
    script.extend(only);
    script.extend(["-o", "submit.sh"]);
    let o = smtsched(d, &script);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The script names its directory absolutely: it runs from anywhere.
    let script = d.join("submit.sh");
    cluster
        .run("sh", &[script.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    cluster
        .wait_idle(std::time::Duration::from_secs(300))
        .unwrap_or_else(|e| panic!("{e}"));
    let merged = d.join("out/report/report.json");
    let log = |f: &str| std::fs::read_to_string(d.join("out").join(f)).unwrap_or_default();
    assert!(
        merged.exists(),
        "no merged report:\n{}\n{}\n{}",
        log("shard-1.log"),
        log("merge.log"),
        cluster.logs()
    );
    assert_eq!(untimed(&merged), untimed(&d.join("whole/report.json")));
}

#[test]
fn sigterm_while_the_report_is_put_in_place_leaves_one_whole_set() {
    // strace delivers SIGTERM exactly as the second report file is renamed into place (the
    // moment a mixed set could be left). The signal takes effect once the set is in place: the
    // three files are the new run's (seed 2, over an older seed-1 report), and no temporary
    // file is left.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let only = [
        "reproduce",
        "all",
        "--only",
        "thesis-http",
        "--max-repetitions",
        "2",
    ];
    let o = smtsched(d, &[&only[..], &["-o", "rep"]].concat());
    assert!(o.status.success());
    ended_by_sigterm_at_rename(
        d,
        &[&only[..], &["--seed", "2", "-o", "rep"]].concat(),
        true,
        2,
    );
    let rep = d.join("rep");
    let mut names: Vec<String> = std::fs::read_dir(&rep)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["report.html", "report.json", "report.md"]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rep.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["seed"], 2);
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    assert!(
        html.contains("\"seed\":2,"),
        "report.html is not the seed-2 run's"
    );
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    assert!(md.contains("seed 2"), "{md}");
}

#[test]
fn a_report_directory_that_cannot_be_made_is_refused_before_any_experiment_runs() {
    // Like any output file's, the report directory's parent must exist (nothing is made on the
    // way), it must not be a file, and it must be creatable where the user points (/proc takes
    // no directories, even for root): each is one line, exit 2, before the work.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("afile"), "").unwrap();
    std::os::unix::fs::symlink("no-such-dir", d.join("dangling")).unwrap();
    for (out, says) in [
        ("no/such/rep", "-o no/such/rep: no directory no/such"),
        ("afile", "-o afile: not a directory"),
        (
            "/proc/smtsched-report",
            "-o /proc/smtsched-report: cannot be made",
        ),
        (
            "dangling",
            "-o dangling: a link to no-such-dir, which leads nowhere",
        ),
    ] {
        let o = smtsched(
            d,
            &["reproduce", "all", "--only", "thesis-set-a", "-o", out],
        );
        assert_bad_input(&o, &[says]);
    }
    // An experiment named twice would count its claims twice.
    let twice = [
        "reproduce",
        "all",
        "--only",
        "thesis-set-a,thesis-set-a",
        "-o",
        "rep",
    ];
    assert_bad_input(
        &smtsched(d, &twice),
        &["--only: thesis-set-a is named twice"],
    );
    // Mistakes in an experiment file that only running it would meet are found before the
    // first experiment runs, named with the file: an unknown workload in a configuration, a
    // claim comparing a policy that does not run, another experiment of the same name.
    let http = include_str!("../../../experiments/thesis-http.toml");
    let set_b = include_str!("../../../experiments/usenix05-set-b.toml");
    let mistakes = [
        (
            "w.toml",
            http.replacen("name = \"thesis-http\"", "name = \"w\"", 1)
                .replace("apache13-bulk-like", "apache13-bulk"),
            "w.toml: config \"UP\": unknown workload \"apache13-bulk\"",
        ),
        (
            "p.toml",
            set_b
                .replacen("name = \"usenix05-set-b\"", "name = \"p\"", 1)
                .replacen("higher = \"plan3\"", "higher = \"plan\"", 1),
            "p.toml: paper.claim[0].higher = \"plan\": not one of the policies run",
        ),
        (
            "thesis-http.toml",
            http.to_string(),
            "--only: thesis-http.toml is another experiment named thesis-http",
        ),
        // Claims that could never be decided, or would be decided whatever is measured.
        (
            "s.toml",
            set_b
                .replacen("name = \"usenix05-set-b\"", "name = \"s\"", 1)
                .replacen("higher = \"plan3\"", "higher = \"naive\"", 1),
            "s.toml: paper.claim[0]: higher = than = \"naive\"",
        ),
        (
            "h.toml",
            set_b
                .replacen("name = \"usenix05-set-b\"", "name = \"h\"", 1)
                .replacen("than = \"naive\"", "", 1),
            "h.toml: paper.claim[0]: give `higher` and `than`",
        ),
        (
            "r.toml",
            http.replacen("name = \"thesis-http\"", "name = \"r\"", 1)
                .replacen("ratio = [\"1xHTP\", \"UP\"]", "ratio = [\"UP\", \"UP\"]", 1),
            "r.toml: configurations: claim[0].ratio: \"UP\" over itself",
        ),
        // A field of another kind would be ignored; so would a duration no run can reach.
        (
            "k.toml",
            set_b.replacen("name = \"usenix05-set-b\"", "name = \"k\"", 1)
                + "\n[cmt]\nwarmup_cycles = 5\n",
            "k.toml: cmt: an experiment of kind \"policies\" has none",
        ),
        (
            "d.toml",
            set_b
                .replacen("name = \"usenix05-set-b\"", "name = \"d\"", 1)
                .replacen("duration_s = ", "duration_s = 1e300 # ", 1),
            "d.toml: duration_s: 1e300: must be above 0 and at most 1e6",
        ),
    ];
    for (file, text, says) in mistakes {
        std::fs::write(d.join(file), text).unwrap();
        let list = format!("thesis-http,{file}");
        let o = smtsched(d, &["reproduce", "all", "--only", &list, "-o", "rep"]);
        assert_bad_input(&o, &[says]);
        std::fs::remove_file(d.join(file)).unwrap();
    }
    // `--policies` that leaves out a policy a claim names, and an over-long duration.
    let set_a = ["reproduce", "thesis-set-a", "--repetitions", "1"];
    assert_bad_input(
        &smtsched(d, &[&set_a[..], &["--policies", "naive,plan"]].concat()),
        &[
            "paper.claim[1].than = \"tryhard\"",
            "(--policies: naive, plan)",
        ],
    );
    assert_bad_input(
        &smtsched(d, &[&set_a[..], &["--duration", "2e6"]].concat()),
        &["--duration 2000000", "at most 1000000"],
    );
    // A report file that is a directory would be found only once everything had run.
    std::fs::create_dir_all(d.join("rep/report.md")).unwrap();
    assert_bad_input(
        &smtsched(
            d,
            &["reproduce", "all", "--only", "thesis-http", "-o", "rep"],
        ),
        &["rep/report.md: is a directory"],
    );
    std::fs::remove_dir_all(d.join("rep")).unwrap();
    let mut left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["afile", "dangling"], "nothing made");
    assert!(
        !d.join("no-such-dir").exists(),
        "nothing made through the link"
    );
}

#[test]
fn a_signal_the_caller_ignores_stays_ignored_while_the_report_is_put_in_place() {
    // A background job of a script, or `trap '' TERM`, starts the command with SIGTERM ignored:
    // holding signals back around the report's writes must not turn that into "terminate".
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "trap '' TERM; exec strace -f -o /dev/null -e inject=rename:signal=SIGTERM:when=2 '{}' \
         reproduce all --only thesis-http --max-repetitions 2 -o rep",
        env!("CARGO_BIN_EXE_smtsched")
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("rep/report.json").is_file());
}
