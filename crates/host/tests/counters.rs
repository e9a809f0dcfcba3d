//! perf_event counters on the machine the tests run on. Software events must really count;
//! hardware events may be unsupported (a VM without a PMU), but then they must say so with a
//! reason — and where they are supported the counts must be plausible for known work.

use smtsched_host::perf::{CounterSet, Event, EventStatus, Target};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn status_of(set: &CounterSet, e: Event) -> EventStatus {
    set.status()
        .iter()
        .find(|(x, _)| *x == e)
        .map(|(_, s)| s.clone())
        .unwrap()
}

fn spin(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 0u64;
    while t.elapsed() < d {
        for i in 0..1000u64 {
            x = black_box(x.wrapping_add(i));
        }
    }
    x
}

#[test]
fn task_clock_of_a_busy_loop_counts_its_cpu_time() {
    // On a thread of our own: counters on the calling thread see only this work.
    std::thread::spawn(|| {
        let mut set = CounterSet::open(&[Event::TaskClockNs], Target::SelfAndDescendants).unwrap();
        assert!(
            status_of(&set, Event::TaskClockNs).is_supported(),
            "task-clock is a software event and must work"
        );
        set.enable().unwrap();
        let before = set.read().unwrap();
        let t = Instant::now();
        spin(Duration::from_millis(100));
        let wall = t.elapsed().as_nanos() as f64;
        let d = set.read().unwrap().since(&before).scaled();
        let cpu = d[&Event::TaskClockNs];
        assert!(cpu > 0.0, "task clock {cpu}");
        // CPU time of a spinning thread cannot exceed the wall time it spun for (plus slack for
        // the reads themselves).
        assert!(
            cpu <= wall * 1.05 + 1e6,
            "task clock {cpu} ns > wall {wall} ns"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_thread_that_sleeps_is_switched_out() {
    std::thread::spawn(|| {
        let mut set =
            CounterSet::open(&[Event::ContextSwitches], Target::SelfAndDescendants).unwrap();
        set.enable().unwrap();
        let before = set.read().unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let d = set.read().unwrap().since(&before).scaled();
        // Each sleep blocks the thread: at least one switch away per sleep.
        assert!(
            d[&Event::ContextSwitches] >= 5.0,
            "context switches {}",
            d[&Event::ContextSwitches]
        );
    })
    .join()
    .unwrap();
}

#[test]
fn children_are_counted_through_inheritance() {
    std::thread::spawn(|| {
        let mut set = CounterSet::open(
            &[Event::TaskClockNs, Event::ContextSwitches],
            Target::SelfAndDescendants,
        )
        .unwrap();
        set.enable().unwrap();
        let before = set.read().unwrap();
        // A child that sleeps three times: its switches are added when it exits.
        let st = std::process::Command::new("sh")
            .args(["-c", "sleep 0.01; sleep 0.01; sleep 0.01"])
            .status()
            .unwrap();
        assert!(st.success());
        let d = set.read().unwrap().since(&before).scaled();
        assert!(
            d[&Event::ContextSwitches] >= 3.0,
            "context switches of the children: {}",
            d[&Event::ContextSwitches]
        );
        assert!(d[&Event::TaskClockNs] > 0.0);
    })
    .join()
    .unwrap();
}

/// Kills and reaps a child even when an assertion fails.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn another_process_is_counted_by_pid() {
    let child = Reaped(
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id() as i32;
    let mut set = CounterSet::open(&[Event::TaskClockNs], Target::Process(pid)).unwrap();
    assert!(status_of(&set, Event::TaskClockNs).is_supported());
    set.enable().unwrap();
    let before = set.read().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let result = set.read().unwrap().since(&before).scaled()[&Event::TaskClockNs];
    drop(child);
    assert!(result > 0.0, "a spinning shell used no CPU time? {result}");
}

#[test]
fn a_missing_process_is_bad_input() {
    let e = match CounterSet::open(&[Event::TaskClockNs], Target::Process(i32::MAX)) {
        Ok(_) => panic!("opened counters on a process that cannot exist"),
        Err(e) => e,
    };
    assert!(e.is_bad_input(), "{e}");
}

#[test]
fn hardware_events_count_plausibly_or_say_why_not() {
    std::thread::spawn(|| {
        let mut set = CounterSet::open(
            &[Event::Instructions, Event::Cycles],
            Target::SelfAndDescendants,
        )
        .unwrap();
        set.enable().unwrap();
        let before = set.read().unwrap();
        // A loop of known length: one black_box'd add per iteration, plus loop overhead.
        const N: u64 = 10_000_000;
        let mut x = 0u64;
        for i in 0..N {
            x = black_box(x.wrapping_add(i));
        }
        black_box(x);
        let d = set.read().unwrap().since(&before);
        for e in [Event::Instructions, Event::Cycles] {
            match status_of(&set, e) {
                EventStatus::Unsupported { reason } => {
                    assert!(!reason.is_empty());
                    assert!(!d.0.contains_key(&e), "an unsupported event has a reading");
                    eprintln!("{e}: unsupported here: {reason}");
                }
                EventStatus::Supported { .. } => {
                    let v = d.0[&e].scaled().expect("a supported event ran on the PMU");
                    if e == Event::Instructions {
                        // At least one instruction per iteration; far fewer than 50.
                        assert!(
                            v >= N as f64 && v < 50.0 * N as f64,
                            "instructions {v} for a {N}-iteration loop"
                        );
                    } else {
                        assert!(v > 0.0, "cycles {v}");
                    }
                }
            }
        }
    })
    .join()
    .unwrap();
}

#[test]
fn multiplexed_hardware_events_are_scaled_up() {
    // Ask for every hardware event (more than most PMUs have counters), so the kernel
    // multiplexes; every reading must then be scaled by enabled/running, never reported raw.
    let events: Vec<Event> = Event::ALL
        .iter()
        .copied()
        .filter(|e| e.is_hardware())
        .collect();
    std::thread::spawn(move || {
        let mut set = CounterSet::open(&events, Target::SelfAndDescendants).unwrap();
        if set.supported().is_empty() {
            eprintln!("no hardware events here: nothing is multiplexed");
            return;
        }
        set.enable().unwrap();
        let before = set.read().unwrap();
        spin(Duration::from_millis(300));
        let d = set.read().unwrap().since(&before);
        for (e, r) in &d.0 {
            if let Some(v) = r.scaled() {
                assert!(v >= r.count as f64, "{e}: scaled {v} below raw {}", r.count);
                if r.running_ns < r.enabled_ns {
                    let want = r.count as f64 * r.enabled_ns as f64 / r.running_ns as f64;
                    assert!(
                        (v - want).abs() <= 1e-6 * want.max(1.0),
                        "{e}: {v} != {want}"
                    );
                }
            }
        }
    })
    .join()
    .unwrap();
}
