//! Progress on the terminal: bars and spinners on stderr, drawn only when someone watches.

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Off a terminal (a log file, a Slurm job's output) a stage says how far it has come at most
/// this often, so that a long stage is not silent between its first and last lines.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// A stage's progress as lines of a log: one after every [`LOG_EVERY`] at most.
struct StageLog {
    label: String,
    total: u64,
    unit: String,
    done: u64,
    began: Instant,
    last_line: Instant,
}

impl StageLog {
    fn new(label: &str, total: u64, unit: &str, now: Instant) -> Self {
        StageLog {
            label: label.to_string(),
            total,
            unit: unit.to_string(),
            done: 0,
            began: now,
            last_line: now,
        }
    }

    /// One more step done at `now`: the line to log, if one is due.
    fn step_at(&mut self, now: Instant) -> Option<String> {
        self.done += 1;
        if now.duration_since(self.last_line) < LOG_EVERY || self.done >= self.total {
            return None;
        }
        self.last_line = now;
        let minutes = now.duration_since(self.began).as_secs_f64() / 60.0;
        Some(format!(
            "  {}: {}/{} {} after {minutes:.1} min",
            self.label, self.done, self.total, self.unit
        ))
    }
}

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
/// each bar a line of its own, notes printed above them. Off a terminal, a long stage logs how
/// far it has come instead of a bar (see [`LOG_EVERY`]).
#[derive(Default)]
pub(crate) struct Bars {
    bar: std::sync::Mutex<Option<ProgressBar>>,
    log: std::sync::Mutex<Option<StageLog>>,
    multi: Option<indicatif::MultiProgress>,
}

impl Bars {
    pub fn in_multi(multi: &indicatif::MultiProgress) -> Self {
        Bars {
            bar: Default::default(),
            log: Default::default(),
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
        if !std::io::stderr().is_terminal() {
            *self.log.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(StageLog::new(label, total, unit, Instant::now()));
        }
    }
    fn step(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            b.inc(1);
        }
        let line = match self.log.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            Some(log) => log.step_at(Instant::now()),
            None => None,
        };
        if let Some(line) = line {
            self.say(&line);
        }
    }
    fn end(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
        self.log.lock().unwrap_or_else(|p| p.into_inner()).take();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_off_a_terminal_logs_its_count_once_a_minute_and_not_at_its_end() {
        let t0 = Instant::now();
        let mut log = StageLog::new("thesis-asymmetry runs", 4, "runs", t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        // The first step, 30 s in: too soon.
        assert_eq!(log.step_at(at(30)), None);
        // 90 s in, a minute after the stage began: due.
        assert_eq!(
            log.step_at(at(90)).as_deref(),
            Some("  thesis-asymmetry runs: 2/4 runs after 1.5 min")
        );
        // 120 s: only 30 s after the last line.
        assert_eq!(log.step_at(at(120)), None);
        // The last step: the stage's end line says it.
        assert_eq!(log.step_at(at(600)), None);
    }
}
