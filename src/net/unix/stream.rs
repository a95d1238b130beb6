//! A Unix domain stream socket.

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;

use crate::net::evented::Evented;
use crate::net::split::{ReadHalf, Split, WriteHalf, sealed, split};
use crate::net::stream_io::stream_io;

/// A Unix domain stream socket, registered with its runtime's I/O driver: read and write
/// it as a [`TcpStream`](crate::net::TcpStream).
///
/// ```
/// # csp::block_on(async {
/// use csp::net::{AsyncReadExt, AsyncWriteExt};
/// use csp::net::unix::UnixStream;
///
/// let (mut a, mut b) = UnixStream::pair()?;
/// a.write_all(b"over").await?;
/// let mut buf = [0; 4];
/// b.read_exact(&mut buf).await?;
/// assert_eq!(&buf, b"over");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct UnixStream {
    io: Evented<mio::net::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket file at `path`.
    pub async fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let stream = UnixStream::from_mio(mio::net::UnixStream::connect(path)?)?;
        // A connect that did not finish at once has once the socket is writable.
        stream.io.writable().await?;
        if let Some(err) = stream.io.get().take_error()? {
            return Err(err);
        }
        Ok(stream)
    }

    /// A pair of connected sockets.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((UnixStream::from_mio(a)?, UnixStream::from_mio(b)?))
    }

    pub(crate) fn from_mio(stream: mio::net::UnixStream) -> io::Result<UnixStream> {
        Ok(UnixStream {
            io: Evented::new(stream)?,
        })
    }

    /// Takes over a stream of the standard library, made non-blocking here.
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        UnixStream::from_mio(mio::net::UnixStream::from_std(stream))
    }

    /// Leaves the driver and gives the stream back to the standard library, blocking
    /// again.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's stream's, whose ownership passes here.
        let std = unsafe { std::os::unix::net::UnixStream::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Splits the stream into a read half and a write half that two processes can own
    /// (as [`TcpStream::into_split`](crate::net::TcpStream::into_split)).
    pub fn into_split(self) -> (ReadHalf<UnixStream>, WriteHalf<UnixStream>) {
        split(self)
    }

    /// Shuts the reading side, the writing side, or both down.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }
}

stream_io!(UnixStream);

impl sealed::Sealed for UnixStream {}

impl Split for UnixStream {
    fn shut_write(&self) -> io::Result<()> {
        self.shutdown_write()
    }
}

impl AsRawFd for UnixStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get().as_raw_fd()
    }
}

impl AsFd for UnixStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl std::fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixStream")
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
