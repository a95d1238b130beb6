//! A TCP echo server in CSP style: a process per connection, talking to the rest of the
//! server over channels.
//!
//! - An acceptor process accepts connections and hands each over a channel to the main
//!   loop, which `alt!`s between that channel and the shutdown channel.
//! - Each connection is two processes: a reader that owns the socket's read half and
//!   turns it into a channel of chunks, and the connection itself, which owns the write
//!   half and `alt!`s between the next chunk (echoed back), the shutdown channel and an
//!   idle timeout (`after`).
//! - Out of file descriptors (`EMFILE`), the acceptor pauses and accepts again: the
//!   server serves again as soon as clients close.
//! - Shutdown is a channel nobody sends on: closing it (dropping its `Sender`) wakes
//!   every `recv` on it at once, so every connection sees it.
//!
//! ```text
//! cargo run --example echo_server                        # 127.0.0.1:0: a free port
//! cargo run --example echo_server -- 127.0.0.1:7000 --workers 2 --idle-ms 5000
//! nc 127.0.0.1 7000
//! ```
//!
//! It prints `listening on ADDR` once bound, then serves until killed. The address may
//! also come from `ECHO_ADDR`, the worker count from `ECHO_WORKERS`.

use std::io::{self, Write};
use std::time::Duration;

use csp::net::{AsyncReadExt, AsyncWriteExt, Shutdown, TcpListener, TcpStream};

/// How long a connection may stay silent before the server closes it, unless
/// `--idle-ms` says otherwise.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes one read asks for.
const CHUNK: usize = 4096;

fn main() -> io::Result<()> {
    let config = Config::from_args();
    let mut builder = csp::Runtime::builder();
    if let Some(workers) = config.workers {
        builder.worker_threads(workers);
    }
    let rt = builder.thread_name("echo").build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(config.addr.as_str()).await?;
        let mut stdout = io::stdout();
        writeln!(stdout, "listening on {}", listener.local_addr()?)?;
        stdout.flush()?;
        // Kept for as long as the server runs: it is never shut down.
        let (_shutdown, shutdown_rx) = csp::channel::<()>();
        serve(listener, shutdown_rx, config.idle).await.map(drop)
    })
}

/// Where to listen, with how many workers, and the idle timeout.
struct Config {
    addr: String,
    workers: Option<usize>,
    idle: Duration,
}

impl Config {
    /// `[ADDR] [--workers N] [--idle-ms MS]`, or `ECHO_ADDR` and `ECHO_WORKERS`.
    fn from_args() -> Config {
        let mut config = Config {
            addr: std::env::var("ECHO_ADDR").unwrap_or_else(|_| "127.0.0.1:0".to_owned()),
            workers: std::env::var("ECHO_WORKERS")
                .ok()
                .map(|n| number(&n, "workers")),
            idle: IDLE_TIMEOUT,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--workers" => {
                    config.workers = Some(number(&args.next().unwrap_or_default(), "workers"))
                }
                "--idle-ms" => {
                    let ms = number(&args.next().unwrap_or_default(), "idle-ms");
                    config.idle = Duration::from_millis(ms as u64);
                }
                _ => config.addr = arg,
            }
        }
        config
    }
}

fn number(s: &str, what: &str) -> usize {
    match s.parse() {
        Ok(n) if n >= 1 => n,
        _ => panic!("--{what} takes an integer of at least 1, not {s:?}"),
    }
}

/// What `serve` did, once shut down.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// Connections accepted.
    pub connections: usize,
}

/// Serves connections on `listener` until `shutdown` is closed (or sent on); then closes
/// `shutdown` and every connection, and returns once all their processes have ended. A
/// connection silent for `idle` is closed.
pub async fn serve(
    listener: TcpListener,
    shutdown: csp::Receiver<()>,
    idle: Duration,
) -> io::Result<Served> {
    let (accepted_tx, accepted) = csp::channel::<io::Result<TcpStream>>();
    let acceptor = csp::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => Ok(stream),
                // Out of file descriptors: connections that close make room. Neither end
                // the loop nor spin on the error: pause, then accept again.
                Err(err) if out_of_descriptors(&err) => {
                    csp::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
                Err(err) => Err(err),
            };
            if accepted_tx.send(stream).await.is_err() {
                return; // the server stopped
            }
        }
    });
    // Every connection holds a clone of `done_tx`: `done.recv()` fails once all ended.
    let (done_tx, done) = csp::channel::<()>();
    let mut served = Served::default();
    let result = loop {
        csp::alt! {
            recv(accepted) -> stream => match stream {
                Ok(Ok(stream)) => {
                    served.connections += 1;
                    csp::spawn(connection(stream, shutdown.clone(), idle, done_tx.clone()));
                }
                // A connection that failed before it was accepted (reset by its client,
                // say) is the client's business; running out of descriptors is ours.
                Ok(Err(err)) if is_transient(&err) => {}
                Ok(Err(err)) => break Err(err),
                Err(_) => break Ok(served), // the acceptor is gone (it panicked)
            },
            recv(shutdown) -> _ => break Ok(served),
        }
    };
    acceptor.abort();
    let _ = acceptor.await;
    // Closed, whether by its sender or here (a value sent, an error): every connection
    // sees it.
    shutdown.close();
    drop(done_tx);
    let _ = done.recv().await;
    result
}

/// How long the acceptor pauses when the process is out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// True for the errors of an `accept` that mean the process (or the system) has no file
/// descriptor, or buffer, to spare right now: `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`.
pub fn out_of_descriptors(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(23 | 24 | 105 | 12))
}

fn is_transient(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// Echoes what the client sends until it closes its side, goes silent for `idle`, or the
/// server shuts down; then closes the connection.
async fn connection(
    stream: TcpStream,
    shutdown: csp::Receiver<()>,
    idle: Duration,
    _done: csp::Sender<()>,
) {
    let (chunks_tx, chunks) = csp::channel::<Vec<u8>>();
    // A reader process owns the read half; this process writes through the other.
    let (mut reader, mut writer) = stream.into_split();
    // The reader ends at end of stream, on an error, or once nobody takes its chunks.
    let reader = csp::spawn(async move {
        loop {
            let mut chunk = vec![0; CHUNK];
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    chunk.truncate(n);
                    if chunks_tx.send(chunk).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    loop {
        csp::alt! {
            recv(chunks) -> chunk => match chunk {
                Ok(chunk) => {
                    if writer.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
                Err(_) => break, // the client closed its side, or the read failed
            },
            recv(shutdown) -> _ => break,
            after(idle) => break,
        }
    }
    // Ends the reader's pending read, if any, and tells the client.
    let _ = writer.stream().shutdown(Shutdown::Both);
    drop(chunks);
    let _ = reader.await;
}
