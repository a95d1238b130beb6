//! A mio source registered with its runtime's I/O driver: what every socket type wraps.
//! Its operations run the non-blocking system call once the driver has seen the source
//! ready, and wait again on `WouldBlock` (`runtime/driver/registration.rs`).

use std::future::poll_fn;
use std::io;
use std::task::{Context, Poll};

use mio::event::Source;

use crate::runtime::driver::Registration;
use crate::runtime::driver::readiness::Direction;

/// A registered source. Dropped, it leaves the driver before the source closes.
pub(crate) struct Evented<S: Source> {
    /// `None` only once `into_inner` took it.
    source: Option<S>,
    registration: Registration,
}

impl<S: Source> Evented<S> {
    /// Registers `source` (already non-blocking) with the driver of the runtime this
    /// thread is in, or of the default runtime.
    pub(crate) fn new(mut source: S) -> io::Result<Evented<S>> {
        let registration = Registration::new(&mut source)?;
        Ok(Evented {
            source: Some(source),
            registration,
        })
    }

    /// The source.
    pub(crate) fn get(&self) -> &S {
        self.source
            .as_ref()
            .expect("csp: a socket was used after into_inner")
    }

    /// `op`, a non-blocking read-side system call, once the source is readable.
    pub(crate) fn poll_read_with<R>(
        &self,
        cx: &mut Context<'_>,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let source = self.get();
        self.registration
            .poll_io(cx, Direction::Read, || op(source))
    }

    /// `op`, a stream socket's non-blocking read into `len` bytes, once the source is
    /// readable; a read of fewer bytes may leave the source waiting for its next event
    /// (`Registration::poll_stream_read`).
    pub(crate) fn poll_stream_read(
        &self,
        cx: &mut Context<'_>,
        len: usize,
        mut op: impl FnMut(&S) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        let source = self.get();
        self.registration.poll_stream_read(cx, len, || op(source))
    }

    /// `op`, a non-blocking write-side system call, once the source is writable.
    pub(crate) fn poll_write_with<R>(
        &self,
        cx: &mut Context<'_>,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        let source = self.get();
        self.registration
            .poll_io(cx, Direction::Write, || op(source))
    }

    /// As [`poll_read_with`](Self::poll_read_with), as a future.
    pub(crate) async fn read_with<R>(
        &self,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        poll_fn(|cx| self.poll_read_with(cx, &mut op)).await
    }

    /// As [`poll_write_with`](Self::poll_write_with), as a future.
    pub(crate) async fn write_with<R>(
        &self,
        mut op: impl FnMut(&S) -> io::Result<R>,
    ) -> io::Result<R> {
        poll_fn(|cx| self.poll_write_with(cx, &mut op)).await
    }

    /// `Ready` once the source is writable (a connect in progress has finished).
    pub(crate) async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| {
            self.registration
                .poll_ready(cx, Direction::Write)
                .map_ok(drop)
        })
        .await
    }

    /// Leaves the driver and gives the source back.
    pub(crate) fn into_inner(mut self) -> S {
        let mut source = self.source.take().expect("taken once");
        self.registration.deregister(&mut source);
        source
    }
}

impl<S: Source> Drop for Evented<S> {
    fn drop(&mut self) {
        if let Some(mut source) = self.source.take() {
            self.registration.deregister(&mut source);
        }
    }
}

impl<S: Source + std::fmt::Debug> std::fmt::Debug for Evented<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}
