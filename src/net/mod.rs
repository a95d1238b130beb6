//! Network I/O for processes, on the runtime's own I/O driver (`mio`); with the `io`
//! feature (on by default).
//!
//! A socket registers, once, with the I/O driver of the runtime it is made in (the
//! default runtime outside any): a worker with nothing to do sleeps in that driver's
//! poll, and a socket that becomes ready wakes its process on that worker, with no
//! thread of the driver's own. Read and write streams with `futures`' `AsyncReadExt` and
//! `AsyncWriteExt`, re-exported here. A process waiting on a socket is never reported
//! as deadlocked: the driver holds its waker.
//!
//! ```
//! use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener, TcpStream};
//!
//! #[csp::main(worker_threads = 2)]
//! async fn main() -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:0").await?;
//!     let addr = listener.local_addr()?;
//!     // A process per connection, echoing what it reads.
//!     csp::spawn(async move {
//!         let (mut conn, _) = listener.accept().await?;
//!         let mut buf = [0; 64];
//!         let n = conn.read(&mut buf).await?;
//!         conn.write_all(&buf[..n]).await?;
//!         std::io::Result::Ok(())
//!     });
//!     let mut client = TcpStream::connect(addr).await?;
//!     client.write_all(b"ping").await?;
//!     let mut reply = [0; 4];
//!     client.read_exact(&mut reply).await?;
//!     assert_eq!(&reply, b"ping");
//!     Ok(())
//! }
//! ```
//!
//! - `tcp_listener.rs`, `tcp_stream.rs`, `udp.rs`, `unix/`: the socket types;
//! - `split.rs`: a stream's owned read and write halves, for a reader process and a
//!   writer process per connection;
//! - `async_fd.rs`: any other file descriptor;
//! - `evented.rs`, `stream_io.rs`, `addr.rs`: what they share: the registered source,
//!   the I/O traits, addresses to bind and connect to.
//!
//! May use: `runtime` (its I/O driver) and below.

mod addr;
mod async_fd;
mod evented;
mod split;
mod stream_io;
mod tcp_listener;
mod tcp_stream;
mod udp;
pub mod unix;

pub use addr::{AsyncToSocketAddrs, ToSocketAddrs};
pub use async_fd::{AsyncFd, AsyncFdReadyGuard, TryIoError};
pub use futures::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
pub use split::{ReadHalf, Split, WriteHalf};
pub use std::net::{Shutdown, SocketAddr};
pub use tcp_listener::{Incoming, TcpListener};
pub use tcp_stream::TcpStream;
pub use udp::UdpSocket;
