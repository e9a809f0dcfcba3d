//! A schedule as a Chrome/Perfetto trace (the JSON trace-event format that ui.perfetto.dev and
//! chrome://tracing open): one track per logical CPU with a slice per stretch a task ran, and one
//! counter track per series (a task's PR estimate).

use crate::timeline::Segment;
use serde_json::{json, Value};

/// One value of a counter series at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterSample {
    pub series: String,
    pub t_s: f64,
    pub value: f64,
}

/// Microseconds, the format's unit of time.
fn us(t_s: f64) -> f64 {
    (t_s * 1e6 * 1000.0).round() / 1000.0
}

/// The trace: `process` names the machine, `lane_names` the CPUs; `segments` carry the task's
/// label (and `pid`, when the label ends in one, as an argument).
pub fn trace_json(
    process: &str,
    lane_names: &[String],
    segments: &[Segment],
    counters: &[CounterSample],
) -> Value {
    const CPUS: u32 = 1;
    const COUNTERS: u32 = 2;
    let mut events = vec![
        json!({"name": "process_name", "ph": "M", "pid": CPUS, "args": {"name": process}}),
        json!({"name": "process_name", "ph": "M", "pid": COUNTERS, "args": {"name": "PR estimates"}}),
    ];
    for (lane, name) in lane_names.iter().enumerate() {
        events.push(json!({
            "name": "thread_name", "ph": "M", "pid": CPUS, "tid": lane,
            "args": {"name": name}
        }));
        events.push(json!({
            "name": "thread_sort_index", "ph": "M", "pid": CPUS, "tid": lane,
            "args": {"sort_index": lane}
        }));
    }
    for s in segments {
        events.push(json!({
            "name": s.label, "cat": "run", "ph": "X", "pid": CPUS, "tid": s.lane,
            "ts": us(s.start_s), "dur": us(s.end_s - s.start_s),
        }));
    }
    for c in counters {
        events.push(json!({
            "name": c.series, "ph": "C", "pid": COUNTERS, "ts": us(c.t_s),
            "args": {"pr": c.value}
        }));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_counters_follow_the_trace_event_format() {
        let segs = [Segment {
            lane: 1,
            start_s: 0.5,
            end_s: 0.503,
            label: "mcf-like (1001)".into(),
        }];
        let ctr = [CounterSample {
            series: "mcf-like (1001)".into(),
            t_s: 0.6,
            value: 0.75,
        }];
        let t = trace_json("northwood", &["cpu 0".into(), "cpu 1".into()], &segs, &ctr);
        let ev = t["traceEvents"].as_array().unwrap();
        // Two process names, a name and a sort index per CPU, one slice, one counter.
        assert_eq!(ev.len(), 2 + 4 + 1 + 1);
        let slice = ev.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!(slice["ts"], 500000.0);
        assert_eq!(slice["dur"], 3000.0);
        assert_eq!(slice["tid"], 1);
        let counter = ev.iter().find(|e| e["ph"] == "C").unwrap();
        assert_eq!(counter["ts"], 600000.0);
        assert_eq!(counter["args"]["pr"], 0.75);
    }
}
