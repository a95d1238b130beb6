//! Services a runtime starts beside its workers that live in layers above it: today the
//! console (feature `console`, `src/console/`). The console registers its start function
//! here when the program loads, so that [`Builder::build`](crate::Builder::build), a
//! layer below it, starts it without naming it. The runtime keeps what a start returns
//! and drops it first when it shuts down, which stops the service.

use std::any::Any;
use std::io;
use std::sync::OnceLock;

use crate::runtime::Handle;

/// A running service; dropping it stops it.
pub(crate) struct Service(#[allow(dead_code)] Box<dyn Any + Send + Sync>);

impl Service {
    /// Wraps what stops a service when dropped.
    #[cfg_attr(not(feature = "console"), allow(dead_code))]
    pub(crate) fn new(stop: impl Any + Send + Sync) -> Service {
        Service(Box::new(stop))
    }
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Service")
    }
}

/// Starts the console of `handle`'s runtime, serving on `addr`.
pub(crate) type ConsoleStart = fn(&Handle, &str) -> io::Result<Service>;

static CONSOLE: OnceLock<ConsoleStart> = OnceLock::new();

/// Called once by the console module as the program loads.
#[cfg_attr(not(feature = "console"), allow(dead_code))]
pub(crate) fn register_console(start: ConsoleStart) {
    let _ = CONSOLE.set(start);
}

/// Starts the console on `addr` for `handle`'s runtime.
pub(crate) fn start_console(handle: &Handle, addr: &str) -> io::Result<Service> {
    match CONSOLE.get() {
        Some(start) => start(handle, addr),
        None if cfg!(feature = "console") => Err(io::Error::other(
            "csp: the console did not register itself as the program loaded; \
             this platform may not run csp's load-time registration",
        )),
        None => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "csp: Builder::console needs csp's `console` feature: \
             csp = { version = \"..\", features = [\"console\"] }",
        )),
    }
}

/// The console address from the environment: `CSP_CONSOLE=127.0.0.1:6669`. Without the
/// feature the variable is ignored, once said so on standard error.
pub(crate) fn console_from_env() -> Option<String> {
    let addr = std::env::var("CSP_CONSOLE")
        .ok()
        .filter(|a| !a.is_empty())?;
    if cfg!(feature = "console") {
        return Some(addr);
    }
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        eprintln!(
            "csp: CSP_CONSOLE is set, but this program was built without csp's `console` \
             feature: no console is served"
        );
    });
    None
}

/// Installs the handler of the dump signal (`console/dump.rs`).
#[cfg(feature = "console")]
pub(crate) type DumpInstall = fn();

#[cfg(feature = "console")]
static DUMP: OnceLock<DumpInstall> = OnceLock::new();

/// The runtimes alive, for the dump: weak references, pruned as runtimes are built.
#[cfg(feature = "console")]
static RUNTIMES: std::sync::Mutex<Vec<std::sync::Weak<crate::runtime::Shared>>> =
    std::sync::Mutex::new(Vec::new());

/// Called once by the console module as the program loads.
#[cfg(feature = "console")]
pub(crate) fn register_dump(install: DumpInstall) {
    let _ = DUMP.set(install);
}

/// A runtime was built: the dump may show it, and the dump's handler is installed (the
/// first time; not before the program runs csp, so a program that never builds a
/// runtime keeps the signal's default action).
#[cfg(feature = "console")]
pub(crate) fn runtime_built(shared: &std::sync::Arc<crate::runtime::Shared>) {
    let mut runtimes = RUNTIMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    runtimes.retain(|r| r.strong_count() > 0);
    runtimes.push(std::sync::Arc::downgrade(shared));
    drop(runtimes);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if let Some(install) = DUMP.get() {
        INSTALLED.get_or_init(install);
    }
}

/// The runtimes alive now, in the order they were built.
#[cfg(feature = "console")]
pub(crate) fn runtimes() -> Vec<std::sync::Arc<crate::runtime::Shared>> {
    RUNTIMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .collect()
}
