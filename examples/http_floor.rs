//! The floor for `scripts/load`: `http_hello`'s request handling (`shared/http.rs`) on a
//! bare event loop, with no futures and no runtime. Each of its threads (2 unless
//! `--workers` says otherwise) has a `mio::Poll` and a listener of its own on the same
//! port (`SO_REUSEPORT`: the kernel spreads connections over them), and serves its
//! connections from that poll alone. What a request costs the server here, in CPU time,
//! is what it costs to parse and answer it over epoll; a runtime costs what it adds.
//!
//! ```text
//! cargo run --release --example http_floor -- 127.0.0.1:0 --workers 2
//! ```
//!
//! It prints `listening on ADDR` once bound, then serves until killed.

#[path = "shared/http.rs"]
#[allow(dead_code)]
pub mod http;

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

/// The listener's token; a connection's is its slot in the thread's table, plus one.
const LISTENER: Token = Token(0);

fn main() -> io::Result<()> {
    let (addr, workers) = http::config();
    let workers = workers.unwrap_or(2);
    let addr: SocketAddr = addr.parse().expect("an IP address and port");
    let first = reuse_port_listener(addr)?;
    let addr = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..workers {
        listeners.push(reuse_port_listener(addr)?);
    }
    println!("listening on {addr}");
    io::stdout().flush()?;
    let threads: Vec<_> = listeners
        .into_iter()
        .map(|listener| std::thread::spawn(move || serve(listener)))
        .collect();
    for thread in threads {
        thread.join().expect("a serving thread panicked")?;
    }
    Ok(())
}

/// A non-blocking listener on `addr` with `SO_REUSEPORT`.
fn reuse_port_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(TcpListener::from_std(socket.into()))
}

/// One connection: its socket and what it has read and has yet to write.
struct Conn {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// Close once the output is written.
    closing: bool,
}

/// Serves `listener`'s connections for ever on this thread.
fn serve(mut listener: TcpListener) -> io::Result<()> {
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(1024);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut chunk = [0; http::READ_CHUNK];
    loop {
        if let Err(err) = poll.poll(&mut events, None) {
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        for event in events.iter() {
            if event.token() == LISTENER {
                accept_all(&listener, &poll, &mut conns, &mut free);
                continue;
            }
            let slot = event.token().0 - 1;
            let Some(conn) = conns[slot].as_mut() else {
                continue;
            };
            if drive(conn, &mut chunk).is_err() || (conn.closing && conn.output.is_empty()) {
                let mut conn = conns[slot].take().expect("present");
                let _ = poll.registry().deregister(&mut conn.stream);
                free.push(slot);
            }
        }
    }
}

/// Accepts every pending connection (a failed accept, out of descriptors say, waits for
/// the listener's next event).
fn accept_all(
    listener: &TcpListener,
    poll: &Poll,
    conns: &mut Vec<Option<Conn>>,
    free: &mut Vec<usize>,
) {
    while let Ok((mut stream, _)) = listener.accept() {
        let _ = stream.set_nodelay(true);
        let slot = free.pop().unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        let registered = poll.registry().register(
            &mut stream,
            Token(slot + 1),
            Interest::READABLE | Interest::WRITABLE,
        );
        if registered.is_err() {
            free.push(slot);
            continue;
        }
        conns[slot] = Some(Conn {
            stream,
            input: Vec::with_capacity(http::READ_CHUNK),
            output: Vec::with_capacity(http::READ_CHUNK),
            closing: false,
        });
    }
}

/// Reads what has come, answers it, and writes what it can; `Err` to close.
fn drive(conn: &mut Conn, chunk: &mut [u8]) -> io::Result<()> {
    if !conn.closing {
        loop {
            match conn.stream.read(chunk) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => conn.input.extend_from_slice(&chunk[..n]),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        if http::respond(&mut conn.input, &mut conn.output) == http::Next::Close {
            conn.closing = true;
        }
    }
    while !conn.output.is_empty() {
        match conn.stream.write(&conn.output) {
            Ok(n) => {
                conn.output.drain(..n);
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}
