//! Progress on the terminal: bars and spinners on stderr, drawn only when someone watches.

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar on stderr drawn with `template` (indicatif's syntax) when stderr is a
/// terminal, hidden otherwise; without `len` it counts up (a spinner or an open-ended bar).
pub(crate) fn progress_bar(len: Option<u64>, template: &str) -> Result<ProgressBar> {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(ProgressStyle::with_template(template)?.progress_chars("=> "));
    Ok(bar)
}

/// A spinner with `msg` and the time elapsed, for work whose length is not known beforehand;
/// drawn on stderr only when it is a terminal.
pub(crate) fn spinner(msg: impl Into<String>) -> Result<ProgressBar> {
    let bar = progress_bar(None, "{spinner} {msg} ({elapsed})")?;
    bar.set_message(msg.into());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Ok(bar)
}

/// The usual bar: `len` things of `unit`, time elapsed and left.
pub(crate) fn counting_bar(len: u64, unit: &str) -> Result<ProgressBar> {
    progress_bar(
        Some(len),
        &format!("{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{elapsed}} elapsed, ~{{eta}} left"),
    )
}

/// An experiment's progress on the terminal: a counting bar per stage, notes always, passing
/// status lines only when someone watches. Experiments running side by side share `multi`,
/// each bar a line of its own, notes printed above them.
#[derive(Default)]
pub(crate) struct Bars {
    bar: std::sync::Mutex<Option<ProgressBar>>,
    multi: Option<indicatif::MultiProgress>,
}

impl Bars {
    pub fn in_multi(multi: &indicatif::MultiProgress) -> Self {
        Bars {
            bar: Default::default(),
            multi: Some(multi.clone()),
        }
    }

    /// A line on stderr, above the bars when there are bars.
    pub fn say(&self, line: &str) {
        match &self.multi {
            Some(m) if std::io::stderr().is_terminal() => {
                let _ = m.println(line);
            }
            _ => eprintln!("{line}"),
        }
    }
}

impl smtsched_experiments::run::Progress for Bars {
    fn begin(&self, label: &str, total: u64, unit: &str) {
        let mut bar = counting_bar(total, unit).unwrap_or_else(|_| ProgressBar::hidden());
        if let Some(m) = &self.multi {
            bar = m.add(bar);
        }
        bar.set_message(label.to_string());
        *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar);
    }
    fn step(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            b.inc(1);
        }
    }
    fn end(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
    }
    fn note(&self, line: &str) {
        self.say(line);
    }
    fn status(&self, line: &str) {
        if std::io::stderr().is_terminal() {
            self.say(&format!("  {line}"));
        }
    }
}
