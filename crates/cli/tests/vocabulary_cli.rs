//! The command line speaks one language: the README's table of every flag and the commands that
//! take it is what the binary's own help says, and no flag means two things.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `smtsched PATH… --help`.
fn help(path: &[String]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_smtsched"))
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    assert!(o.status.success(), "{path:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// Every visible flag of every command, with its value name: flag → [(command, value)].
fn flags() -> BTreeMap<String, Vec<(String, String)>> {
    let mut found: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        let mut section = "";
        for line in text.lines() {
            if let Some(s) = ["Commands:", "Options:", "Arguments:"]
                .iter()
                .find(|s| line == **s)
            {
                section = s;
                continue;
            }
            let item = line.trim_start();
            match section {
                "Commands:" if line.starts_with("  ") && !line.starts_with("   ") => {
                    let name = item.split_whitespace().next().unwrap();
                    if name != "help" {
                        todo.push(path.iter().cloned().chain([name.to_string()]).collect());
                    }
                }
                // `  -o, --output <FILE>  …` or `      --json  …` (continuation lines are deeper).
                "Options:"
                    if line.starts_with("  ")
                        && (item.starts_with("--") || item.starts_with('-')) =>
                {
                    let spec = item.split("  ").next().unwrap();
                    let long = spec.split(", ").last().unwrap();
                    let (flag, value) = long.split_once(' ').unwrap_or((long, ""));
                    if matches!(flag, "--help" | "--version") || !flag.starts_with("--") {
                        continue;
                    }
                    let command = if path.is_empty() {
                        "smtsched".into()
                    } else {
                        path.join(" ")
                    };
                    let value = value.trim_end_matches("...").trim_matches(['<', '>']);
                    found
                        .entry(flag.to_string())
                        .or_default()
                        .push((command, value.to_string()));
                }
                _ => {}
            }
        }
    }
    for uses in found.values_mut() {
        uses.sort();
    }
    found
}

/// The README's table, as it must read.
fn table(flags: &BTreeMap<String, Vec<(String, String)>>) -> String {
    let mut t = String::from("| flag | value | commands |\n|---|---|---|\n");
    for (flag, uses) in flags {
        let mut values: Vec<&str> = uses
            .iter()
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
            .collect();
        values.sort();
        values.dedup();
        let commands: Vec<&str> = uses.iter().map(|(c, _)| c.as_str()).collect();
        t.push_str(&format!(
            "| `{flag}` | {} | {} |\n",
            values.join(", ").replace('|', "\\|"),
            commands.join(", ")
        ));
    }
    t
}

#[test]
fn the_readme_lists_every_flag_and_the_commands_that_take_it() {
    let flags = flags();
    assert!(flags.len() > 80, "{}", flags.len());
    let expected = table(&flags);
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let (start, end) = (
        "<!-- flags: generated, checked by crates/cli/tests/vocabulary_cli.rs -->\n",
        "<!-- /flags -->",
    );
    let from = readme.find(start).expect("the README's flag table") + start.len();
    let to = from + readme[from..].find(end).unwrap();
    assert!(
        readme[from..to] == expected,
        "the README's flag table should read:\n{expected}"
    );
}

/// The same name never stands for two things: the value a flag takes is named the same in every
/// command, except where a command takes a narrower kind of the same thing (one CPU of a list,
/// a file where others take a directory or a file).
#[test]
fn a_flag_takes_the_same_kind_of_value_everywhere() {
    let narrower: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("--cpus", &["CPU", "LIST"][..]),
        ("--output", &["DIR", "FILE", "FILE|DIR"][..]),
        ("--estimator", &["ESTIMATOR", "FILE"][..]),
        ("--tasks", &["FILE", "TASKS"][..]),
        ("--footprint", &["KERNEL=SIZE", "SIZE"][..]),
        ("--work", &["KERNEL=N", "WORK"][..]),
    ]);
    for (flag, uses) in flags() {
        let mut kinds: Vec<&str> = uses.iter().map(|(_, v)| v.as_str()).collect();
        kinds.sort();
        kinds.dedup();
        assert!(
            kinds.len() == 1 || narrower.get(flag.as_str()) == Some(&kinds.as_slice()),
            "{flag} takes {kinds:?} in {uses:?}"
        );
    }
}

/// The previous release's spellings still parse (hidden: the help names only the new ones).
#[test]
fn old_spellings_are_hidden_aliases_for_one_release() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "run",
            &["--model", "thesis", "--repeat", "2"],
            "--estimator",
        ),
        ("reproduce", &["--model", "thesis"], "--estimator"),
        ("solo", &["--cpu", "1"], "--cpus"),
        ("corun", &["--placement", "2,3"], "--cpus"),
        ("matrix", &["-p", "cores"], "--placement"),
        ("bench", &["--repeat", "2"], "--repetitions"),
        ("plot", &["--seconds", "1"], "--timeline-seconds"),
        (
            "cachemodel histogram",
            &["--window", "100", "--model", "statstack"],
            "--cache-model",
        ),
        ("cachemodel predict", &["--placement", "0,1"], "--cpus"),
        (
            "cachemodel schedule",
            &["--seconds", "5", "--samples", "4"],
            "--moments",
        ),
        ("host counters", &["--cpu", "0"], "--cpus"),
        ("host kernel", &["--cpu", "0"], "--cpus"),
        ("measure pairs", &["-p", "cores"], "--placement"),
        (
            "measure server",
            &["-p", "table", "--seconds", "5", "--profile", "p.toml"],
            "--duration",
        ),
        ("measure sched", &["--sim-repeat", "2"], "--sim-repetitions"),
        ("train validate", &["--model", "thesis"], "--estimator"),
        ("train ablation", &["--model", "m.toml"], "--estimator"),
        ("agent run", &["--model", "m.toml"], "--estimator"),
    ];
    for (command, old, new) in cases {
        let path: Vec<String> = command.split(' ').map(String::from).collect();
        let o = Command::new(env!("CARGO_BIN_EXE_smtsched"))
            .args(&path)
            .args(*old)
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{command} {old:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains(new), "{command}: help names {new}");
        let hidden = old[0];
        let shown = text.contains(&format!("{hidden} <")) || text.contains(&format!("{hidden}, "));
        assert!(!shown, "{command}: {hidden} is shown in the help");
    }
}
