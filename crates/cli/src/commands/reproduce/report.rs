//! The report of `reproduce all`: `report.html` (one self-contained file: inline SVG, no
//! external assets, the raw results embedded as JSON), `report.md` and `report.json`, with the
//! counts of claims that hold, do not hold and are inconclusive at the top, and per experiment
//! its claims, tables, figures, machine, seed and time; and the summary printed.

use super::super::write_files_then;
use anyhow::Result;
use serde::Serialize;
use smtsched_experiments::run::{ClaimOutcome, Outcome, PaperNotes};
use smtsched_report::verdict::Verdict;
use smtsched_report::Table;
use std::path::Path;

#[derive(Serialize)]
struct Counts {
    holds: usize,
    does_not_hold: usize,
    inconclusive: usize,
}

/// What `reproduce all` found: the counts of claims, then each experiment's.
#[derive(Serialize)]
pub struct Report<'a> {
    format: &'static str,
    version: &'static str,
    seed: u64,
    /// The experiments' own times added up (they run side by side, so more than the wall time).
    seconds: f64,
    /// The CPU time the experiments' own threads used, added up; `None` if one did not say.
    cpu_seconds: Option<f64>,
    /// The run's wall-clock time; `None` for merged shards, which ran apart, and for a run that
    /// continued an interrupted one.
    wall_seconds: Option<f64>,
    /// How many experiments a continued run took from the interrupted one (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    continued_experiments: Option<usize>,
    counts: Counts,
    experiments: Vec<ExperimentReport<'a>>,
}

#[derive(Serialize)]
struct ExperimentReport<'a> {
    name: &'a str,
    title: &'a str,
    source: &'a str,
    machine: &'a str,
    seconds: f64,
    cpu_seconds: Option<f64>,
    claims: &'a [ClaimOutcome],
    /// The paper's figure, findings and this simulation's departures, as the experiment states.
    paper: &'a PaperNotes,
    result: &'a serde_json::Value,
}

/// How the outcomes of a report were run.
#[derive(Clone, Copy, Debug)]
pub enum Ran {
    /// As one run, in this many seconds of wall-clock time.
    Together(f64),
    /// In shards, merged afterwards.
    InShards,
    /// Continuing an interrupted run, which had finished `earlier` of them.
    Continued { earlier: usize },
}

/// The report of `outcomes` (run from `seed` on, as `ran` says).
pub fn report(seed: u64, outcomes: &[Outcome], ran: Ran) -> Report<'_> {
    let count = |v: Verdict| {
        outcomes
            .iter()
            .flat_map(|o| &o.claims)
            .filter(|c| c.verdict == v)
            .count()
    };
    Report {
        format: "smtsched-reproduce-report-1",
        version: env!("CARGO_PKG_VERSION"),
        seed,
        // From +0: an empty float sum is -0, printed "-0 s" for an empty shard.
        seconds: outcomes.iter().fold(0.0, |s, o| s + o.seconds),
        cpu_seconds: outcomes
            .iter()
            .try_fold(0.0, |s, o| o.cpu_seconds.map(|c| s + c)),
        wall_seconds: match ran {
            Ran::Together(w) => Some(w),
            _ => None,
        },
        continued_experiments: match ran {
            Ran::Continued { earlier } => Some(earlier),
            _ => None,
        },
        counts: Counts {
            holds: count(Verdict::Holds),
            does_not_hold: count(Verdict::DoesNotHold),
            inconclusive: count(Verdict::Inconclusive),
        },
        experiments: outcomes
            .iter()
            .map(|o| ExperimentReport {
                name: &o.name,
                title: &o.title,
                source: &o.source,
                machine: &o.machine,
                seconds: o.seconds,
                cpu_seconds: o.cpu_seconds,
                claims: &o.claims,
                paper: &o.paper,
                result: &o.json,
            })
            .collect(),
    }
}

/// The files of a report, in its directory.
pub const REPORT_FILES: [&str; 3] = ["report.html", "report.md", "report.json"];

/// Writes report.html, report.md and report.json into `dir`.
pub fn write_report(
    dir: &Path,
    report: &Report,
    outcomes: &[Outcome],
    after: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let json = serde_json::to_string_pretty(report)? + "\n";
    // The page embeds the same data without indentation: half the bytes (4.7 MB of pretty JSON
    // and figures would be near the 5 MB a report may take).
    let compact = serde_json::to_string(report)?;
    let texts = [
        html(report, outcomes, &compact),
        markdown(report, outcomes),
        json.clone(),
    ];
    let files: Vec<_> = REPORT_FILES
        .iter()
        .zip(texts)
        .map(|(name, text)| (dir.join(name), text))
        .collect();
    write_files_then(&files, after)
}

/// The counts of claims of every experiment, as printed.
pub fn summary_table(r: &Report) -> String {
    format!(
        "{} claims: {} hold, {} do not hold, {} inconclusive ({})\n\n{}",
        r.counts.holds + r.counts.does_not_hold + r.counts.inconclusive,
        r.counts.holds,
        r.counts.does_not_hold,
        r.counts.inconclusive,
        time_taken(r),
        verdict_table(r)
    )
}

/// Per experiment: its claims by verdict and its times.
fn verdict_table(r: &Report) -> String {
    let mut t = Table::new([
        "experiment",
        "holds",
        "does not hold",
        "inconclusive",
        "seconds",
        "CPU s",
    ]);
    for e in &r.experiments {
        let n = |v: Verdict| {
            e.claims
                .iter()
                .filter(|c| c.verdict == v)
                .count()
                .to_string()
        };
        t.row([
            e.name.to_string(),
            n(Verdict::Holds),
            n(Verdict::DoesNotHold),
            n(Verdict::Inconclusive),
            format!("{:.1}", e.seconds),
            cpu(e.cpu_seconds),
        ]);
    }
    t.render()
}

/// How long the run took: its wall time if it ran as one, the experiments' own times added up
/// (each experiment's is its wall time beside the others), and the CPU time they used.
fn time_taken(r: &Report) -> String {
    let used = match r.cpu_seconds {
        Some(c) => format!(", {c:.0} CPU s"),
        None => String::new(),
    };
    match (r.wall_seconds, r.continued_experiments) {
        (Some(w), _) if r.experiments.len() == 1 => format!("{w:.0} s wall clock{used}"),
        (Some(w), _) => format!(
            "{w:.0} s wall clock{used}; the experiments ran side by side, their own times adding up to {:.0} s",
            r.seconds
        ),
        (None, Some(earlier)) => format!(
            "continued after an interruption, {earlier} of {} experiment(s) run before it{used}; the experiments' own times add up to {:.0} s",
            r.experiments.len(),
            r.seconds
        ),
        (None, None) => format!(
            "merged shards{used}; the experiments' own times add up to {:.0} s",
            r.seconds
        ),
    }
}

/// The paper's findings and this simulation's departures from them, in the open beside the
/// claims (the tables below repeat them with the results).
fn paper_html(p: &PaperNotes) -> String {
    let list = |items: &[String]| -> String {
        items
            .iter()
            .map(|i| format!("<li>{}</li>\n", esc(i)))
            .collect()
    };
    let mut html = String::new();
    if !p.findings.is_empty() {
        html.push_str(&format!(
            "<h3>The paper ({})</h3>\n<ul class=\"paper\">\n{}</ul>\n",
            esc(&p.figure),
            list(&p.findings)
        ));
    }
    if !p.departures.is_empty() {
        html.push_str(&format!(
            "<h3>Where this simulation departs from what was measured</h3>\n<ul class=\"paper\">\n{}</ul>\n",
            list(&p.departures)
        ));
    }
    html
}

/// An experiment's CPU time as a table shows it ("-" if unknown).
fn cpu(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "-".to_string(), |c| format!("{c:.1}"))
}

/// An experiment's wall and CPU time, as its heading shows them.
fn took(o: &Outcome) -> String {
    format!("{:.1} s ({} CPU s)", o.seconds, cpu(o.cpu_seconds))
}

fn markdown(r: &Report, outcomes: &[Outcome]) -> String {
    let mut md = format!(
        "# smtsched reproduce all\n\nsmtsched {}, seed {} ({}). Claims: **{} hold**, **{} do \
         not hold**, **{} inconclusive**.\n\n",
        r.version,
        r.seed,
        time_taken(r),
        r.counts.holds,
        r.counts.does_not_hold,
        r.counts.inconclusive
    );
    md.push_str(&format!("```text\n{}```\n\n", verdict_table(r)));
    for o in outcomes {
        md.push_str(&format!(
            "## {} — {}\n\nSource: {}. Machine {}, {}.\n\n",
            o.name,
            o.title,
            o.source,
            o.machine,
            took(o)
        ));
        for c in &o.claims {
            md.push_str(&format!("- {}\n", c.evidence));
        }
        md.push_str(&format!("\n```text\n{}\n```\n\n", o.text.trim_end()));
    }
    md
}

/// Text safe inside HTML elements and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::DoesNotHold => "fails",
        Verdict::Inconclusive => "open",
    }
}

/// An experiment's claims by verdict, for the contents: a chip per verdict that occurs.
fn tally(claims: &[ClaimOutcome]) -> String {
    [
        (Verdict::Holds, "holds"),
        (Verdict::DoesNotHold, "does not hold"),
        (Verdict::Inconclusive, "inconclusive"),
    ]
    .iter()
    .filter_map(|&(v, label)| {
        let n = claims.iter().filter(|c| c.verdict == v).count();
        (n > 0).then(|| {
            format!(
                " <span class=\"{} tally\">{label}: {n}</span>",
                verdict_class(v)
            )
        })
    })
    .collect()
}

fn html(r: &Report, outcomes: &[Outcome], json: &str) -> String {
    let mut body = format!(
        "<h1>smtsched: which results of the seed papers the simulation reproduces</h1>\n<p class=\"meta\">smtsched {} · \
         seed {} · {}</p>\n<p class=\"counts\"><span class=\"holds\">{} hold</span> \
         <span class=\"fails\">{} do not hold</span> <span class=\"open\">{} inconclusive</span></p>\n<nav><ul>\n",
        esc(r.version),
        r.seed,
        esc(&time_taken(r)),
        r.counts.holds,
        r.counts.does_not_hold,
        r.counts.inconclusive
    );
    for o in outcomes {
        body.push_str(&format!(
            "<li><a href=\"#{0}\">{0}</a> — {1}{2}</li>\n",
            esc(&o.name),
            esc(&o.title),
            tally(&o.claims)
        ));
    }
    body.push_str("</ul></nav>\n");
    for o in outcomes {
        body.push_str(&format!(
            "<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n<p class=\"meta\">source: {} · \
             machine {} · {}</p>\n",
            esc(&o.name),
            esc(&o.name),
            esc(&o.title),
            esc(&o.source),
            esc(&o.machine),
            esc(&took(o))
        ));
        if !o.claims.is_empty() {
            body.push_str("<ul class=\"claims\">\n");
            for c in &o.claims {
                body.push_str(&format!(
                    "<li class=\"{}\">{}</li>\n",
                    verdict_class(c.verdict),
                    esc(&c.evidence)
                ));
            }
            body.push_str("</ul>\n");
        }
        body.push_str(&paper_html(&o.paper));
        for (caption, svg) in &o.figures {
            // An SVG document's own XML declaration is not allowed inline.
            let svg = svg.trim_start_matches(|c| c != '<');
            let svg = match svg.strip_prefix("<?xml") {
                Some(rest) => rest.split_once("?>").map_or(svg, |(_, s)| s.trim_start()),
                None => svg,
            };
            body.push_str(&format!(
                "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
                esc(caption)
            ));
        }
        body.push_str(&format!(
            "<details><summary>Tables</summary><pre>{}</pre></details>\n</section>\n",
            esc(&o.text)
        ));
    }
    // `</` would end the script element early.
    let data = json.replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>smtsched \
         reproduce all</title>\n<style>\n{STYLE}</style></head>\n<body>\n{body}<script \
         type=\"application/json\" id=\"results\">{data}</script>\n</body></html>\n"
    )
}

const STYLE: &str =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
.meta{color:#555;font-size:90%}
.counts span{font-size:130%;font-weight:bold;margin-right:1em;padding:.2em .5em;border-radius:4px}
.holds{background:#e0f0ff}.fails{background:#ffe6d5}.open{background:#eee}
.tally{font-size:85%;padding:0 .4em;border-radius:3px;white-space:nowrap}
ul.claims li{margin:.3em 0;padding:.2em .5em;border-radius:3px;list-style:none}
pre{font-size:80%;overflow-x:auto;background:#f7f7f7;padding:.5em}
figure{margin:1em 0}svg{max-width:100%;height:auto}
section{border-top:1px solid #ccc;margin-top:2em}
h3{font-size:100%;margin:1em 0 .3em}ul.paper{margin-top:0;font-size:95%}
";
