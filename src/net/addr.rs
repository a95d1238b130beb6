//! Socket addresses to bind or connect to: literal addresses are used as they are, and
//! host names are resolved on the blocking pool, never on a worker.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What `bind`, `connect` and `send_to` take: one or more socket addresses, or a host
/// name and port to look up (`"localhost:8080"`, `("example.com", 80)`), which is
/// resolved off the workers (the runtime's blocking pool).
///
/// ```
/// # csp::block_on(async {
/// use csp::net::{ToSocketAddrs, TcpListener};
///
/// let listener = TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// assert_eq!(addr.to_socket_addrs().await?, vec![addr]);
/// # std::io::Result::Ok(()) }).unwrap();
/// ```
pub trait ToSocketAddrs: sealed::Sealed {
    /// The addresses, in order.
    #[allow(async_fn_in_trait)]
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>>;
}

mod sealed {
    pub trait Sealed {}
}

/// The name async-net gave [`ToSocketAddrs`].
pub use self::ToSocketAddrs as AsyncToSocketAddrs;

macro_rules! literal {
    ($($ty:ty),*) => {$(
        impl sealed::Sealed for $ty {}
        impl ToSocketAddrs for $ty {
            async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
                Ok(std::net::ToSocketAddrs::to_socket_addrs(&self)?.collect())
            }
        }
    )*};
}

literal!(
    SocketAddr,
    SocketAddrV4,
    SocketAddrV6,
    (IpAddr, u16),
    (Ipv4Addr, u16),
    (Ipv6Addr, u16)
);

impl sealed::Sealed for &[SocketAddr] {}
impl ToSocketAddrs for &[SocketAddr] {
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
        Ok(self.to_vec())
    }
}

impl sealed::Sealed for &str {}
impl ToSocketAddrs for &str {
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
        match self.parse::<SocketAddr>() {
            Ok(addr) => Ok(vec![addr]),
            Err(_) => resolve(self.to_owned()).await,
        }
    }
}

impl sealed::Sealed for String {}
impl ToSocketAddrs for String {
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
        self.as_str().to_socket_addrs().await
    }
}

impl sealed::Sealed for &String {}
impl ToSocketAddrs for &String {
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
        self.as_str().to_socket_addrs().await
    }
}

impl sealed::Sealed for (&str, u16) {}
impl ToSocketAddrs for (&str, u16) {
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
        match self.0.parse::<IpAddr>() {
            Ok(ip) => Ok(vec![SocketAddr::new(ip, self.1)]),
            Err(_) => resolve((self.0.to_owned(), self.1)).await,
        }
    }
}

impl sealed::Sealed for (String, u16) {}
impl ToSocketAddrs for (String, u16) {
    async fn to_socket_addrs(self) -> io::Result<Vec<SocketAddr>> {
        (self.0.as_str(), self.1).to_socket_addrs().await
    }
}

/// Looks `host` up on the blocking pool (the current runtime's, or the default
/// runtime's).
async fn resolve<A>(host: A) -> io::Result<Vec<SocketAddr>>
where
    A: std::net::ToSocketAddrs + Send + 'static,
{
    crate::spawn_blocking(move || Ok(host.to_socket_addrs()?.collect()))
        .await
        .map_err(io::Error::other)?
}

/// Runs `op` on each address of `addrs` in turn until one succeeds; the last error if
/// none does.
pub(crate) fn first_ok<T>(
    addrs: Vec<SocketAddr>,
    mut op: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for addr in addrs {
        match op(addr) {
            Ok(done) => return Ok(done),
            Err(err) => last = Some(err),
        }
    }
    Err(last.unwrap_or_else(no_address))
}

/// The error for an address that resolved to none.
pub(crate) fn no_address() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "csp: the address resolved to no socket address",
    )
}
