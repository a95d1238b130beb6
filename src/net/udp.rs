//! A UDP socket.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, RawFd};

use crate::net::addr::{ToSocketAddrs, first_ok, no_address};
use crate::net::evented::Evented;

/// A UDP socket, registered with its runtime's I/O driver.
///
/// ```
/// # csp::block_on(async {
/// use csp::net::UdpSocket;
///
/// let a = UdpSocket::bind("127.0.0.1:0").await?;
/// let b = UdpSocket::bind("127.0.0.1:0").await?;
/// a.send_to(b"hi", b.local_addr()?).await?;
/// let mut buf = [0; 8];
/// let (n, from) = b.recv_from(&mut buf).await?;
/// assert_eq!((&buf[..n], from), (&b"hi"[..], a.local_addr()?));
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub struct UdpSocket {
    io: Evented<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds to `addr` (the first of its addresses that binds).
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(socket.local_addr()?.port() != 0);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        first_ok(addr.to_socket_addrs().await?, |addr| {
            UdpSocket::from_mio(mio::net::UdpSocket::bind(addr)?)
        })
    }

    fn from_mio(socket: mio::net::UdpSocket) -> io::Result<UdpSocket> {
        Ok(UdpSocket {
            io: Evented::new(socket)?,
        })
    }

    /// Takes over a socket of the standard library, made non-blocking here.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let std = std::net::UdpSocket::bind("127.0.0.1:0")?;
    /// let socket = csp::net::UdpSocket::from_std(std)?;
    /// assert!(socket.local_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        UdpSocket::from_mio(mio::net::UdpSocket::from_std(socket))
    }

    /// Leaves the driver and gives the socket back to the standard library, blocking
    /// again.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// let std: std::net::UdpSocket = socket.into_std()?;
    /// assert!(std.local_addr().is_ok());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::net::UdpSocket> {
        let mio = self.io.into_inner();
        // SAFETY: the descriptor is mio's socket's, whose ownership passes here.
        let std = unsafe { std::net::UdpSocket::from_raw_fd(mio.into_raw_fd()) };
        std.set_nonblocking(false)?;
        Ok(std)
    }

    /// Sets the socket's default peer (the first of `addr`'s addresses that connects):
    /// [`send`](Self::send) sends there and [`recv`](Self::recv) receives only from
    /// there.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    ///
    /// let a = UdpSocket::bind("127.0.0.1:0").await?;
    /// let b = UdpSocket::bind("127.0.0.1:0").await?;
    /// a.connect(b.local_addr()?).await?;
    /// b.connect(a.local_addr()?).await?;
    /// a.send(b"ping").await?;
    /// let mut buf = [0; 4];
    /// assert_eq!(b.recv(&mut buf).await?, 4);
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        first_ok(addr.to_socket_addrs().await?, |addr| {
            self.io.get().connect(addr)
        })
    }

    /// Sends `buf` to the connected peer.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// a.connect(b.local_addr()?).await?;
    /// assert_eq!(a.send(b"hi").await?, 2);
    /// let mut buf = [0; 2];
    /// assert_eq!(b.recv_from(&mut buf).await?.0, 2);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.io.write_with(|socket| socket.send(buf)).await
    }

    /// Receives one datagram from the connected peer into `buf` (cut to fit, as with
    /// `recv_from`).
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// b.connect(a.local_addr()?).await?;
    /// a.send_to(b"hi", b.local_addr()?).await?;
    /// let mut buf = [0; 2];
    /// assert_eq!(b.recv(&mut buf).await?, 2);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read_with(|socket| socket.recv(buf)).await
    }

    /// Sends `buf` to `addr` (its first address).
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// assert_eq!(a.send_to(b"to b", b.local_addr()?).await?, 4);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], addr: A) -> io::Result<usize> {
        let addr = addr
            .to_socket_addrs()
            .await?
            .into_iter()
            .next()
            .ok_or_else(no_address)?;
        self.io.write_with(|socket| socket.send_to(buf, addr)).await
    }

    /// Receives one datagram into `buf`: the bytes copied and its sender. A datagram
    /// longer than `buf` is cut to fit, and the rest of it is lost, as with std's.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// a.send_to(b"hi", b.local_addr()?).await?;
    /// let mut buf = [0; 8];
    /// let (n, from) = b.recv_from(&mut buf).await?;
    /// assert_eq!((n, from), (2, a.local_addr()?));
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.read_with(|socket| socket.recv_from(buf)).await
    }

    /// As [`recv_from`](Self::recv_from), leaving the datagram in the socket.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// a.send_to(b"hi", b.local_addr()?).await?;
    /// let mut buf = [0; 8];
    /// assert_eq!(b.peek_from(&mut buf).await?.0, 2);
    /// assert_eq!(b.recv_from(&mut buf).await?.0, 2, "still there");
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.io.read_with(|socket| socket.peek_from(buf)).await
    }

    /// As [`recv`](Self::recv), leaving the datagram in the socket.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// b.connect(a.local_addr()?).await?;
    /// a.send_to(b"hi", b.local_addr()?).await?;
    /// let mut buf = [0; 8];
    /// assert_eq!(b.peek(&mut buf).await?, 2);
    /// assert_eq!(b.recv(&mut buf).await?, 2, "still there");
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.io.read_with(|socket| socket.peek(buf)).await
    }

    /// The local address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(socket.local_addr()?.ip().is_loopback());
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().local_addr()
    }

    /// The connected peer's address.
    ///
    /// ```
    /// # csp::block_on(async {
    /// use csp::net::UdpSocket;
    /// let (a, b) = (UdpSocket::bind("127.0.0.1:0").await?, UdpSocket::bind("127.0.0.1:0").await?);
    /// assert!(a.peer_addr().is_err(), "not connected yet");
    /// a.connect(b.local_addr()?).await?;
    /// assert_eq!(a.peer_addr()?, b.local_addr()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.io.get().peer_addr()
    }

    /// Sets `SO_BROADCAST`.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// socket.set_broadcast(true)?;
    /// assert!(socket.broadcast()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.io.get().set_broadcast(on)
    }

    /// Whether `SO_BROADCAST` is set.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(!socket.broadcast()?);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn broadcast(&self) -> io::Result<bool> {
        self.io.get().broadcast()
    }

    /// Sets the IP time-to-live.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// socket.set_ttl(8)?;
    /// assert_eq!(socket.ttl()?, 8);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.io.get().set_ttl(ttl)
    }

    /// The IP time-to-live.
    ///
    /// ```
    /// # csp::block_on(async {
    /// let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await?;
    /// assert!(socket.ttl()? > 0);
    /// # std::io::Result::Ok(()) }).unwrap();
    /// ```
    pub fn ttl(&self) -> io::Result<u32> {
        self.io.get().ttl()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.io.get().as_raw_fd()
    }
}

impl AsFd for UdpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.io.get().as_fd()
    }
}

impl std::fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local", &self.local_addr().ok())
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
