//! A TCP connection.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};

use crate::net::addr::{ToSocketAddrs, no_address};
use crate::net::evented::Evented;
use crate::net::split::{ReadHalf, Split, WriteHalf, sealed, split};
use crate::net::stream_io::stream_io;

/// A TCP connection, registered with its runtime's I/O driver. Read and write it with
/// `futures`' [`AsyncReadExt`](crate::net::AsyncReadExt) and
/// [`AsyncWriteExt`](crate::net::AsyncWriteExt); `&TcpStream` reads and writes too, and
/// [`into_split`](TcpStream::into_split) gives a reader process and a writer process
/// each their own half.
///
/// ```
/// # csp::block_on(async {
/// use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};
///
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// csp::spawn(async move {
///     let (mut conn, _) = listener.accept().await?;
///     conn.write_all(b"hello").await?;
///     std::io::Result::Ok(())
/// });
/// let mut stream = TcpStream::connect(addr).await?;
/// let mut got = String::new();
/// stream.read_to_string(&mut got).await?;
/// assert_eq!(got, "hello");
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct TcpStream {
    io: Evented<mio::net::TcpStream>,
}

impl TcpStream {
    /// Connects to `addr` (the first of its addresses that accepts).
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// assert_eq!(stream.peer_addr()?, listener.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let mut last = None;
        for addr in addr.to_socket_addrs().await? {
            match TcpStream::connect_addr(addr).await {
                Ok(stream) => return Ok(stream),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(no_address))
    }

    async fn connect_addr(addr: SocketAddr) -> io::Result<TcpStream> {
        let stream = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?)?;
        // The connect is under way: it has finished once the socket is writable.
        stream.io.writable().await?;
        if let Some(err) = stream.io.get().take_error()? {
            return Err(err);
        }
        // Not connected (refused without an error reported yet): this says why.
        stream.io.get().peer_addr()?;
        Ok(stream)
    }

    pub(crate) fn from_mio(stream: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            io: Evented::new(stream)?,
        })
    }

    /// Takes over a connected stream of the standard library, made non-blocking here.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let std = std::net::TcpStream::connect(listener.local_addr()?)?;
    /// let stream = csp::net::TcpStream::from_std(std)?;
    /// assert_eq!(stream.peer_addr()?, listener.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        TcpStream::from_mio(mio::net::TcpStream::from_std(stream))
    }

    /// Leaves the driver and gives the stream back to the standard library, blocking
    /// again.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// let std: std::net::TcpStream = stream.into_std()?;
    /// assert!(std.peer_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's stream's, whose ownership passes here.
        let std = unsafe { std::net::TcpStream::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Splits the stream into a read half and a write half that two processes can own.
    /// Dropping the write half shuts the connection down for writing (the peer reads
    /// the end of the stream); the connection closes once both halves are gone.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};
    ///
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// // The server echoes with a reader process and a writer process, joined by a
    /// // channel.
    /// csp::spawn(async move {
    ///     let (conn, _) = listener.accept().await?;
    ///     let (mut reader, mut writer) = conn.into_split();
    ///     let (tx, rx) = csp::channel::<Vec<u8>>();
    ///     csp::spawn(async move {
    ///         while let Ok(chunk) = rx.recv().await {
    ///             writer.write_all(&chunk).await?;
    ///         }
    ///         std::io::Result::Ok(())
    ///     });
    ///     let mut buf = [0; 64];
    ///     loop {
    ///         let n = reader.read(&mut buf).await?;
    ///         if n == 0 || tx.send(buf[..n].to_vec()).await.is_err() {
    ///             return std::io::Result::Ok(());
    ///         }
    ///     }
    /// });
    /// let mut client = TcpStream::connect(addr).await?;
    /// client.write_all(b"ping").await?;
    /// let mut reply = [0; 4];
    /// client.read_exact(&mut reply).await?;
    /// assert_eq!(&reply, b"ping");
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_split(self) -> (ReadHalf<TcpStream>, WriteHalf<TcpStream>) {
        split(self)
    }

    /// Reads into `buf` without taking the bytes out of the socket's buffer.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};
    ///
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let mut client = TcpStream::connect(listener.local_addr()?).await?;
    /// let (mut server, _) = listener.accept().await?;
    /// client.write_all(b"hi").await?;
    /// let mut buf = [0; 2];
    /// assert_eq!(server.peek(&mut buf).await?, 2);
    /// server.read_exact(&mut buf).await?;
    /// assert_eq!(&buf, b"hi");
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read_with(|stream| stream.peek(buf)).await
    }

    /// Shuts the reading side, the writing side, or both down, as
    /// [`std::net::TcpStream::shutdown`].
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{AsyncReadExt, Shutdown, TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// let (mut server, _) = listener.accept().await?;
    /// stream.shutdown(Shutdown::Write)?;
    /// let mut rest = Vec::new();
    /// server.read_to_end(&mut rest).await?;
    /// assert!(rest.is_empty(), "the end of the stream");
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.get().shutdown(how)
    }

    /// The local address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// assert!(stream.local_addr()?.ip().is_loopback());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The peer's address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// assert_eq!(stream.peer_addr()?, listener.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }

    /// Sets `TCP_NODELAY`: small writes go out at once rather than wait to be merged.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// stream.set_nodelay(true)?;
    /// assert!(stream.nodelay()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.io.get().set_nodelay(nodelay)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// assert!(!stream.nodelay()?, "off until set");
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        self.io.get().nodelay()
    }

    /// Sets the IP time-to-live.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// stream.set_ttl(32)?;
    /// assert_eq!(stream.ttl()?, 32);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.io.get().set_ttl(ttl)
    }

    /// The IP time-to-live.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:0").await?;
    /// let stream = TcpStream::connect(listener.local_addr()?).await?;
    /// assert!(stream.ttl()? > 0);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn ttl(&self) -> io::Result<u32> {
        self.io.get().ttl()
    }
}

stream_io!(TcpStream);

impl sealed::Sealed for TcpStream {}

impl Split for TcpStream {
    fn shut_write(&self) -> io::Result<()> {
        self.shutdown_write()
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get().as_raw_fd()
    }
}

impl AsFd for TcpStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl std::fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
