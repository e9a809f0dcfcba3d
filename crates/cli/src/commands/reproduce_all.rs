//! `reproduce all [-o DIR]`: every experiment in turn, then one report — `report.html` (one
//! self-contained file: inline SVG, no external assets, the raw results embedded as JSON),
//! `report.md` and `report.json` — with the counts of claims that hold, do not hold and are
//! inconclusive at the top, and per experiment its claims, tables, figures, machine, seed and time.
//! As a sweep: `--shard I/N -o FILE` runs every N-th experiment, `--merge FILES -o DIR` writes the
//! report from every shard, `--slurm` writes a script that does both on a Slurm cluster.

use super::reproduce::{run_one, run_options};
use super::sweep::{absolute, executable, write_script};
use super::Bars;
use super::{out, write_file};
use crate::args::ReproduceArgs;
use crate::errors::bad_input;
use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;
use smtsched_experiments::experiment::Experiment;
use smtsched_experiments::experiment::{load_experiment, EXPERIMENTS};
use smtsched_experiments::run::{ClaimOutcome, Outcome};
use smtsched_experiments::shards::Shard;
use smtsched_experiments::slurm::{submit_script, SlurmPlan};
use smtsched_experiments::suite::{merge, read_shard, Suite, SuiteShard};
use smtsched_report::verdict::Verdict;
use smtsched_report::Table;
use std::path::Path;

#[derive(Serialize)]
struct Counts {
    holds: usize,
    does_not_hold: usize,
    inconclusive: usize,
}

#[derive(Serialize)]
struct Report<'a> {
    format: &'static str,
    version: &'static str,
    seed: u64,
    seconds: f64,
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
    claims: &'a [ClaimOutcome],
    result: &'a serde_json::Value,
}

pub fn run(a: &ReproduceArgs) -> Result<()> {
    if !a.merge.is_empty() {
        return merged(a);
    }
    let names: Vec<String> = match &a.only {
        Some(list) => list.split(',').map(|n| n.trim().to_string()).collect(),
        None => EXPERIMENTS.iter().map(|p| p.name.to_string()).collect(),
    };
    // Every experiment loads before any runs: a bad name costs nothing.
    let experiments = names
        .iter()
        .map(|n| load_experiment(n))
        .collect::<Result<Vec<_>, _>>()?;
    let suite = Suite::new(names, &run_options(a)?);
    if a.slurm {
        return slurm(a, &suite);
    }
    let output = a.output.as_deref();
    match (a.shard, output) {
        (Some(_), None) => return Err(bad_input("--shard needs -o FILE for its outcomes")),
        (Some(_), Some(f)) if !f.is_dir() => super::check_outputs([Some(f)])?,
        (Some(_), Some(f)) if f.is_dir() => {
            return Err(bad_input(format!(
                "-o {}: a directory; a shard writes one file",
                f.display()
            )))
        }
        (None, Some(d)) => {
            std::fs::create_dir_all(d).map_err(|e| bad_input(format!("-o {}: {e}", d.display())))?
        }
        _ => {}
    }
    let shard = a.shard.unwrap_or(Shard { index: 1, count: 1 });
    let total = suite.shard_items(shard).len();
    let mine: Vec<(usize, usize, Experiment)> = experiments
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.takes(*i))
        .enumerate()
        .map(|(n, (i, e))| (n, i, e))
        .collect();
    // Experiments run side by side, as many as the host has cores: most have serial stretches
    // (one seed's scheduler run, a merge of samples) that another experiment's work fills. Each
    // experiment's result does not depend on what runs beside it; they are kept in order.
    let multi = indicatif::MultiProgress::new();
    let started = std::time::Instant::now();
    let outcomes: Vec<(usize, Outcome)> = mine
        .into_par_iter()
        .with_max_len(1)
        .map(|(n, i, e)| {
            let bars = Bars::in_multi(&multi);
            bars.say(&format!("[{}/{total}] {} ...", n + 1, e.name));
            let o = run_one(e, a, &bars)?;
            bars.say(&format!(
                "[{}/{total}] {}: {} claim(s), {:.1} s",
                n + 1,
                o.name,
                o.claims.len(),
                o.seconds
            ));
            Ok((i, o))
        })
        .collect::<Result<_>>()?;
    eprintln!(
        "{} experiment(s) in {:.1} s",
        outcomes.len(),
        started.elapsed().as_secs_f64()
    );
    match (a.shard, output) {
        (Some(s), Some(f)) => {
            let file = SuiteShard::new(suite, s, outcomes);
            write_file(f, (serde_json::to_string(&file)? + "\n").as_bytes())?;
            let done: Vec<Outcome> = file.outcomes.into_iter().map(|(_, o)| o).collect();
            out(&summary_table(&report(a.seed, &done)))
        }
        _ => {
            let done: Vec<Outcome> = outcomes.into_iter().map(|(_, o)| o).collect();
            finish(a.seed, &done, output)
        }
    }
}

/// `--merge`: the shards' outcomes, then the report one run writes.
fn merged(a: &ReproduceArgs) -> Result<()> {
    let parts = a
        .merge
        .iter()
        .map(|f| Ok((f.display().to_string(), read_shard(f).map_err(bad_input)?)))
        .collect::<Result<Vec<_>>>()?;
    let (suite, outcomes) = merge(&parts).map_err(bad_input)?;
    let d = a.output.as_deref();
    if let Some(d) = d {
        std::fs::create_dir_all(d).map_err(|e| bad_input(format!("-o {}: {e}", d.display())))?;
    }
    // The shards' options decide the results (the suite records them); the merge runs nothing.
    finish(suite.seed, &outcomes, d)
}

/// The report of `outcomes`: written into `dir` if given, and its summary printed.
fn finish(seed: u64, outcomes: &[Outcome], dir: Option<&Path>) -> Result<()> {
    let r = report(seed, outcomes);
    if let Some(d) = dir {
        write_report(d, &r, outcomes)?;
    }
    out(&summary_table(&r))
}

/// `--slurm`: the submit script; its shards and merge run this executable with these options.
fn slurm(a: &ReproduceArgs, suite: &Suite) -> Result<()> {
    let (shards, dir) = (
        a.shards.expect("clap requires it"),
        a.dir.as_deref().expect("clap requires it"),
    );
    let exe = executable()?;
    let mut shard_command = vec![exe.clone(), "reproduce".into(), "all".into()];
    shard_command.extend(forwarded(a));
    shard_command.extend(["--only".into(), suite.experiments.join(",")]);
    let script = submit_script(&SlurmPlan {
        name: "smtsched-reproduce-all",
        shards,
        dir: &absolute(dir)?,
        shard_command: &shard_command,
        merge_command: &[exe, "reproduce".into(), "all".into(), "--merge".into()],
        merge_output: "report",
    });
    write_script(&script, a.output.as_deref())
}

/// The options a shard must run with, as flags.
fn forwarded(a: &ReproduceArgs) -> Vec<String> {
    let mut v = vec!["--seed".to_string(), a.seed.to_string()];
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(x) = value {
            v.extend([name.to_string(), x]);
        }
    };
    flag("--repetitions", a.repetitions.map(|x| x.to_string()));
    flag(
        "--max-repetitions",
        a.max_repetitions.map(|x| x.to_string()),
    );
    flag("--duration", a.duration.map(|x| x.to_string()));
    flag("--estimator", a.model.as_ref().map(|e| e.to_string()));
    flag("--baseline", a.baseline.map(|b| b.to_string()));
    let names =
        |p: &Vec<smtsched_os::PolicyName>| p.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    flag(
        "--policies",
        a.policies.as_ref().map(|p| names(p).join(",")),
    );
    v
}

fn report(seed: u64, outcomes: &[Outcome]) -> Report<'_> {
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
        seconds: outcomes.iter().map(|o| o.seconds).sum(),
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
                claims: &o.claims,
                result: &o.json,
            })
            .collect(),
    }
}

fn write_report(dir: &Path, report: &Report, outcomes: &[Outcome]) -> Result<()> {
    let json = serde_json::to_string_pretty(report)? + "\n";
    let files = [
        ("report.html", html(report, outcomes, &json)),
        ("report.md", markdown(report, outcomes)),
        ("report.json", json.clone()),
    ];
    for (name, text) in files {
        write_file(&dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

fn summary_table(r: &Report) -> String {
    let mut t = Table::new([
        "experiment",
        "holds",
        "does not hold",
        "inconclusive",
        "seconds",
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
        ]);
    }
    format!(
        "{} claims: {} hold, {} do not hold, {} inconclusive ({:.0} s)\n\n{}",
        r.counts.holds + r.counts.does_not_hold + r.counts.inconclusive,
        r.counts.holds,
        r.counts.does_not_hold,
        r.counts.inconclusive,
        r.seconds,
        t.render()
    )
}

fn markdown(r: &Report, outcomes: &[Outcome]) -> String {
    let mut md = format!(
        "# smtsched reproduce all\n\nsmtsched {}, seed {}, {:.0} s. Claims: **{} hold**, **{} do \
         not hold**, **{} inconclusive**.\n\n",
        r.version, r.seed, r.seconds, r.counts.holds, r.counts.does_not_hold, r.counts.inconclusive
    );
    for o in outcomes {
        md.push_str(&format!(
            "## {} — {}\n\nSource: {}. Machine {}, {:.1} s.\n\n",
            o.name, o.title, o.source, o.machine, o.seconds
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

fn html(r: &Report, outcomes: &[Outcome], json: &str) -> String {
    let mut body = format!(
        "<h1>smtsched: what of the seed papers reproduces</h1>\n<p class=\"meta\">smtsched {} · \
         seed {} · {:.0} s</p>\n<p class=\"counts\"><span class=\"holds\">{} hold</span> \
         <span class=\"fails\">{} do not hold</span> <span class=\"open\">{} inconclusive</span></p>\n<nav><ul>\n",
        esc(r.version),
        r.seed,
        r.seconds,
        r.counts.holds,
        r.counts.does_not_hold,
        r.counts.inconclusive
    );
    for o in outcomes {
        body.push_str(&format!(
            "<li><a href=\"#{0}\">{0}</a> — {1}</li>\n",
            esc(&o.name),
            esc(&o.title)
        ));
    }
    body.push_str("</ul></nav>\n");
    for o in outcomes {
        body.push_str(&format!(
            "<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n<p class=\"meta\">source: {} · \
             machine {} · {:.1} s</p>\n",
            esc(&o.name),
            esc(&o.name),
            esc(&o.title),
            esc(&o.source),
            esc(&o.machine),
            o.seconds
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
ul.claims li{margin:.3em 0;padding:.2em .5em;border-radius:3px;list-style:none}
pre{font-size:80%;overflow-x:auto;background:#f7f7f7;padding:.5em}
figure{margin:1em 0}svg{max-width:100%;height:auto}
section{border-top:1px solid #ccc;margin-top:2em}
";
