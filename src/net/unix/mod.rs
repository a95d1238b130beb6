//! Unix domain sockets: a listener and its streams, and datagram sockets, registered
//! with their runtime's I/O driver as the TCP and UDP types are.

mod datagram;
mod listener;
mod stream;

pub use datagram::UnixDatagram;
pub use listener::UnixListener;
pub use std::os::unix::net::SocketAddr;
pub use stream::UnixStream;
