//! What a server on `csp::net` must survive: two thousand connections at once, peers
//! that reset or half-close, clients too slow or too idle (slowloris), and running out
//! of file descriptors (`EMFILE`), from which it must recover without ending or
//! spinning its accept loop.
//!
//! Every test runs under a watchdog (`common::bounded`), one at a time, and ends with
//! the runtimes' live processes back to none and every file descriptor it opened closed
//! (`common::net::Fds`).

#![cfg(feature = "io")]

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::net::{Fds, cpu_ticks, lower_fd_limit, raise_fd_limit};
use common::{bounded, wait_until};
use csp::net::{AsyncReadExt, AsyncWriteExt, TcpListener};

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

#[path = "../examples/http_hello.rs"]
#[allow(dead_code)]
mod http_hello;

/// Seconds a test may take before the watchdog fails it.
const LIMIT: u64 = 120;

/// Waits (bounded) until `rt` has no live process.
fn assert_processes_gone(rt: &csp::Runtime) {
    wait_until(10, "every process of the runtime has ended", || {
        rt.metrics().processes_alive == 0
    });
}

/// An echo server on a runtime of its own.
fn echo_server(
    idle: Duration,
) -> (
    csp::Runtime,
    SocketAddr,
    csp::Sender<()>,
    csp::JoinHandle<std::io::Result<echo_server::Served>>,
) {
    let rt = common::runtime(2, "echo");
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let (shutdown, shutdown_rx) = csp::channel();
    let server = rt.spawn(echo_server::serve(listener, shutdown_rx, idle));
    (rt, addr, shutdown, server)
}

#[test]
fn two_thousand_connections_at_once_are_each_echoed() {
    const CONNECTIONS: usize = 2_000;
    // Both ends of every connection live in this process.
    let limit = raise_fd_limit(3 * CONNECTIONS as u64);
    assert!(
        limit >= 2 * CONNECTIONS as u64 + 200,
        "this test needs {} open files; the hard limit is {limit}",
        2 * CONNECTIONS + 200
    );
    let fds = Fds::start();
    bounded(LIMIT, || {
        let (server_rt, addr, shutdown, server) = echo_server(Duration::from_secs(60));
        // The clients are processes of another runtime: they connect, all of them, and
        // only then does each talk and half-close.
        let clients = common::runtime(2, "clients");
        let echoed = clients.block_on(async move {
            let connecting: Vec<_> = (0..CONNECTIONS)
                .map(|_| csp::spawn(async move { csp::net::TcpStream::connect(addr).await }))
                .collect();
            let mut streams = Vec::with_capacity(CONNECTIONS);
            for connected in connecting {
                streams.push(connected.await.unwrap().expect("connect"));
            }
            let talking: Vec<_> = streams
                .into_iter()
                .enumerate()
                .map(|(i, mut stream)| {
                    csp::spawn(async move {
                        let msg = format!("connection {i} of {CONNECTIONS}\n");
                        stream.write_all(msg.as_bytes()).await?;
                        let mut back = vec![0; msg.len()];
                        stream.read_exact(&mut back).await?;
                        assert_eq!(back, msg.as_bytes());
                        stream.close().await?;
                        let mut rest = Vec::new();
                        stream.read_to_end(&mut rest).await?;
                        assert!(rest.is_empty());
                        std::io::Result::Ok(())
                    })
                })
                .collect();
            let mut echoed = 0;
            for talk in talking {
                talk.await.unwrap().expect("echo");
                echoed += 1;
            }
            echoed
        });
        assert_eq!(echoed, CONNECTIONS);
        assert_processes_gone(&clients);
        drop(clients);
        drop(shutdown);
        let served = server_rt.block_on(server).unwrap().unwrap();
        assert_eq!(served.connections, CONNECTIONS);
        assert_processes_gone(&server_rt);
    });
    fds.assert_none_left();
}

/// How many connections the backlog tests open at once: 1,500, or the system's cap on a
/// backlog (Linux's `net.core.somaxconn`) if lower. Raises the limit on open files for
/// both ends of each.
#[cfg(target_os = "linux")]
fn backlog_burst() -> usize {
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|cap| cap.trim().parse().ok())
        .unwrap_or(4096);
    let burst = somaxconn.min(1_500);
    let limit = raise_fd_limit(3 * burst as u64);
    assert!(
        limit >= 2 * burst as u64 + 200,
        "this test needs {} open files; the hard limit is {limit}",
        2 * burst + 200
    );
    burst
}

/// Accepts the `burst` connections that `clients` made, through `accept`, on `rt`; then,
/// with both ends closed, checks that the runtime has no process left.
#[cfg(target_os = "linux")]
fn accept_the_burst<T, F>(
    rt: &csp::Runtime,
    burst: usize,
    clients: Vec<impl Sized>,
    mut accept: impl FnMut() -> F,
) where
    F: std::future::Future<Output = std::io::Result<T>>,
{
    let accepted = rt.block_on(async {
        let mut accepted = Vec::with_capacity(burst);
        for _ in 0..burst {
            accepted.push(accept().await.expect("accept"));
        }
        accepted
    });
    assert_eq!(accepted.len(), burst);
    drop((clients, accepted));
    assert_processes_gone(rt);
}

/// A burst of connections beyond the 128 that `mio`, tokio and the standard library
/// listen with waits in the backlog, each handshake complete, while nobody accepts:
/// `bind` asks for the system's largest backlog. A connection that found the backlog
/// full would have its SYN dropped and wait a second for the retry, past the connect's
/// timeout here.
#[cfg(target_os = "linux")] // elsewhere the system's cap is 128 unless raised
#[test]
fn a_burst_beyond_a_thousand_connections_waits_in_the_backlog() {
    let burst = backlog_burst();
    let fds = Fds::start();
    bounded(LIMIT, move || {
        let rt = common::runtime(1, "backlog");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let clients: Vec<TcpStream> = (0..burst)
            .map(|i| {
                TcpStream::connect_timeout(&addr, Duration::from_millis(500)).unwrap_or_else(
                    move |err| panic!("connection {i} of {burst} found the backlog full: {err}"),
                )
            })
            .collect();
        accept_the_burst(&rt, burst, clients, || listener.accept());
    });
    fds.assert_none_left();
}

/// The same for a Unix domain listener (`mio` listens with the system's largest backlog
/// there on Linux): non-blocking connects, each of which a full backlog would refuse with
/// `WouldBlock`, all land in the backlog while nobody accepts.
#[cfg(target_os = "linux")]
#[test]
fn a_burst_of_unix_connections_waits_in_the_backlog() {
    let burst = backlog_burst();
    let fds = Fds::start();
    bounded(LIMIT, move || {
        let dir = std::env::temp_dir().join(format!("csp-backlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("burst.sock");
        let _ = std::fs::remove_file(&path);
        let rt = common::runtime(1, "backlog");
        let listener = rt
            .block_on(async { csp::net::unix::UnixListener::bind(&path) })
            .unwrap();
        let target = socket2::SockAddr::unix(&path).unwrap();
        let clients: Vec<socket2::Socket> = (0..burst)
            .map(|i| {
                let socket =
                    socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)
                        .unwrap();
                socket.set_nonblocking(true).unwrap();
                socket.connect(&target).unwrap_or_else(move |err| {
                    panic!("connection {i} of {burst} found the backlog full: {err}")
                });
                socket
            })
            .collect();
        accept_the_burst(&rt, burst, clients, || listener.accept());
        std::fs::remove_dir_all(&dir).unwrap();
    });
    fds.assert_none_left();
}

#[test]
fn a_reset_or_a_half_close_is_an_error_value_or_the_end_never_a_panic() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(2, "resets");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        // The server side: reads until the end or an error, then writes once more; each
        // outcome is reported, never a panic.
        let server = rt.spawn(async move {
            let mut outcomes = Vec::new();
            for _ in 0..2 {
                let (mut conn, _) = listener.accept().await?;
                let mut buf = [0; 64];
                let read = loop {
                    match conn.read(&mut buf).await {
                        Ok(0) => break Ok(0),
                        Ok(_) => continue,
                        Err(err) => break Err(err.kind()),
                    }
                };
                let wrote = conn.write_all(b"after").await.map_err(|err| err.kind());
                outcomes.push((read, wrote));
            }
            std::io::Result::Ok(outcomes)
        });

        // A reset: the client closes with SO_LINGER zero, after some bytes.
        let reset = TcpStream::connect(addr).unwrap();
        (&reset).write_all(b"bytes, then a reset").unwrap();
        set_linger_zero(&reset);
        drop(reset);

        // A half-close: the client stops writing, and still reads what the server
        // writes after the end of its stream.
        let mut half = TcpStream::connect(addr).unwrap();
        half.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        half.write_all(b"half").unwrap();
        half.shutdown(Shutdown::Write).unwrap();
        let mut after = Vec::new();
        half.read_to_end(&mut after).unwrap();
        assert_eq!(after, b"after");

        let outcomes = rt.block_on(server).unwrap().unwrap();
        // The reset: a read error (or the end), and a write that fails.
        let (read, wrote) = &outcomes[0];
        assert!(
            matches!(read, Ok(0) | Err(std::io::ErrorKind::ConnectionReset)),
            "{read:?}"
        );
        assert!(
            matches!(
                wrote,
                Err(std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe)
            ),
            "{wrote:?}"
        );
        // The half-close: the end of the stream, and the write goes through.
        assert_eq!(outcomes[1], (Ok(0), Ok(())));
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
fn an_empty_read_or_write_is_done_at_once() {
    // As the system calls are: no wait for readiness, which a silent peer never gives a
    // reader (the empty read waited for ever).
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(2, "empty-io");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = rt.spawn(async move {
            let (mut conn, _) = listener.accept().await?;
            let limit = Duration::from_secs(5);
            let read = csp::timeout(limit, conn.read(&mut [])).await;
            let mut none: [std::io::IoSliceMut<'_>; 0] = [];
            let vectored = csp::timeout(limit, conn.read_vectored(&mut none)).await;
            let written = csp::timeout(limit, conn.write(&[])).await;
            std::io::Result::Ok((read.is_ok(), vectored.is_ok(), written.is_ok()))
        });
        // Connected, and silent until the server is done.
        let client = TcpStream::connect(addr).unwrap();
        let done = rt.block_on(server).unwrap().unwrap();
        assert_eq!(
            done,
            (true, true, true),
            "(read, read_vectored, write) done in time"
        );
        drop(client);
    });
    fds.assert_none_left();
}

/// Reads that come back short (they emptied the socket): bytes that arrive later still
/// wake the reader, the end of the stream that came with the last bytes is still seen,
/// and a vectored read over more slices than one system call takes, which comes back
/// short with bytes still queued, reads on. (A short read leaves the socket's readiness
/// standing while reading ahead pays, and waits for the next event once it does not,
/// `runtime/driver/read_ahead.rs`. Here, on each connection, a read ahead after the
/// first bytes finds nothing, so later short reads clear the readiness they acted on,
/// unless an event of the socket, such as its first writability, came between that
/// read and the read ahead: it then counts as no read ahead, and the test takes the
/// other path.)
#[test]
fn a_short_read_waits_for_the_next_bytes_and_still_sees_the_end() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(2, "short-reads");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = rt.spawn(async move {
            let (mut conn, _) = listener.accept().await?;
            let mut buf = [0; 64];
            let mut reads = Vec::new();
            // "first", then "second" sent only once the server answered the first.
            for i in 0..2 {
                let n = conn.read(&mut buf).await?;
                reads.push(buf[..n].to_vec());
                if i == 0 {
                    // A read ahead that finds nothing: from here on a short read waits
                    // for the next event.
                    let idle = csp::timeout(Duration::from_millis(20), conn.read(&mut buf));
                    assert!(idle.await.is_err(), "the client sends nothing yet");
                }
                conn.write_all(b"ok").await?;
            }
            // "third" and the end of the stream, both there before this read.
            csp::sleep(Duration::from_millis(50)).await;
            let n = conn.read(&mut buf).await?;
            reads.push(buf[..n].to_vec());
            let end = conn.read(&mut buf).await?;
            std::io::Result::Ok((reads, end))
        });
        let mut client = TcpStream::connect(addr).unwrap();
        let mut ok = [0; 2];
        client.write_all(b"first").unwrap();
        client.read_exact(&mut ok).unwrap();
        client.write_all(b"second").unwrap();
        client.read_exact(&mut ok).unwrap();
        client.write_all(b"third").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let (reads, end) = rt.block_on(server).unwrap().unwrap();
        assert_eq!(reads, [&b"first"[..], b"second", b"third"]);
        assert_eq!(end, 0, "the end of the stream");

        // 1,025 one-byte slices: `readv` takes 1,024 of them, and the rest of the bytes
        // are still queued, with no event to come.
        const SLICES: usize = 1_025;
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = rt.spawn(async move {
            let (mut conn, _) = listener.accept().await?;
            // As above: a short read, and a read ahead that finds nothing.
            let mut start = [0; 64];
            assert_eq!(conn.read(&mut start).await?, 1, "one byte of 64: short");
            let idle = csp::timeout(Duration::from_millis(20), conn.read(&mut start));
            assert!(idle.await.is_err(), "the client sends nothing yet");
            conn.write_all(b"go").await?;
            let mut bytes = vec![[0u8; 1]; SLICES];
            let first = {
                let mut slices: Vec<_> = bytes
                    .iter_mut()
                    .map(|b| std::io::IoSliceMut::new(b))
                    .collect();
                conn.read_vectored(&mut slices).await?
            };
            let mut rest = vec![0; 4096];
            let second = conn.read(&mut rest).await?;
            std::io::Result::Ok((first, second))
        });
        let mut client = TcpStream::connect(addr).unwrap();
        client.write_all(b"x").unwrap();
        client.read_exact(&mut ok).unwrap();
        client.write_all(&[7; 2000]).unwrap();
        let (first, second) = rt.block_on(server).unwrap().unwrap();
        assert_eq!(first, 1024, "one call takes IOV_MAX slices (1024 on Linux)");
        assert_eq!(second, 2000 - 1024, "the rest is read without a new event");
        drop(client);
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

/// Makes closing `stream` reset the connection rather than end it.
fn set_linger_zero(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on an open socket, with a pointer to a local of the size given.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0);
}

#[test]
fn slow_and_idle_clients_are_cut_by_the_http_server_limits() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(2, "slowloris");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = http_hello::http::Limits {
            idle: Duration::from_millis(300),
            request: Duration::from_millis(300),
        };
        rt.spawn(http_hello::serve_with(listener, limits));

        // Slowloris: a request a byte at a time, each byte well within the idle time,
        // the whole far beyond the request's: cut once the request's time is up.
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let began = Instant::now();
        let mut cut = false;
        for byte in b"GET / HTTP/1.1\r\nhost: slowly-slowly-slowly\r\n" {
            if slow.write_all(&[*byte]).is_err() {
                cut = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            if began.elapsed() > Duration::from_secs(5) {
                break;
            }
        }
        let mut rest = Vec::new();
        // Closed by the server: the end of the stream (or a reset), with no response.
        let _ = slow.read_to_end(&mut rest);
        assert!(
            cut || rest.is_empty(),
            "{:?}",
            String::from_utf8_lossy(&rest)
        );

        // Idle: connects and says nothing; closed, with nothing sent.
        let mut idle = TcpStream::connect(addr).unwrap();
        idle.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut rest = Vec::new();
        idle.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());

        // A prompt client between the two is served.
        let mut prompt = TcpStream::connect(addr).unwrap();
        prompt
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        prompt
            .write_all(b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        prompt.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");

        wait_until(10, "only the accept loop is left", || {
            rt.metrics().processes_alive == 1
        });
        rt.shutdown_timeout(Duration::from_secs(5));
    });
    fds.assert_none_left();
}

/// Set in the child process of [`a_server_out_of_file_descriptors_serves_again_once_clients_close`].
const CHILD: &str = "CSP_TEST_EMFILE_CHILD";

/// Open files the child server may have beyond those open when it starts: a few
/// accepted connections, then `EMFILE`.
const CHILD_SPARE_FDS: u64 = 8;

/// The echo server of `examples/echo_server.rs`, in a child process whose open-file limit
/// is a few descriptors above what it has open: the parent connects more clients than
/// that, so accepts fail with `EMFILE`. Meanwhile the server must not spin (its CPU time
/// stays far below the time that passes) and must not end; once the clients close, a new
/// client is served.
#[test]
fn a_server_out_of_file_descriptors_serves_again_once_clients_close() {
    if std::env::var_os(CHILD).is_some() {
        return emfile_child_server();
    }
    let fds = Fds::start();
    bounded(LIMIT, || {
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(exe)
            .args([
                "--exact",
                "a_server_out_of_file_descriptors_serves_again_once_clients_close",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the child server");
        let addr = read_child_addr(child.stdout.as_mut().unwrap());
        let pid = child.id();

        // Twice the spare descriptors: the first few are accepted and echoed; then the
        // server is out of descriptors, and the rest wait in the listen backlog.
        let mut clients: Vec<TcpStream> = (0..2 * CHILD_SPARE_FDS)
            .map(|_| {
                let client = TcpStream::connect(addr).unwrap();
                client
                    .set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                client
            })
            .collect();
        let mut echoed = 0;
        for client in &mut clients {
            client.write_all(b"?").unwrap();
            let mut back = [0];
            if client.read_exact(&mut back).is_ok() {
                echoed += 1;
            }
        }
        assert!(echoed > 0, "some clients are served before the limit");
        assert!(
            echoed < clients.len(),
            "the limit was reached: {echoed} of {} clients were served",
            clients.len()
        );
        // Out of descriptors for a while: the accept loop neither ends nor spins. Its
        // CPU time over a second stays a small part of that second (a spinning loop
        // takes all of it).
        let ticks_per_second = clock_ticks_per_second();
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(1));
        let used = cpu_ticks(pid) - before;
        assert!(
            used * 4 < ticks_per_second,
            "the server used {used} of {ticks_per_second} clock ticks in a second out of \
             descriptors: its accept loop spins"
        );
        assert!(child.try_wait().unwrap().is_none(), "the server ended");

        // The clients close: the server accepts (and closes) the waiting ones and serves
        // a new one.
        drop(clients);
        let mut fresh = TcpStream::connect(addr).unwrap();
        fresh
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        fresh.write_all(b"again").unwrap();
        let mut back = [0; 5];
        fresh.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"again");
        drop(fresh);

        // Closing its stdin ends the child.
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());
    });
    fds.assert_none_left();
}

/// The child's side: lowers its open-file limit, serves until its stdin closes.
fn emfile_child_server() {
    let rt = common::runtime(2, "emfile");
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let (shutdown, shutdown_rx) = csp::channel::<()>();
    let server = rt.spawn(echo_server::serve(
        listener,
        shutdown_rx,
        Duration::from_secs(60),
    ));
    lower_fd_limit(common::net::open_fds() as u64 + CHILD_SPARE_FDS);
    println!("listening on {addr}");
    std::io::stdout().flush().unwrap();
    // Until the parent closes our stdin.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(shutdown);
    let served = rt.block_on(server).unwrap().unwrap();
    assert!(served.connections > 0);
}

/// The address the child prints (after the test harness's own lines).
fn read_child_addr(stdout: &mut std::process::ChildStdout) -> SocketAddr {
    let mut seen = String::new();
    loop {
        let mut line = Vec::new();
        let mut byte = [0];
        while stdout.read_exact(&mut byte).is_ok() && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let line = String::from_utf8_lossy(&line).into_owned();
        // The harness's "test NAME ... " may come first on the line.
        if let Some((_, addr)) = line.split_once("listening on ") {
            return addr.trim().parse().unwrap();
        }
        seen.push_str(&line);
        seen.push('\n');
        assert!(
            seen.len() < 4096,
            "the child printed {seen:?} and no address"
        );
    }
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf with a valid name.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).unwrap()
}

#[test]
fn two_processes_accepting_on_one_listener_are_both_served() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(2, "two-acceptors");
        let listener = std::sync::Arc::new(rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap());
        let addr = listener.local_addr().unwrap();
        let acceptors: Vec<_> = (0..2)
            .map(|_| {
                let listener = listener.clone();
                rt.spawn(async move { listener.accept().await.map(|(_, peer)| peer) })
            })
            .collect();
        wait_until(10, "both acceptors wait", || {
            rt.processes()
                .iter()
                .filter(|p| p.state == csp::ProcessState::Sleeping)
                .count()
                == 2
        });
        // Two connections, one event each: each acceptor gets one, neither is lost.
        let clients = [
            TcpStream::connect(addr).unwrap(),
            TcpStream::connect(addr).unwrap(),
        ];
        let mut peers: Vec<_> = acceptors
            .into_iter()
            .map(|acceptor| rt.block_on(acceptor).unwrap().unwrap())
            .collect();
        peers.sort();
        let mut expected: Vec<_> = clients.iter().map(|c| c.local_addr().unwrap()).collect();
        expected.sort();
        assert_eq!(peers, expected);
        drop((clients, listener));
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
fn a_refused_datagram_is_an_error_and_the_next_receive_waits() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(1, "udp-refused");
        let spent = rt.block_on(async {
            // A peer that is gone: sending to it draws an ICMP "port unreachable".
            let gone = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let gone_addr = gone.local_addr().unwrap();
            drop(gone);
            let socket = csp::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            socket.connect(gone_addr).await.unwrap();
            socket.send(b"anyone?").await.unwrap();
            let mut buf = [0; 16];
            let refused = socket.recv(&mut buf).await.unwrap_err();
            assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
            // Nothing more is coming: the next receive waits until the timeout ends it.
            // (A receive that spun on the error's readiness would hold the only worker
            // inside its poll for good, and the watchdog would fail the test.)
            let began = std::time::Instant::now();
            let waited = csp::timeout(Duration::from_millis(200), socket.recv(&mut buf)).await;
            assert!(waited.is_err(), "{waited:?}");
            began.elapsed()
        });
        assert!(spent >= Duration::from_millis(200));
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
fn an_async_fd_whose_descriptor_outlives_it_leaves_nothing_behind() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        use std::os::fd::AsFd;
        let rt = common::runtime(1, "async-fd");
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        // A duplicate keeps the file (and its epoll entry) open after the registered
        // descriptor goes: the driver must not dispatch to the gone registration.
        let duplicate = b.as_fd().try_clone_to_owned().unwrap();
        rt.block_on(async {
            let fd = csp::net::AsyncFd::new(b).unwrap();
            drop(fd);
        });
        // Events for the old registration come and go to nobody.
        for _ in 0..10 {
            a.write_all(b"ping").unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        // The runtime still serves sockets.
        let echoed = rt.block_on(async {
            use csp::net::{AsyncReadExt, AsyncWriteExt};
            let (mut x, mut y) = csp::net::unix::UnixStream::pair().unwrap();
            x.write_all(b"ok").await.unwrap();
            let mut buf = [0; 2];
            y.read_exact(&mut buf).await.unwrap();
            buf
        });
        assert_eq!(&echoed, b"ok");
        drop((a, duplicate));
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}
