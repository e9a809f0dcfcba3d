//! Results of pure computations kept for the rest of the process, by key. Experiments that run
//! side by side in one `reproduce all` ask for the same simulations (the thesis's sets share
//! programs; its phases and estimator experiments share their training windows): the first to
//! ask computes, later ones (and concurrent ones, which wait) get its result. A key must hold
//! everything the result depends on, so a memo never changes a result, only the time taken.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

/// Values by key, each computed at most once unless its computation fails.
pub struct Memo<K, V> {
    cells: Mutex<HashMap<K, Arc<Cell<V>>>>,
}

/// One key's value, and who is computing it.
struct Cell<V> {
    state: Mutex<(Option<V>, Option<ThreadId>)>,
    done: Condvar,
}

impl<V> Default for Cell<V> {
    fn default() -> Self {
        Cell {
            state: Mutex::new((None, None)),
            done: Condvar::new(),
        }
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            cells: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    /// The value of `key`: computed by `make` the first time, remembered when it succeeds. A
    /// caller asking for a key another thread is computing waits for that result. No lock is
    /// held while `make` runs, and a thread asked for a key it is itself computing (a thread
    /// pool can run another task inside a computation that waits for its parallel parts)
    /// computes it again rather than wait for itself.
    pub fn get_or_try<E>(&self, key: K, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let cell = locked(&self.cells).entry(key).or_default().clone();
        let me = std::thread::current().id();
        let mut state = locked(&cell.state);
        loop {
            match &*state {
                (Some(v), _) => return Ok(v.clone()),
                (None, None) => break,
                (None, Some(t)) if *t == me => {
                    drop(state);
                    return make();
                }
                (None, Some(_)) => {
                    state = cell.done.wait(state).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
        state.1 = Some(me);
        drop(state);
        let made = make();
        let mut state = locked(&cell.state);
        state.1 = None;
        if let Ok(v) = &made {
            state.0 = Some(v.clone());
        }
        cell.done.notify_all();
        made
    }

    /// [`Memo::get_or_try`] for a computation that cannot fail.
    pub fn get_or(&self, key: K, make: impl FnOnce() -> V) -> V {
        match self.get_or_try::<std::convert::Infallible>(key, || Ok(make())) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    /// How many keys have a value.
    pub fn len(&self) -> usize {
        let cells = locked(&self.cells);
        cells
            .values()
            .filter(|c| locked(&c.state).0.is_some())
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn computes_each_key_once_even_when_asked_concurrently() {
        let memo: Memo<u32, u32> = Memo::default();
        let calls = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for k in 0..4 {
                        let v = memo.get_or(k, || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            k * 10
                        });
                        assert_eq!(v, k * 10);
                    }
                });
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(memo.len(), 4);
    }

    #[test]
    fn a_failed_computation_is_not_remembered() {
        let memo: Memo<&str, u32> = Memo::default();
        assert_eq!(memo.get_or_try("k", || Err::<u32, &str>("no")), Err("no"));
        assert!(memo.is_empty());
        assert_eq!(memo.get_or_try("k", || Ok::<u32, &str>(7)), Ok(7));
        assert_eq!(memo.get_or_try("k", || Err::<u32, &str>("again")), Ok(7));
    }

    #[test]
    fn a_thread_asked_for_the_key_it_is_computing_computes_it_rather_than_wait_for_itself() {
        let memo: Memo<u32, u32> = Memo::default();
        let v = memo.get_or(1, || memo.get_or(1, || 5) + 1);
        assert_eq!(v, 6);
        assert_eq!(memo.get_or(1, || 0), 6);
    }
}
