//! A Unix domain socket listening for connections.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;

use crate::net::evented::Evented;
use crate::net::unix::UnixStream;

/// A Unix domain socket listening for connections, registered with its runtime's I/O
/// driver.
///
/// ```
/// # csp::block_on(async {
/// use csp::net::unix::{UnixListener, UnixStream};
///
/// let dir = std::env::temp_dir().join(format!("csp-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("listener.sock");
/// # let _ = std::fs::remove_file(&path);
/// let listener = UnixListener::bind(&path)?;
/// let client = UnixStream::connect(&path).await?;
/// let (server_side, _) = listener.accept().await?;
/// assert!(server_side.peer_addr().is_ok());
/// drop((client, server_side));
/// std::fs::remove_file(&path)?;
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct UnixListener {
    io: Evented<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to the socket file at `path`, listening (on Linux, FreeBSD, OpenBSD and
    /// macOS) with the largest backlog the system allows, as
    /// [`TcpListener::bind`](crate::net::TcpListener::bind) does.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("l.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let listener = csp::net::unix::UnixListener::bind(&path)?;
    /// assert!(listener.local_addr()?.as_pathname().is_some());
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        UnixListener::from_mio(mio::net::UnixListener::bind(path)?)
    }

    fn from_mio(listener: mio::net::UnixListener) -> io::Result<UnixListener> {
        Ok(UnixListener {
            io: Evented::new(listener)?,
        })
    }

    /// Takes over a listener of the standard library, made non-blocking here.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("fs.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let std = std::os::unix::net::UnixListener::bind(&path)?;
    /// let listener = csp::net::unix::UnixListener::from_std(std)?;
    /// assert!(listener.local_addr().is_ok());
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        UnixListener::from_mio(mio::net::UnixListener::from_std(listener))
    }

    /// Leaves the driver and gives the listener back to the standard library, blocking
    /// again.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("is.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let listener = csp::net::unix::UnixListener::bind(&path)?;
    /// let std: std::os::unix::net::UnixListener = listener.into_std()?;
    /// assert!(std.local_addr().is_ok());
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixListener> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's listener's, whose ownership passes here.
        let std = unsafe { std::os::unix::net::UnixListener::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Waits for a connection; its stream, and the peer's address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// use csp::net::unix::{UnixListener, UnixStream};
    /// let path = dir.join("a.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let listener = UnixListener::bind(&path)?;
    /// let _client = UnixStream::connect(&path).await?;
    /// let (_server_side, _peer) = listener.accept().await?;
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, peer) = self.io.read_with(|listener| listener.accept()).await?;
        Ok((UnixStream::from_mio(stream)?, peer))
    }

    /// The local address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let dir = std::env::temp_dir().join(format!("csp-doc-{}-{}", std::process::id(), line!()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("la.sock");
    /// # let _ = std::fs::remove_file(&path);
    /// let listener = csp::net::unix::UnixListener::bind(&path)?;
    /// assert_eq!(listener.local_addr()?.as_pathname(), Some(path.as_path()));
    /// std::fs::remove_file(&path)?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }
}

impl AsRawFd for UnixListener {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get().as_raw_fd()
    }
}

impl AsFd for UnixListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl std::fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnixListener")
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
