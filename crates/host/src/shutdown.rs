//! Ctrl-C and SIGTERM only set a flag (STYLE, scx); long loops look at it, stop their children
//! and return [`crate::HostError::Interrupted`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The shutdown flag: which signal arrived, if any.
#[derive(Clone, Debug, Default)]
pub struct Shutdown(Arc<AtomicUsize>);

impl Shutdown {
    /// A flag that nothing sets (for library use and tests).
    pub fn never() -> Self {
        Shutdown::default()
    }

    /// Installs handlers for SIGINT and SIGTERM that record the signal.
    pub fn install() -> std::io::Result<Self> {
        let s = Shutdown::default();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_usize(sig, Arc::clone(&s.0), sig as usize)?;
        }
        Ok(s)
    }

    /// Marks a shutdown request as if `signal` had arrived.
    pub fn request(&self, signal: i32) {
        self.0.store(signal as usize, Ordering::SeqCst);
    }

    /// The name of the signal that asked for a shutdown.
    pub fn requested(&self) -> Option<&'static str> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            s if s == libc::SIGINT as usize => Some("SIGINT"),
            s if s == libc::SIGTERM as usize => Some("SIGTERM"),
            _ => Some("a signal"),
        }
    }
}
