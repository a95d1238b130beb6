//! Network I/O through `csp::net` on real loopback sockets: the echo server and the HTTP
//! server of the examples, run in-process, against `std::net` clients that behave well
//! and badly; deadlock detection with a process waiting on a socket; the runtime's
//! context in a process the I/O driver woke.
//!
//! Every test runs under a watchdog (`common::bounded`), counts what happened instead of
//! timing it, and ends with the runtime's live processes back to none and every file
//! descriptor it opened closed (`common::net::Fds`: the socket tests run one at a time).

#![cfg(feature = "io")]

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use common::net::Fds;
use common::{bounded, wait_until};
use csp::net::TcpListener;

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

#[path = "../examples/http_hello.rs"]
#[allow(dead_code)]
mod http_hello;

/// Seconds a test may take before the watchdog fails it.
const LIMIT: u64 = 60;

/// An echo server running on its own runtime, stopped by `stop`.
struct Echo {
    rt: csp::Runtime,
    addr: SocketAddr,
    shutdown: csp::Sender<()>,
    server: csp::JoinHandle<std::io::Result<echo_server::Served>>,
}

impl Echo {
    fn start(workers: usize, idle: Duration) -> Echo {
        let rt = common::runtime(workers, "echo");
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind a loopback port");
        let addr = listener.local_addr().unwrap();
        let (shutdown, shutdown_rx) = csp::channel();
        let server = rt.spawn(echo_server::serve(listener, shutdown_rx, idle));
        Echo {
            rt,
            addr,
            shutdown,
            server,
        }
    }

    /// Shuts the server down; returns what it served, once no process is left.
    fn stop(self) -> echo_server::Served {
        drop(self.shutdown);
        let served = self
            .rt
            .block_on(self.server)
            .expect("the server does not panic")
            .expect("the server has no I/O error");
        assert_processes_gone(&self.rt);
        served
    }
}

/// Waits (bounded) until the runtime has no live process: the count is eventually
/// consistent, as a process's end is counted after its `JoinHandle` is told.
fn assert_processes_gone(rt: &csp::Runtime) {
    wait_until(10, "every process of the runtime has ended", || {
        rt.metrics().processes_alive == 0
    });
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect to the server");
    // A stuck read fails the test instead of hanging it (the watchdog would too).
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

fn read_to_end(stream: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    stream
        .read_to_end(&mut got)
        .expect("read until the server closes");
    got
}

#[test]
fn three_hundred_concurrent_connections_are_each_echoed() {
    let fds = Fds::start();
    const THREADS: usize = 10;
    const PER_THREAD: usize = 30;
    let served = bounded(LIMIT, || {
        let echo = Echo::start(2, Duration::from_secs(30));
        let addr = echo.addr;
        // All connections are open at once: each thread opens its share, then the threads
        // meet, then each talks on every one of its connections.
        let all_open = std::sync::Arc::new(std::sync::Barrier::new(THREADS));
        let clients: Vec<_> = (0..THREADS)
            .map(|t| {
                let all_open = all_open.clone();
                std::thread::spawn(move || {
                    let mut conns: Vec<_> = (0..PER_THREAD).map(|_| connect(addr)).collect();
                    all_open.wait();
                    for (i, conn) in conns.iter_mut().enumerate() {
                        let msg = format!("client {t}/{i} says hello\n");
                        conn.write_all(msg.as_bytes()).unwrap();
                        let mut back = vec![0; msg.len()];
                        conn.read_exact(&mut back).unwrap();
                        assert_eq!(back, msg.as_bytes());
                    }
                    // Half-close each: the server echoes nothing more and closes.
                    for conn in &mut conns {
                        conn.shutdown(Shutdown::Write).unwrap();
                        assert_eq!(read_to_end(conn), b"");
                    }
                    conns.len()
                })
            })
            .collect();
        let echoed: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
        assert_eq!(echoed, THREADS * PER_THREAD);
        echo.stop()
    });
    assert_eq!(served.connections, THREADS * PER_THREAD);
    fds.assert_none_left();
}

#[test]
fn echo_survives_clients_that_vanish_mid_message_or_half_close() {
    let fds = Fds::start();
    let served = bounded(LIMIT, || {
        let echo = Echo::start(2, Duration::from_secs(30));
        // Gone mid-message: writes part of a line, then drops the connection unread.
        for _ in 0..20 {
            let mut conn = connect(echo.addr);
            conn.write_all(b"half a mess").unwrap();
        }
        // Reset: closes with the echo unread in its receive buffer.
        for _ in 0..20 {
            let mut conn = connect(echo.addr);
            conn.write_all(&[0xff; 10_000]).unwrap();
        }
        // Half-close: everything sent before the shutdown comes back, then the end.
        let mut conn = connect(echo.addr);
        conn.write_all(b"last words").unwrap();
        conn.shutdown(Shutdown::Write).unwrap();
        assert_eq!(read_to_end(&mut conn), b"last words");
        // The server still serves.
        let mut conn = connect(echo.addr);
        conn.write_all(b"still there?").unwrap();
        let mut back = [0; 12];
        conn.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"still there?");
        drop(conn);
        echo.stop()
    });
    assert_eq!(served.connections, 42);
    fds.assert_none_left();
}

#[test]
fn an_idle_client_is_closed_by_the_timeout() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let idle_limit = Duration::from_millis(1000);
        let echo = Echo::start(1, idle_limit);
        let mut idle = connect(echo.addr);
        // Sends nothing: the server closes the connection (end of stream, not a timeout
        // of this read, whose own limit is 20 s).
        assert_eq!(read_to_end(&mut idle), b"");
        // A chatty client is not closed in between: each exchange resets the timeout.
        // Its pauses are well inside the limit (a late wake-up on a loaded machine must
        // not close it), and add up to more than the limit (a timeout that is never
        // reset would close it).
        let mut chatty = connect(echo.addr);
        for i in 0..5u8 {
            std::thread::sleep(idle_limit / 3);
            chatty.write_all(&[i]).unwrap();
            let mut back = [0];
            chatty.read_exact(&mut back).unwrap();
            assert_eq!(back, [i]);
        }
        assert_eq!(read_to_end(&mut chatty), b"");
        assert_eq!(echo.stop().connections, 2);
    });
    fds.assert_none_left();
}

#[test]
fn shutdown_closes_open_connections() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let echo = Echo::start(2, Duration::from_secs(60));
        let mut conns: Vec<_> = (0..10).map(|_| connect(echo.addr)).collect();
        for conn in &mut conns {
            conn.write_all(b"x").unwrap();
            let mut back = [0];
            conn.read_exact(&mut back).unwrap();
        }
        let served = echo.stop();
        assert_eq!(served.connections, 10);
        for conn in &mut conns {
            // Closed by the server: end of stream, or a reset.
            let mut rest = Vec::new();
            let _ = conn.read_to_end(&mut rest);
            assert_eq!(rest, b"");
        }
    });
    fds.assert_none_left();
}

/// The HTTP server of `http_hello` on its own runtime; dropping the runtime stops it.
fn http_server(workers: usize) -> (csp::Runtime, SocketAddr) {
    let rt = common::runtime(workers, "http");
    let listener = rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind a loopback port");
    let addr = listener.local_addr().unwrap();
    rt.spawn(http_hello::serve(listener));
    (rt, addr)
}

/// Stops the HTTP server: its only process left is the accept loop.
fn http_stop(rt: csp::Runtime) {
    wait_until(10, "only the accept loop is left", || {
        rt.metrics().processes_alive == 1
    });
    rt.shutdown_timeout(Duration::from_secs(5));
}

#[test]
fn http_answers_keep_alive_requests_and_rejects_garbage() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let (rt, addr) = http_server(2);
        // Keep-alive: three requests on one connection, the last asking to close.
        let mut conn = connect(addr);
        for _ in 0..2 {
            conn.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                .unwrap();
            let mut head = [0; 17];
            conn.read_exact(&mut head).unwrap();
            assert_eq!(&head, b"HTTP/1.1 200 OK\r\n");
            let mut rest = vec![0; response_len() - head.len()];
            conn.read_exact(&mut rest).unwrap();
            assert!(rest.ends_with(b"Hello, world!\n"));
        }
        conn.write_all(b"GET / HTTP/1.1\r\nconnection: close\r\n\r\n")
            .unwrap();
        let last = String::from_utf8(read_to_end(&mut conn)).unwrap();
        assert!(last.starts_with("HTTP/1.1 200 OK\r\n"), "{last}");
        assert!(last.contains("connection: close"), "{last}");

        // Garbage: a 400 and a closed connection, never a panic.
        for garbage in [
            &b"\x00\x01\x02 not http at all\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\ncontent-length: lots\r\n\r\n",
            b"GET / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
            &[b'A'; 20_000],
        ] {
            let mut conn = connect(addr);
            conn.write_all(garbage).unwrap();
            let reply = read_to_end(&mut conn);
            assert!(
                reply.starts_with(b"HTTP/1.1 400 Bad Request\r\n"),
                "{:?}",
                String::from_utf8_lossy(&reply)
            );
        }

        // Clients gone mid-request, and a half-closed one.
        for _ in 0..20 {
            let mut conn = connect(addr);
            conn.write_all(b"GET / HTTP/1.1\r\nhost:").unwrap();
        }
        let mut conn = connect(addr);
        conn.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        conn.shutdown(Shutdown::Write).unwrap();
        let reply = read_to_end(&mut conn);
        assert_eq!(reply.len(), response_len());
        http_stop(rt);
    });
    fds.assert_none_left();
}

/// The length of `http_hello`'s response with `connection: keep-alive`.
fn response_len() -> usize {
    let mut input = b"GET / HTTP/1.1\r\n\r\n".to_vec();
    let mut output = Vec::new();
    http_hello::http::respond(&mut input, &mut output);
    output.len()
}

/// A one-worker runtime with a 20 ms deadlock grace, a listener bound on it, and a
/// client thread that connects many grace periods later (how much later does not
/// matter; it only has to be more than one).
fn late_client_of_a_short_grace_runtime() -> (
    csp::Runtime,
    TcpListener,
    std::thread::JoinHandle<std::net::TcpStream>,
) {
    let rt = csp::Runtime::builder()
        .worker_threads(1)
        .deadlock_grace(Duration::from_millis(20))
        .build()
        .unwrap();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        connect(addr)
    });
    (rt, listener, client)
}

#[test]
fn a_process_waiting_on_accept_is_not_a_deadlock() {
    let fds = Fds::start();
    let got = bounded(LIMIT, || {
        let (rt, listener, client) = late_client_of_a_short_grace_runtime();
        let client = std::thread::spawn(move || {
            let mut conn = client.join().unwrap();
            conn.write_all(b"!").unwrap();
        });
        let got = rt.block_on(async move {
            // A process waits on accept, the block_on future on that process.
            let accepting = csp::spawn(async move {
                use csp::net::AsyncReadExt;
                let (mut conn, _) = listener.accept().await?;
                let mut byte = [0];
                conn.read_exact(&mut byte).await?;
                std::io::Result::Ok(byte[0])
            });
            accepting.await.unwrap().unwrap()
        });
        client.join().unwrap();
        assert_processes_gone(&rt);
        got
    });
    assert_eq!(got, b'!');
    fds.assert_none_left();
}

#[test]
fn a_block_on_future_waiting_on_accept_is_not_a_deadlock() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let (rt, listener, client) = late_client_of_a_short_grace_runtime();
        let peer = rt.block_on(async move { listener.accept().await.unwrap().1 });
        let conn = client.join().unwrap();
        assert_eq!(peer, conn.local_addr().unwrap());
    });
    fds.assert_none_left();
}

#[test]
fn a_process_the_driver_woke_runs_on_a_worker_in_its_runtime() {
    let fds = Fds::start();
    let (thread, spawned) = bounded(LIMIT, || {
        let rt = common::runtime(2, "io-woken");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let process = rt.spawn(async move {
            use csp::net::AsyncReadExt;
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut byte = [0];
            conn.read_exact(&mut byte).await.unwrap();
            // Woken by the I/O driver: the context is this runtime's.
            let handle = csp::Handle::current();
            let spawned =
                handle.spawn(async { 40 }).await.unwrap() + csp::spawn(async { 2 }).await.unwrap();
            (common::thread_name(), spawned)
        });
        wait_until(10, "the process waits on accept", || {
            rt.processes()
                .iter()
                .any(|p| p.state == csp::ProcessState::Sleeping)
        });
        let mut conn = connect(addr);
        conn.write_all(b"?").unwrap();
        let result = rt.block_on(process).unwrap();
        assert_processes_gone(&rt);
        result
    });
    assert!(thread.starts_with("io-woken-"), "{thread}");
    assert_eq!(spawned, 42);
    fds.assert_none_left();
}

#[test]
fn timers_fire_while_the_only_worker_sleeps_in_the_driver() {
    let fds = Fds::start();
    bounded(LIMIT, || {
        let rt = common::runtime(1, "io-timers");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        // A socket registered with the driver, never ready.
        let waiting = rt.spawn(async move { listener.accept().await.map(drop) });
        let fired = rt.block_on(async {
            let mut fired = 0;
            for _ in 0..20 {
                let tick = csp::spawn(async { csp::sleep(Duration::from_millis(2)).await });
                tick.await.unwrap();
                fired += 1;
            }
            fired
        });
        assert_eq!(fired, 20);
        waiting.abort();
        assert!(rt.block_on(waiting).unwrap_err().is_cancelled());
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
fn a_socket_is_served_while_every_worker_is_busy() {
    // One worker, kept busy by a process that yields until told to stop, so it never
    // parks in the driver: the socket is served by the busy worker's periodic look.
    let fds = Fds::start();
    bounded(LIMIT, || {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let rt = common::runtime(1, "io-busy");
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = rt.spawn({
            let stop = stop.clone();
            async move {
                let mut yields = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    csp::yield_now().await;
                    yields += 1;
                }
                yields
            }
        });
        let reader = rt.spawn(async move {
            use csp::net::AsyncReadExt;
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut byte = [0];
            conn.read_exact(&mut byte).await.unwrap();
            byte[0]
        });
        let mut conn = connect(addr);
        conn.write_all(&[7]).unwrap();
        assert_eq!(rt.block_on(reader).unwrap(), 7);
        stop.store(true, Ordering::Relaxed);
        assert!(
            rt.block_on(spinner).unwrap() > 0,
            "the worker was never busy"
        );
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
fn a_socket_is_served_while_the_worker_that_left_the_driver_is_stuck_in_a_poll() {
    // Two workers asleep, one in the driver. An event wakes one process onto the worker
    // in the driver, which leaves the driver to run it; that poll then blocks its thread
    // until the other socket is served. The other worker, asleep off the driver, must
    // still come to serve that socket: the first wakes from its park as a searcher, and
    // the last searcher to find work wakes a sleeper, which then parks in the driver.
    // Without that wake the second socket waits as long as the poll blocks.
    let fds = Fds::start();
    bounded(LIMIT, || {
        use csp::net::AsyncReadExt;
        let rt = common::runtime(2, "io-stuck-holder");
        // A connected pair: the std end to write to, and one to serve with csp.
        let pair = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let peer = connect(listener.local_addr().unwrap());
            let (served, _) = listener.accept().unwrap();
            served.set_nonblocking(true).unwrap();
            (served, peer)
        };
        let (first, first_peer) = pair();
        let (second, second_peer) = pair();
        let (served, wait_served) = std::sync::mpsc::channel::<()>();
        let stuck = rt.spawn(async move {
            let mut first = csp::net::TcpStream::from_std(first).unwrap();
            let mut byte = [0];
            first.read_exact(&mut byte).await.unwrap();
            // Blocks this worker's thread, on purpose, until the other socket is served.
            wait_served
                .recv_timeout(std::time::Duration::from_secs(LIMIT / 2))
                .expect("the second socket was served while this poll held its worker");
        });
        let other = rt.spawn(async move {
            let mut second = csp::net::TcpStream::from_std(second).unwrap();
            let mut byte = [0];
            second.read_exact(&mut byte).await.unwrap();
            served.send(()).unwrap();
        });
        // Both wait in their reads, and the workers fall asleep for good (no watcher).
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (mut first_peer, mut second_peer) = (first_peer, second_peer);
        first_peer.write_all(&[1]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        second_peer.write_all(&[2]).unwrap();
        rt.block_on(other).unwrap();
        rt.block_on(stuck).unwrap();
        drop((first_peer, second_peer));
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
#[cfg(target_os = "linux")]
fn a_replaced_async_fd_value_kept_open_stays_registered_until_closed() {
    // Dropping the `AsyncFd` cannot tell a replaced descriptor still open from one whose
    // number is another's now, so it leaves the registration alone: the kept value
    // cannot be registered again until it is closed, and nothing leaks once it is.
    let fds = Fds::start();
    bounded(LIMIT, || {
        use std::os::unix::net::UnixStream as StdStream;
        let rt = common::runtime(1, "io-kept");
        let (a, _a_peer) = StdStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let mut fd = rt.block_on(async { csp::net::AsyncFd::new(a) }).unwrap();
        let (b, _b_peer) = StdStream::pair().unwrap();
        let kept = std::mem::replace(fd.get_mut(), b);
        drop(fd);
        let again = rt.block_on(async { csp::net::AsyncFd::new(kept) });
        let err = again.map(drop).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists, "{err}");
        // Closed by the failed `new`: a fresh pair registers as usual.
        let (c, _c_peer) = StdStream::pair().unwrap();
        c.set_nonblocking(true).unwrap();
        drop(rt.block_on(async { csp::net::AsyncFd::new(c) }).unwrap());
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}

#[test]
fn an_async_fd_whose_value_was_replaced_leaves_the_old_number_alone() {
    // Replacing the value inside an `AsyncFd` closes the registered descriptor; a
    // stream that gets its number next registers with the same driver, and dropping the
    // `AsyncFd` must not take that stream's registration away.
    let fds = Fds::start();
    bounded(LIMIT, || {
        use std::os::fd::AsRawFd;
        use std::os::unix::net::UnixStream as StdStream;
        let rt = common::runtime(1, "io-replaced");
        let (a, _a_peer) = StdStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let number = a.as_raw_fd();
        let mut fd = rt.block_on(async { csp::net::AsyncFd::new(a) }).unwrap();
        let (b, _b_peer) = StdStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        *fd.get_mut() = b;
        let err = rt.block_on(fd.readable()).map(drop).unwrap_err();
        assert!(err.to_string().contains("replaced"), "{err}");
        let (c, c_peer) = StdStream::pair().unwrap();
        let (c, mut c_peer) = if c.as_raw_fd() == number {
            (c, c_peer)
        } else {
            assert_eq!(
                c_peer.as_raw_fd(),
                number,
                "the freed number was not reused"
            );
            (c_peer, c)
        };
        c.set_nonblocking(true).unwrap();
        let c = rt
            .block_on(async { csp::net::unix::UnixStream::from_std(c) })
            .unwrap();
        drop(fd);
        let reader = rt.spawn(async move {
            use csp::net::AsyncReadExt;
            let mut c = c;
            let mut byte = [0];
            c.read_exact(&mut byte).await.unwrap();
            byte[0]
        });
        wait_until(10, "the reader waits on its stream", || {
            rt.processes()
                .iter()
                .any(|p| p.state == csp::ProcessState::Sleeping)
        });
        c_peer.write_all(&[9]).unwrap();
        assert_eq!(rt.block_on(reader).unwrap(), 9);
        assert_processes_gone(&rt);
    });
    fds.assert_none_left();
}
