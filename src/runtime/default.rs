//! The process-wide default runtime: started on first use with one worker per core and
//! threads named `csp-worker-N`, never dropped.

use std::io;
use std::sync::OnceLock;

use crate::loom::sync::Arc;
use crate::runtime::{Builder, Handle, Runtime, Shared};

static DEFAULT: OnceLock<Runtime> = OnceLock::new();

/// The default runtime's shared state, starting it if needed.
pub(crate) fn shared() -> &'static Arc<Shared> {
    &DEFAULT
        .get_or_init(|| {
            Builder::new()
                .build()
                .unwrap_or_else(|err| panic!("csp: could not start the default runtime: {err}"))
        })
        .handle
        .shared
}

/// The default runtime's handle, starting it if needed.
pub(crate) fn handle() -> Handle {
    Handle {
        shared: shared().clone(),
    }
}

pub(crate) fn is_started() -> bool {
    DEFAULT.get().is_some()
}

pub(crate) fn already_started() -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        "csp: the default runtime has already started; call Builder::build_default before \
         the first use of csp::spawn, csp::block_on or any timer outside a runtime",
    )
}

/// Makes `runtime` the default runtime, unless one has started meanwhile.
pub(crate) fn install(runtime: Runtime) -> io::Result<Handle> {
    let handle = runtime.handle();
    match DEFAULT.set(runtime) {
        Ok(()) => Ok(handle),
        Err(_ours) => Err(already_started()),
    }
}
