//! csp inside a tokio application: a TCP upper-casing echo server whose connections are
//! served by tokio and whose work is done by a pool of csp processes.
//!
//! tokio owns the sockets: it accepts connections on a loopback port and reads each
//! connection's lines. For every line, the connection's task sends a job over a csp
//! channel to a pool of csp worker processes, with a channel for the reply, awaits the
//! reply, and writes it back. A few tokio clients send lines concurrently and check what
//! comes back.
//!
//! csp's channel and `JoinHandle` futures are plain futures that tokio tasks await, and
//! `csp::spawn` from a tokio task runs the process on csp's default runtime. One line,
//! `Builder::enter_tokio` (feature `tokio`), puts csp's threads in tokio's context, so
//! the workers use tokio too: each reply goes out under a `tokio::time::timeout`. At the
//! end the tokio side reads the csp runtime's counters through its `Handle`.
//!
//! ```text
//! cargo run --example tokio_interop --features tokio
//! ```

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Worker processes in the csp pool.
const WORKERS: usize = 4;

/// Clients connecting at once.
const CLIENTS: usize = 3;

/// What each client sends.
const LINES: [&str; 4] = [
    "hello",
    "communicating sequential processes",
    "csp and tokio, side by side",
    "goodbye",
];

/// How long a worker waits for a connection to take its reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> io::Result<()> {
    // csp's default runtime, its threads in this tokio runtime's context.
    let csp = csp::Runtime::builder()
        .enter_tokio(tokio::runtime::Handle::current())
        .build_default()?;
    let echoes = serve_clients(&csp, CLIENTS, &LINES, WORKERS).await?;
    for client_echoes in &echoes {
        assert_eq!(*client_echoes, upper_case(&LINES));
    }
    let metrics = csp.metrics();
    println!(
        "tokio_interop: {CLIENTS} clients each had {} lines upper-cased by {WORKERS} csp \
         workers ({} processes spawned, {} alive)",
        LINES.len(),
        metrics.spawned,
        metrics.processes_alive,
    );
    Ok(())
}

/// `lines`, upper-cased: what the server sends back.
pub fn upper_case(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|line| line.to_uppercase()).collect()
}

/// Starts the pool of `workers` csp processes on the runtime of `csp` (whose threads
/// are in this tokio runtime's context) and the server, runs `clients` clients at once,
/// each sending `lines`, then shuts everything down; returns what each client received
/// back.
pub async fn serve_clients(
    csp: &csp::Handle,
    clients: usize,
    lines: &[&str],
    workers: usize,
) -> io::Result<Vec<Vec<String>>> {
    let (jobs, inbox) = csp::channel::<Job>();
    let pool: Vec<csp::JoinHandle<()>> = (0..workers)
        .map(|_| csp.spawn(worker(inbox.clone())))
        .collect();
    drop(inbox);

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn(accept(listener, jobs));

    let lines: Vec<String> = lines.iter().map(|line| line.to_string()).collect();
    let clients: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(client(address, lines.clone())))
        .collect();
    let mut echoes = Vec::with_capacity(clients.len());
    for client in clients {
        echoes.push(client.await.expect("a client panicked")?);
    }

    // Stop accepting. Each connection's task ends when its client hangs up, and the
    // workers once the last of those tasks has dropped its `Sender` of jobs.
    server.abort();
    let _ = server.await;
    for worker in pool {
        worker.await.expect("a worker failed");
    }
    Ok(echoes)
}

/// A line to upper-case, and where to send the result.
struct Job {
    line: String,
    reply: csp::Sender<String>,
}

/// A csp worker process: serves jobs until every `Sender` of jobs is gone. Its reply
/// waits under a tokio timer, which works because the process's thread is in tokio's
/// context (`Builder::enter_tokio`).
async fn worker(jobs: csp::Receiver<Job>) {
    while let Ok(Job { line, reply }) = jobs.recv().await {
        // The connection may have closed meanwhile, or stalled: then the reply is
        // dropped.
        let _ = tokio::time::timeout(REPLY_TIMEOUT, reply.send(line.to_uppercase())).await;
    }
}

/// The server: a tokio task per connection.
async fn accept(listener: TcpListener, jobs: csp::Sender<Job>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, jobs.clone()));
            }
            Err(err) => eprintln!("tokio_interop: accept failed: {err}"),
        }
    }
}

/// Serves one connection: each line goes to the pool, each reply back to the client.
async fn connection(stream: TcpStream, jobs: csp::Sender<Job>) -> io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut lines = BufReader::new(reader).lines();
    while let Some(line) = lines.next_line().await? {
        // Room for the reply, so the worker need not wait for this task to take it.
        let (reply, replies) = csp::bounded(1);
        if jobs.send(Job { line, reply }).await.is_err() {
            break; // the pool is gone
        }
        let Ok(upper) = replies.recv().await else {
            break;
        };
        writer.write_all(upper.as_bytes()).await?;
        writer.write_all(b"\n").await?;
    }
    Ok(())
}

/// A client: sends each line and reads what comes back.
async fn client(address: SocketAddr, lines: Vec<String>) -> io::Result<Vec<String>> {
    let (reader, mut writer) = TcpStream::connect(address).await?.into_split();
    let mut replies = BufReader::new(reader).lines();
    let mut echoes = Vec::with_capacity(lines.len());
    for line in lines {
        writer.write_all(format!("{line}\n").as_bytes()).await?;
        let echo = replies
            .next_line()
            .await?
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        echoes.push(echo);
    }
    Ok(echoes)
}
