//! A TCP socket listening for connections.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::net::addr::{ToSocketAddrs, first_ok};
use crate::net::evented::Evented;
use crate::net::tcp_stream::TcpStream;
use crate::tuning::LISTEN_BACKLOG;

/// A TCP socket listening for connections, registered with its runtime's I/O driver.
///
/// Made by [`bind`](TcpListener::bind) inside a process or a `block_on` future (or
/// anywhere, on the default runtime). An accept loop is a process like any other; on an
/// error such as running out of file descriptors (`EMFILE`), a server should pause and go
/// on rather than end the loop:
///
/// ```no_run
/// use std::time::Duration;
/// use csp::net::TcpListener;
///
/// # csp::block_on(async {
/// let listener = TcpListener::bind("127.0.0.1:8080").await?;
/// loop {
///     match listener.accept().await {
///         Ok((stream, _peer)) => {
///             csp::spawn(async move {
///                 // serve `stream`
///                 drop(stream);
///             });
///         }
///         // Out of file descriptors (or another transient failure): clients that
///         // close make room; try again shortly.
///         Err(_) => csp::sleep(Duration::from_millis(10)).await,
///     }
/// }
/// # #[allow(unreachable_code)]
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct TcpListener {
    io: Evented<mio::net::TcpListener>,
}

/// A socket listening on `addr`, with `SO_REUSEADDR` on Unix (as `mio` sets it: a
/// restarted server binds again while its old connections linger), close-on-exec, and
/// the backlog of [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

impl TcpListener {
    /// Binds to `addr` (the first of its addresses that binds), with `SO_REUSEADDR`, and
    /// listens with the largest backlog the system allows (on Linux
    /// `net.core.somaxconn`, 4096 by default), as Go's `net.Listen` does: a burst of
    /// connections beyond the 128 that `mio`, tokio and the standard library ask for waits
    /// in the backlog
    /// for the accept loop rather than have its handshakes dropped and retried a second
    /// later. For another backlog, make the listener yourself and pass it to
    /// [`from_std`](TcpListener::from_std).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let listener = csp::net::TcpListener::bind("127.0.0.1:0").await?;
    /// assert!(listener.local_addr()?.port() != 0);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        first_ok(addr.to_socket_addrs().await?, |addr| {
            TcpListener::from_std(listen(addr)?)
        })
    }

    fn from_mio(listener: mio::net::TcpListener) -> io::Result<TcpListener> {
        Ok(TcpListener {
            io: Evented::new(listener)?,
        })
    }

    /// Takes over a listener of the standard library, made non-blocking here.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let std = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let listener = csp::net::TcpListener::from_std(std)?;
    /// assert!(listener.local_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        TcpListener::from_mio(mio::net::TcpListener::from_std(listener))
    }

    /// Leaves the driver and gives the listener back to the standard library, blocking
    /// again.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let listener = csp::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let std: std::net::TcpListener = listener.into_std()?;
    /// assert!(std.local_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::net::TcpListener> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's listener's, whose ownership passes here.
        let std = unsafe { std::net::TcpListener::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Waits for a connection; its stream, and the peer's address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    ///
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// let client = csp::spawn(async move { TcpStream::connect(addr).await });
    /// let (server_side, peer) = listener.accept().await?;
    /// let client = client.await.unwrap()?;
    /// assert_eq!(peer, client.local_addr()?);
    /// assert_eq!(server_side.peer_addr()?, client.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (stream, peer) = self.io.read_with(|listener| listener.accept()).await?;
        Ok((TcpStream::from_mio(stream)?, peer))
    }

    /// Polls for a connection (for a hand-written future or stream).
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// csp::spawn(async move { TcpStream::connect(addr).await });
    /// let (_stream, _peer) = std::future::poll_fn(|cx| listener.poll_accept(cx)).await?;
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        self.io
            .poll_read_with(cx, |listener| listener.accept())
            .map(|accepted| {
                let (stream, peer) = accepted?;
                Ok((TcpStream::from_mio(stream)?, peer))
            })
    }

    /// The connections, as a stream of accepted streams.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use futures::StreamExt;
    /// use csp::net::{TcpListener, TcpStream};
    ///
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// csp::spawn(async move { TcpStream::connect(addr).await });
    /// let first = listener.incoming().next().await.unwrap()?;
    /// assert_eq!(first.local_addr()?, addr);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The local address it listens on.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let listener = csp::net::TcpListener::bind("127.0.0.1:0").await?;
    /// assert!(listener.local_addr()?.ip().is_loopback());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// Sets the IP time-to-live of the connections it accepts.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let listener = csp::net::TcpListener::bind("127.0.0.1:0").await?;
    /// listener.set_ttl(64)?;
    /// assert_eq!(listener.ttl()?, 64);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.io.get().set_ttl(ttl)
    }

    /// The IP time-to-live.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let listener = csp::net::TcpListener::bind("127.0.0.1:0").await?;
    /// assert!(listener.ttl()? > 0);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn ttl(&self) -> io::Result<u32> {
        self.io.get().ttl()
    }
}

/// The stream of [`TcpListener::incoming`]: each accepted connection, forever (an
/// accept error is an item, not the end).
///
/// ```
/// # csp::block_on(async {
/// use futures::StreamExt;
/// let listener = csp::net::TcpListener::bind("127.0.0.1:0").await?;
/// let _client = csp::net::TcpStream::connect(listener.local_addr()?).await?;
/// let mut incoming = listener.incoming();
/// let conn = incoming.next().await.expect("incoming never ends")?;
/// assert_eq!(conn.local_addr()?, listener.local_addr()?);
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
#[must_use = "streams do nothing unless polled"]
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl futures::Stream for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.listener
            .poll_accept(cx)
            .map(|accepted| Some(accepted.map(|(stream, _)| stream)))
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get().as_raw_fd()
    }
}

impl AsFd for TcpListener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl std::fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpListener")
            .field("addr", &self.local_addr().ok())
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
