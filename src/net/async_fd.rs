//! Any other file descriptor a process must wait on: a pipe, a terminal, an eventfd, a
//! socket of another library.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::task::{Context, Poll, ready};

use mio::unix::SourceFd;

use crate::runtime::driver::readiness::Direction;
use crate::runtime::driver::{ReadyGuard, Registration};

/// A file descriptor registered with its runtime's I/O driver, for a process to wait
/// until it is readable or writable and then run its own non-blocking system call.
///
/// The descriptor must be in non-blocking mode, and must stay open until the `AsyncFd`
/// is dropped or [`into_inner`](AsyncFd::into_inner) gives it back (see
/// [`get_mut`](AsyncFd::get_mut) on replacing it). One closed early is not detected: its
/// waits may never end, and should the system give its number to another socket of the
/// runtime before the `AsyncFd` is dropped, that drop deregisters the other socket,
/// whose waits then never end either. Wait with
/// [`readable`](AsyncFd::readable) or [`writable`](AsyncFd::writable), run the call
/// through the guard's [`try_io`](AsyncFdReadyGuard::try_io), and wait again if it says
/// the call would block:
///
/// ```
/// # csp::block_on(async {
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
/// use csp::net::AsyncFd;
///
/// let (mut a, b) = UnixStream::pair()?;
/// b.set_nonblocking(true)?;
/// let b = AsyncFd::new(b)?;
/// a.write_all(b"ready")?;
/// let mut buf = [0; 5];
/// let n = loop {
///     let mut guard = b.readable().await?;
///     match guard.try_io(|fd| fd.get_ref().read(&mut buf)) {
///         Ok(result) => break result?,
///         Err(_would_block) => continue,
///     }
/// };
/// assert_eq!(&buf[..n], b"ready");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct AsyncFd<T: AsRawFd> {
    registration: Registration,
    fd: RawFd,
    /// `None` only once `into_inner` took it.
    inner: Option<T>,
}

impl<T: AsRawFd> AsyncFd<T> {
    /// Registers `inner`'s descriptor (non-blocking) with the driver of the runtime this
    /// thread is in, or of the default runtime.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let fd = csp::net::AsyncFd::new(a)?;
    /// assert!(fd.get_ref().local_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn new(inner: T) -> io::Result<AsyncFd<T>> {
        let fd = inner.as_raw_fd();
        let registration = Registration::new(&mut SourceFd(&fd))?;
        Ok(AsyncFd {
            registration,
            fd,
            inner: Some(inner),
        })
    }

    /// The value whose descriptor is registered.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let fd = csp::net::AsyncFd::new(a)?;
    /// assert!(fd.get_ref().peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn get_ref(&self) -> &T {
        self.inner.as_ref().expect("taken only by into_inner")
    }

    /// The value whose descriptor is registered.
    ///
    /// Replacing the value itself (`*fd.get_mut() = other`) does not register the new
    /// one's descriptor: waits on it then fail with an error, and dropping the
    /// `AsyncFd` leaves the operating system's registration of whatever now has the old
    /// descriptor's number alone. The `AsyncFd` knows the descriptor by its number, so
    /// a new one that the system gives the old number (the old one closed first) is
    /// taken for the old one, and waits on it never end. A replaced value kept open
    /// stays registered with the operating system's poll until it is closed (on Linux
    /// an `AsyncFd` of it fails with `AlreadyExists` until then). To wait on another
    /// value, make an `AsyncFd` of it.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let mut fd = csp::net::AsyncFd::new(a)?;
    /// fd.get_mut().set_nonblocking(true)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.as_mut().expect("taken only by into_inner")
    }

    /// Leaves the driver and gives the value back.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let fd = csp::net::AsyncFd::new(a)?;
    /// let a: std::os::unix::net::UnixStream = fd.into_inner();
    /// a.set_nonblocking(false)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_inner(mut self) -> T {
        let inner = self.inner.take().expect("taken once");
        self.leave(&inner);
        inner
    }

    /// Leaves the driver. The operating system's registration is removed only if
    /// `inner` still holds the descriptor registered. If it was replaced
    /// ([`get_mut`](AsyncFd::get_mut)), the registered descriptor's number may be
    /// another source's now (the old one closed), so only the driver's slot is let go:
    /// an old descriptor still open stays registered until it is closed.
    fn leave(&self, inner: &T) {
        if inner.as_raw_fd() == self.fd {
            self.registration.deregister(&mut SourceFd(&self.fd));
        } else {
            self.registration.release();
        }
    }

    /// Waits until the descriptor may be readable.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use std::io::Write;
    /// let (mut a, b) = std::os::unix::net::UnixStream::pair()?;
    /// b.set_nonblocking(true)?;
    /// let b = csp::net::AsyncFd::new(b)?;
    /// a.write_all(b"x")?;
    /// let _guard = b.readable().await?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn readable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        std::future::poll_fn(|cx| self.poll_read_ready(cx)).await
    }

    /// Waits until the descriptor may be writable.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let a = csp::net::AsyncFd::new(a)?;
    /// // An empty socket buffer: writable at once.
    /// let _guard = a.writable().await?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn writable(&self) -> io::Result<AsyncFdReadyGuard<'_, T>> {
        std::future::poll_fn(|cx| self.poll_write_ready(cx)).await
    }

    /// Polls for read readiness (for a hand-written future).
    ///
    /// ```
    /// # csp::block_on(async {
    /// use std::io::Write;
    /// let (mut a, b) = std::os::unix::net::UnixStream::pair()?;
    /// b.set_nonblocking(true)?;
    /// let b = csp::net::AsyncFd::new(b)?;
    /// a.write_all(b"x")?;
    /// std::future::poll_fn(|cx| b.poll_read_ready(cx).map_ok(drop)).await?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn poll_read_ready(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'_, T>>> {
        self.poll_ready(cx, Direction::Read)
    }

    /// Polls for write readiness (for a hand-written future).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let a = csp::net::AsyncFd::new(a)?;
    /// std::future::poll_fn(|cx| a.poll_write_ready(cx).map_ok(drop)).await?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn poll_write_ready(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'_, T>>> {
        self.poll_ready(cx, Direction::Write)
    }

    fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<io::Result<AsyncFdReadyGuard<'_, T>>> {
        if self.get_ref().as_raw_fd() != self.fd {
            return Poll::Ready(Err(replaced_error()));
        }
        let ready = ready!(self.registration.poll_ready(cx, direction))?;
        Poll::Ready(Ok(AsyncFdReadyGuard {
            fd: self,
            ready: Some(ready),
        }))
    }
}

/// The error of a wait on an `AsyncFd` whose value was replaced.
fn replaced_error() -> io::Error {
    io::Error::other(
        "csp: the value inside this AsyncFd was replaced through get_mut, and its \
         descriptor is not the one registered; make an AsyncFd of the new value instead",
    )
}

impl<T: AsRawFd> Drop for AsyncFd<T> {
    fn drop(&mut self) {
        if let Some(inner) = &self.inner {
            self.leave(inner);
        }
    }
}

impl<T: AsRawFd> AsRawFd for AsyncFd<T> {
    /// The descriptor of the value inside.
    fn as_raw_fd(&self) -> RawFd {
        self.get_ref().as_raw_fd()
    }
}

impl<T: AsRawFd + std::fmt::Debug> std::fmt::Debug for AsyncFd<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncFd")
            .field("inner", &self.inner)
            .finish()
    }
}

/// What [`AsyncFd::readable`] and [`AsyncFd::writable`] return: the readiness seen, to
/// clear once the call it let through would block.
///
/// ```
/// # csp::block_on(async {
/// use std::io::{Read, Write};
/// let (a, mut b) = std::os::unix::net::UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// let a = csp::net::AsyncFd::new(a)?;
/// b.write_all(b"ping")?;
/// let mut buf = [0; 16];
/// let n = loop {
///     let mut guard = a.readable().await?;
///     // `try_io` clears the readiness when the read would block: wait again then.
///     match guard.try_io(|fd| (&*fd.get_ref()).read(&mut buf)) {
///         Ok(result) => break result?,
///         Err(_would_block) => continue,
///     }
/// };
/// assert_eq!(&buf[..n], b"ping");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct AsyncFdReadyGuard<'a, T: AsRawFd> {
    fd: &'a AsyncFd<T>,
    /// `None` once cleared.
    ready: Option<ReadyGuard<'a>>,
}

/// The call [`AsyncFdReadyGuard::try_io`] ran would block: the readiness is cleared;
/// wait again.
///
/// ```
/// # csp::block_on(async {
/// use std::io::Read;
/// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
/// a.set_nonblocking(true)?;
/// let a = csp::net::AsyncFd::new(a)?;
/// let mut guard = a.writable().await?; // writable, but nothing to read
/// let mut buf = [0; 1];
/// let outcome = guard.try_io(|fd| (&*fd.get_ref()).read(&mut buf));
/// let err: csp::net::TryIoError = outcome.unwrap_err();
/// assert_eq!(err.to_string(), "the operation would block");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TryIoError(());

impl std::fmt::Display for TryIoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the operation would block")
    }
}

impl std::error::Error for TryIoError {}

impl<'a, T: AsRawFd> AsyncFdReadyGuard<'a, T> {
    /// The descriptor's owner.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let a = csp::net::AsyncFd::new(a)?;
    /// let guard = a.writable().await?;
    /// assert!(std::ptr::eq(guard.get_ref(), &a));
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn get_ref(&self) -> &'a AsyncFd<T> {
        self.fd
    }

    /// Says the descriptor is not ready after all (a call got `WouldBlock`): the next
    /// wait waits for a new event. An event that came since this guard's wait is kept.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use std::io::{ErrorKind, Read, Write};
    /// let (mut a, b) = std::os::unix::net::UnixStream::pair()?;
    /// b.set_nonblocking(true)?;
    /// a.write_all(b"hi")?;
    /// let b = csp::net::AsyncFd::new(b)?;
    /// let mut guard = b.readable().await?;
    /// let mut buf = [0; 8];
    /// assert_eq!((&*guard.get_ref().get_ref()).read(&mut buf)?, 2);
    /// // Drained: not readable after all, and the next wait waits for a new event.
    /// let err = (&*guard.get_ref().get_ref()).read(&mut buf).unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::WouldBlock);
    /// guard.clear_ready();
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn clear_ready(&mut self) {
        if let Some(ready) = self.ready.take() {
            ready.clear();
        }
    }

    /// Runs `f`, a non-blocking call on the descriptor: its result, or `Err(TryIoError)`
    /// if it would block, in which case the readiness is cleared.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use std::io::Write;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_nonblocking(true)?;
    /// let a = csp::net::AsyncFd::new(a)?;
    /// let mut guard = a.writable().await?;
    /// let written = guard.try_io(|fd| (&*fd.get_ref()).write(b"hi"));
    /// assert_eq!(written.unwrap()?, 2);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn try_io<R>(
        &mut self,
        f: impl FnOnce(&'a AsyncFd<T>) -> io::Result<R>,
    ) -> Result<io::Result<R>, TryIoError> {
        match f(self.fd) {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                self.clear_ready();
                Err(TryIoError(()))
            }
            result => Ok(result),
        }
    }
}

impl<T: AsRawFd> std::fmt::Debug for AsyncFdReadyGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncFdReadyGuard")
            .field("fd", &self.fd.fd)
            .field("cleared", &self.ready.is_none())
            .finish()
    }
}
