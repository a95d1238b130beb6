//! A source registered with a runtime's driver: how an I/O type (`crate::net`) waits for
//! readiness and runs its system calls.

use std::io;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use mio::event::Source;

use crate::loom::sync::Arc as SharedArc;
use crate::runtime::driver::driver::shut_down_error;
use crate::runtime::driver::read_ahead::Found;
use crate::runtime::driver::readiness::{Direction, Seen};
use crate::runtime::driver::scheduled_io::ScheduledIo;
use crate::runtime::{Shared, context, default};
use crate::wait::WaitOn;
use crate::wait::record::record_outside;

/// One registered source: its state in the driver, and the runtime whose driver it is
/// (kept alive as long as the source is).
pub(crate) struct Registration {
    io: Arc<ScheduledIo>,
    token: mio::Token,
    shared: SharedArc<Shared>,
}

impl Registration {
    /// Registers `source` with the driver of the runtime this thread is in, or of the
    /// default runtime outside any.
    pub(crate) fn new(source: &mut impl Source) -> io::Result<Registration> {
        let shared = match context::current_handle() {
            Some(handle) => handle.shared,
            None => default::shared().clone(),
        };
        let registered = shared.io_driver()?.register(source)?;
        Ok(Registration {
            io: registered.io,
            token: registered.token,
            shared,
        })
    }

    /// Deregisters `source` (the one this registration was made for), before it closes.
    pub(crate) fn deregister(&self, source: &mut impl Source) {
        if let Ok(driver) = self.shared.io_driver() {
            driver.deregister(source, self.token);
        }
        self.io.release_wakers();
    }

    /// Leaves the driver without telling the operating system, whose registration went
    /// with the descriptor (`Driver::release`).
    pub(crate) fn release(&self) {
        if let Ok(driver) = self.shared.io_driver() {
            driver.release(self.token);
        }
        self.io.release_wakers();
    }

    /// Runs `op`, a non-blocking system call in `direction`, once the source is ready for
    /// it; on `WouldBlock`, waits for the next readiness and tries again. The task is
    /// woken when the driver sees the source ready.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_telling(cx, direction, op, |_, _| {})
    }

    /// As [`poll_io`](Self::poll_io), for a stream socket's read of up to `len` bytes:
    /// one that comes back short has emptied the socket, and the next read runs the call
    /// at once or waits for the next event, as the source's read-ahead score says
    /// (`read_ahead.rs`).
    pub(crate) fn poll_stream_read(
        &self,
        cx: &mut Context<'_>,
        len: usize,
        op: impl FnMut() -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        self.poll_io_telling(cx, Direction::Read, op, |seen, read| {
            let found = match read {
                Some(&n) => Found::Bytes {
                    short: 0 < n && n < len,
                },
                None => Found::Nothing,
            };
            self.io.stream_read(seen, found);
        })
    }

    /// [`poll_io`](Self::poll_io), telling `told` what each call did with the readiness
    /// it acted on (`None`: `WouldBlock`) before acting on the result; errors but
    /// `WouldBlock` are not told.
    fn poll_io_telling<R>(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
        mut op: impl FnMut() -> io::Result<R>,
        mut told: impl FnMut(Seen, Option<&R>),
    ) -> Poll<io::Result<R>> {
        loop {
            let seen = ready!(self.wait_ready(cx, direction));
            match op() {
                Ok(done) => {
                    told(seen, Some(&done));
                    return Poll::Ready(Ok(done));
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    told(seen, None);
                    if seen.is_shut_down() {
                        return Poll::Ready(Err(shut_down_error()));
                    }
                    // Cleared: wait for the next event (the store of the waker comes with
                    // the next `poll_ready`). Not cleared: a newer event stands, try again.
                    let _ = self.io.clear(seen);
                }
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
    }

    /// `Ready` once the source may be ready in `direction` (for `AsyncFd`, whose user
    /// runs the system call and says whether it would block).
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<io::Result<ReadyGuard<'_>>> {
        let seen = ready!(self.wait_ready(cx, direction));
        if seen.is_shut_down() {
            return Poll::Ready(Err(shut_down_error()));
        }
        Poll::Ready(Ok(ReadyGuard { io: &self.io, seen }))
    }

    /// The source's readiness in `direction`; while there is none, the wait is recorded
    /// for dumps and the console (as one outside the channels, so never a deadlock).
    fn wait_ready(&self, cx: &mut Context<'_>, direction: Direction) -> Poll<Seen> {
        let polled = self.io.poll_ready(cx, direction);
        if polled.is_pending() {
            record_outside(cx.waker(), || WaitOn::Io {
                token: self.token.0 as u64,
            });
        }
        polled
    }
}

/// The readiness one wait saw: [`clear`](ReadyGuard::clear) it once the operation it let
/// through would block.
pub(crate) struct ReadyGuard<'a> {
    io: &'a ScheduledIo,
    seen: Seen,
}

impl ReadyGuard<'_> {
    /// The operation got `WouldBlock`: the readiness seen is cleared unless a newer
    /// event came since.
    pub(crate) fn clear(self) {
        let _ = self.io.clear(self.seen);
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("io", &self.io)
            .finish()
    }
}
