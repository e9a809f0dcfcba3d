//! Ctrl-C and SIGTERM only set a flag (STYLE, scx); long loops look at it, stop their children
//! and return [`crate::HostError::Interrupted`].

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Whether the running command handles SIGINT and SIGTERM itself (a [`Shutdown`] flag it looks
/// at): then a signal that arrives while outputs are put in place is left to it.
static HANDLED_BY_COMMAND: AtomicBool = AtomicBool::new(false);
/// How many callers are inside [`deferring_signals`].
static DEFERRING: AtomicUsize = AtomicUsize::new(0);
/// A signal held back by [`deferring_signals`] (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);
static DEFERRAL_INSTALLED: OnceLock<bool> = OnceLock::new();

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
        signals_handled_by_command();
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

/// Says that the running command handles SIGINT and SIGTERM itself (it has registered its own
/// flag): [`deferring_signals`] then never ends the process.
pub fn signals_handled_by_command() {
    HANDLED_BY_COMMAND.store(true, Ordering::SeqCst);
}

/// Runs `f` (putting output files in place) with SIGINT and SIGTERM held back: a signal that
/// arrives meanwhile ends the process, as it would have, once `f` has returned, so that a set of
/// files is replaced whole or not at all and no temporary file is left. Outside such sections a
/// signal acts as it did before (the default: the process ends). If the handler cannot be
/// installed, `f` runs unprotected, as before.
pub fn deferring_signals<T>(f: impl FnOnce() -> T) -> T {
    DEFERRAL_INSTALLED.get_or_init(install_deferral);
    let _held = HeldBack::enter();
    f()
}

/// One caller inside [`deferring_signals`]; leaving (also by a panic) acts on a held signal.
struct HeldBack;

impl HeldBack {
    fn enter() -> HeldBack {
        DEFERRING.fetch_add(1, Ordering::SeqCst);
        HeldBack
    }
}

impl Drop for HeldBack {
    fn drop(&mut self) {
        if DEFERRING.fetch_sub(1, Ordering::SeqCst) == 1 {
            act_on_pending();
        }
    }
}

/// Ends the process by the held-back signal, if there is one and no command handles it.
fn act_on_pending() {
    let sig = PENDING.swap(0, Ordering::SeqCst);
    if sig != 0 && !HANDLED_BY_COMMAND.load(Ordering::SeqCst) {
        let _ = signal_hook::low_level::emulate_default_handler(sig);
    }
}

/// Registers the handler for SIGINT and SIGTERM, except one the process was started ignoring
/// (`trap '' INT`, a background job of a script): that stays ignored.
fn install_deferral() -> bool {
    [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
        .into_iter()
        .filter(|&sig| !ignored(sig))
        .all(|sig| {
            let action = move || {
                if DEFERRING.load(Ordering::SeqCst) == 0 {
                    if !HANDLED_BY_COMMAND.load(Ordering::SeqCst) {
                        let _ = signal_hook::low_level::emulate_default_handler(sig);
                    }
                    return;
                }
                PENDING.store(sig, Ordering::SeqCst);
                // The last writer may have left between the check and the store, without
                // seeing the signal: then it is acted on here.
                if DEFERRING.load(Ordering::SeqCst) == 0 {
                    act_on_pending();
                }
            };
            // SAFETY: the action only touches atomics and calls emulate_default_handler, which
            // signal-hook documents for use in a handler (it resets the default and re-raises).
            unsafe { signal_hook::low_level::register(sig, action) }.is_ok()
        })
}

/// Whether `sig`'s disposition is "ignore".
fn ignored(sig: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}
