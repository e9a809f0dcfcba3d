//! `completions` and `man`: shell completion scripts and man pages, generated from the command
//! line's own definition so they never disagree with `--help`. No plan: `completions` takes
//! nothing that can be wrong, and `man` checks its one directory before it writes.

use super::output::{check_output_dir, make_output_dir};
use super::{out, write_file};
use crate::args::{Cli, CompletionsArgs, ManArgs};
use anyhow::Result;
use clap::CommandFactory;

pub fn completions(a: CompletionsArgs) -> Result<()> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "smtsched", &mut script);
    out(&String::from_utf8_lossy(&script))
}

pub fn man(a: ManArgs) -> Result<()> {
    // As every output directory: made if absent, its parents not (a typo is not a new tree).
    check_output_dir(&a.output, "-o")?;
    make_output_dir(&a.output, "-o")?;
    let cmd = Cli::command();
    let mut pages = vec![("smtsched".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands() {
        let name = format!("smtsched-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name)));
    }
    for (name, page) in &pages {
        let mut roff = Vec::new();
        clap_mangen::Man::new(page.clone()).render(&mut roff)?;
        write_file(&a.output.join(format!("{name}.1")), &roff)?;
    }
    out(&format!(
        "wrote {} pages to {}\n",
        pages.len(),
        a.output.display()
    ))
}
