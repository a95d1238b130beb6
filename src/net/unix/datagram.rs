//! A Unix domain datagram socket.

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;

use crate::net::evented::Evented;

/// A Unix domain datagram socket, registered with its runtime's I/O driver.
///
/// ```
/// # csp::block_on(async {
/// use csp::net::unix::UnixDatagram;
///
/// let (a, b) = UnixDatagram::pair()?;
/// a.send(b"one").await?;
/// let mut buf = [0; 8];
/// assert_eq!(b.recv(&mut buf).await?, 3);
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct UnixDatagram {
    io: Evented<mio::net::UnixDatagram>,
}

impl UnixDatagram {
    /// Binds to the socket file at `path`.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("d.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let socket = csp::net::unix::UnixDatagram::bind(&path)?;
    /// assert!(socket.local_addr()?.as_pathname().is_some());
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        UnixDatagram::from_mio(mio::net::UnixDatagram::bind(path)?)
    }

    /// A socket bound to no address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::unix::UnixDatagram::unbound()?;
    /// assert!(socket.local_addr()?.is_unnamed());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::from_mio(mio::net::UnixDatagram::unbound()?)
    }

    /// A pair of connected sockets.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, b) = csp::net::unix::UnixDatagram::pair()?;
    /// a.send(b"x").await?;
    /// assert_eq!(b.recv(&mut [0; 1]).await?, 1);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = mio::net::UnixDatagram::pair()?;
        Ok((UnixDatagram::from_mio(a)?, UnixDatagram::from_mio(b)?))
    }

    fn from_mio(socket: mio::net::UnixDatagram) -> io::Result<UnixDatagram> {
        Ok(UnixDatagram {
            io: Evented::new(socket)?,
        })
    }

    /// Takes over a socket of the standard library, made non-blocking here.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = std::os::unix::net::UnixDatagram::pair()?;
    /// let a = csp::net::unix::UnixDatagram::from_std(a)?;
    /// assert!(a.peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn from_std(socket: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(true)?;
        UnixDatagram::from_mio(mio::net::UnixDatagram::from_std(socket))
    }

    /// Leaves the driver and gives the socket back to the standard library, blocking
    /// again.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixDatagram::pair()?;
    /// let a: std::os::unix::net::UnixDatagram = a.into_std()?;
    /// assert!(a.peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's socket's, whose ownership passes here.
        let std = unsafe { std::os::unix::net::UnixDatagram::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Sets the default peer to the socket file at `path`.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("c.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let server = csp::net::unix::UnixDatagram::bind(&path)?;
    /// let client = csp::net::unix::UnixDatagram::unbound()?;
    /// client.connect(&path)?;
    /// client.send(b"hi").await?;
    /// assert_eq!(server.recv(&mut [0; 2]).await?, 2);
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        self.io.get().connect(path)
    }

    /// Sends `buf` to the connected peer.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, b) = csp::net::unix::UnixDatagram::pair()?;
    /// assert_eq!(a.send(b"hi").await?, 2);
    /// assert_eq!(b.recv(&mut [0; 2]).await?, 2);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.write_with(|socket| socket.send(buf)).await
    }

    /// Receives one datagram from the connected peer (cut to fit `buf`, as with
    /// `recv_from`).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, b) = csp::net::unix::UnixDatagram::pair()?;
    /// a.send(b"hi").await?;
    /// let mut buf = [0; 8];
    /// assert_eq!(b.recv(&mut buf).await?, 2);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read_with(|socket| socket.recv(buf)).await
    }

    /// Sends `buf` to the socket file at `path`.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("s.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let server = csp::net::unix::UnixDatagram::bind(&path)?;
    /// let client = csp::net::unix::UnixDatagram::unbound()?;
    /// assert_eq!(client.send_to(b"hi", &path).await?, 2);
    /// assert_eq!(server.recv(&mut [0; 2]).await?, 2);
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn send_to<P: AsRef<Path>>(&self, buf: &[u8], path: P) -> io::Result<usize> {
        let path = path.as_ref();
        self.io.write_with(|socket| socket.send_to(buf, path)).await
    }

    /// Receives one datagram: the bytes copied and its sender. A datagram longer than
    /// `buf` is cut to fit, and the rest of it is lost, as with std's.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, b) = csp::net::unix::UnixDatagram::pair()?;
    /// a.send(b"hi").await?;
    /// let mut buf = [0; 8];
    /// let (n, _from) = b.recv_from(&mut buf).await?;
    /// assert_eq!(n, 2);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.read_with(|socket| socket.recv_from(buf)).await
    }

    /// Shuts the reading side, the writing side, or both down.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixDatagram::pair()?;
    /// a.shutdown(std::net::Shutdown::Write)?;
    /// assert!(a.send(b"x").await.is_err());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// The local address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixDatagram::pair()?;
    /// assert!(a.local_addr()?.is_unnamed());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The connected peer's address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let (a, _b) = csp::net::unix::UnixDatagram::pair()?;
    /// assert!(a.peer_addr()?.is_unnamed());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }
}

impl AsRawFd for UnixDatagram {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get().as_raw_fd()
    }
}

impl AsFd for UnixDatagram {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl std::fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixDatagram")
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
