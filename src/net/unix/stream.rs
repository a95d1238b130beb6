//! A Unix domain stream socket.

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::net::evented::Evented;
use crate::net::split::{ReadHalf, Split, WriteHalf, sealed, split};
use crate::net::stream_io::stream_io;

/// The longest pause between two tries of a connect refused by a full backlog.
const CONNECT_RETRY_MAX: Duration = Duration::from_millis(50);

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
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// use csp::net::unix::{UnixListener, UnixStream};
    /// let path = dir.join("sc.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let _listener = UnixListener::bind(&path)?;
    /// let stream = UnixStream::connect(&path).await?;
    /// assert_eq!(stream.peer_addr()?.as_pathname(), Some(path.as_path()));
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let addr = SocketAddr::from_pathname(path)?;
        // A listener whose backlog is full refuses at once with `WouldBlock`, and there
        // is no socket yet to wait on: try again after a pause that doubles.
        let mut pause = Duration::from_micros(100);
        let stream = loop {
            match mio::net::UnixStream::connect_addr(&addr) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    crate::sleep(pause).await;
                    pause = (pause * 2).min(CONNECT_RETRY_MAX);
                }
                connected => break connected?,
            }
        };
        let stream = UnixStream::from_mio(stream)?;
        // A connect that did not finish at once has once the socket is writable.
        stream.io.writable().await?;
        if let Some(err) = stream.io.get().take_error()? {
            return Err(err);
        }
        Ok(stream)
    }

    /// A pair of connected sockets.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, b) = csp::net::unix::UnixStream::pair()?;
    /// assert!(a.peer_addr()?.is_unnamed() && b.local_addr()?.is_unnamed());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
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
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// let a = csp::net::unix::UnixStream::from_std(a)?;
    /// assert!(a.peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        UnixStream::from_mio(mio::net::UnixStream::from_std(stream))
    }

    /// Leaves the driver and gives the stream back to the standard library, blocking
    /// again.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixStream::pair()?;
    /// let a: std::os::unix::net::UnixStream = a.into_std()?;
    /// assert!(a.peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's stream's, whose ownership passes here.
        let std = unsafe { std::os::unix::net::UnixStream::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Splits the stream into a read half and a write half that two processes can own
    /// (as [`TcpStream::into_split`](crate::net::TcpStream::into_split)).
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{AsyncReadExt, AsyncWriteExt};
    /// let (a, b) = csp::net::unix::UnixStream::pair()?;
    /// let (mut reader, mut writer) = a.into_split();
    /// let mut b = b;
    /// writer.write_all(b"out").await?;
    /// let mut got = [0; 3];
    /// b.read_exact(&mut got).await?;
    /// b.write_all(b"in").await?;
    /// let mut back = [0; 2];
    /// reader.read_exact(&mut back).await?;
    /// assert_eq!((&got, &back), (b"out", b"in"));
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_split(self) -> (ReadHalf<UnixStream>, WriteHalf<UnixStream>) {
        split(self)
    }

    /// Shuts the reading side, the writing side, or both down.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::AsyncReadExt;
    /// let (a, mut b) = csp::net::unix::UnixStream::pair()?;
    /// a.shutdown(std::net::Shutdown::Write)?;
    /// let mut rest = Vec::new();
    /// b.read_to_end(&mut rest).await?;
    /// assert!(rest.is_empty());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// The local address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixStream::pair()?;
    /// assert!(a.local_addr()?.is_unnamed());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The peer's address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixStream::pair()?;
    /// assert!(a.peer_addr()?.is_unnamed());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
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
