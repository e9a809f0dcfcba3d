//! Progress on the terminal: bars and spinners on stderr, drawn only when someone watches.

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
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

    /// `steps` more done at `now`: the line to log, if one is due.
    fn advance_at(&mut self, steps: u64, now: Instant) -> Option<String> {
        self.done += steps;
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

/// A count of work done: a bar on a terminal, a line at most every [`LOG_EVERY`] off one (a
/// long `matrix` or `sweep run` in a log file or a Slurm job is not silent until its end).
pub(crate) struct Counter {
    bar: ProgressBar,
    log: Option<Mutex<StageLog>>,
}

impl Counter {
    fn new(bar: ProgressBar, total: u64, unit: &str) -> Self {
        let log = (!std::io::stderr().is_terminal())
            .then(|| Mutex::new(StageLog::new("", total, unit, Instant::now())));
        Counter { bar, log }
    }

    fn log(&self) -> Option<std::sync::MutexGuard<'_, StageLog>> {
        Some(self.log.as_ref()?.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn set_message(&self, msg: impl Into<String>) {
        let msg = msg.into();
        if let Some(mut log) = self.log() {
            log.label.clone_from(&msg);
        }
        self.bar.set_message(msg);
    }

    /// `steps` more done (counted without a line: kept work taken over at the start).
    pub fn inc_quietly(&self, steps: u64) {
        self.bar.inc(steps);
        if let Some(mut log) = self.log() {
            log.done += steps;
        }
    }

    /// One more done; off a terminal, the count is logged if a line is due.
    pub fn inc(&self) {
        self.bar.inc(1);
        let line = self
            .log()
            .and_then(|mut log| log.advance_at(1, Instant::now()));
        if let Some(line) = line {
            eprintln!("{line}");
        }
    }

    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
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

/// The usual count: `len` things of `unit`, on a terminal a bar with the time elapsed and left.
pub(crate) fn counting_bar(len: u64, unit: &str) -> Result<Counter> {
    let bar = progress_bar(
        Some(len),
        &format!("{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{elapsed}} elapsed, ~{{eta}} left"),
    )?;
    Ok(Counter::new(bar, len, unit))
}

/// An experiment's progress on the terminal: a counting bar per stage, notes always, passing
/// status lines only when someone watches. Experiments running side by side share `multi`,
/// each bar a line of its own, notes printed above them. Off a terminal, a long stage logs how
/// far it has come instead of a bar (see [`LOG_EVERY`]).
#[derive(Default)]
pub(crate) struct Bars {
    stage: Mutex<Option<Counter>>,
    multi: Option<indicatif::MultiProgress>,
}

impl Bars {
    pub fn in_multi(multi: &indicatif::MultiProgress) -> Self {
        Bars {
            stage: Default::default(),
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

    fn stage(&self) -> std::sync::MutexGuard<'_, Option<Counter>> {
        self.stage.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl smtsched_experiments::run::Progress for Bars {
    fn begin(&self, label: &str, total: u64, unit: &str) {
        let stage = counting_bar(total, unit)
            .unwrap_or_else(|_| Counter::new(ProgressBar::hidden(), total, unit));
        let stage = match &self.multi {
            Some(m) => Counter {
                bar: m.add(stage.bar),
                log: stage.log,
            },
            None => stage,
        };
        stage.set_message(label);
        *self.stage() = Some(stage);
    }
    fn step(&self) {
        if let Some(stage) = self.stage().as_ref() {
            stage.inc();
        }
    }
    fn end(&self) {
        if let Some(stage) = self.stage().take() {
            stage.finish_and_clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_off_a_terminal_logs_its_count_once_a_minute_and_not_at_its_end() {
        let t0 = Instant::now();
        let mut log = StageLog::new("thesis-asymmetry runs", 4, "runs", t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        // The first step, 30 s in: too soon.
        assert_eq!(log.advance_at(1, at(30)), None);
        // 90 s in, a minute after the stage began: due.
        assert_eq!(
            log.advance_at(1, at(90)).as_deref(),
            Some("  thesis-asymmetry runs: 2/4 runs after 1.5 min")
        );
        // 120 s: only 30 s after the last line.
        assert_eq!(log.advance_at(1, at(120)), None);
        // The last step: the stage's end line says it.
        assert_eq!(log.advance_at(1, at(600)), None);
    }
}
