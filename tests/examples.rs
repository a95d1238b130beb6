//! Every example, run at a small size so none can rot: each example file is included as
//! a module, and the function its `main` calls is called here and its result checked.
//!
//! Each runs under a watchdog (`common::bounded`).

mod common;

use common::bounded;

#[path = "../examples/sieve.rs"]
#[allow(dead_code)]
mod sieve;

#[path = "../examples/ring.rs"]
#[allow(dead_code)]
mod ring;

#[path = "../examples/skynet.rs"]
#[allow(dead_code)]
mod skynet;

#[path = "../examples/philosophers.rs"]
#[allow(dead_code)]
mod philosophers;

#[path = "../examples/pipeline.rs"]
#[allow(dead_code)]
mod pipeline;

#[path = "../examples/tokio_interop.rs"]
#[allow(dead_code)]
mod tokio_interop;

#[path = "../examples/deadlock.rs"]
#[allow(dead_code)]
mod deadlock;

#[path = "../examples/worker_pool.rs"]
#[allow(dead_code)]
mod worker_pool;

/// Seconds an example may take before the watchdog fails it.
const LIMIT: u64 = 30;

#[test]
fn sieve_finds_the_first_primes() {
    let primes = bounded(LIMIT, || csp::block_on(sieve::primes(10)));
    assert_eq!(primes, [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
    let primes = bounded(LIMIT, || csp::block_on(sieve::primes(100)));
    assert_eq!(primes.last(), Some(&541));
}

#[test]
fn ring_hands_the_token_to_the_process_the_formula_says() {
    for passes in [0, 1, 502, 503, 10_000] {
        let holder = bounded(LIMIT, move || csp::block_on(ring::ring(503, passes)));
        assert_eq!(holder as u64, passes % 503 + 1, "after {passes} passes");
    }
}

#[test]
fn skynet_sums_its_leaves() {
    for (leaves, sum) in [(1, 0), (10, 45), (10_000, 49_995_000)] {
        assert_eq!(
            bounded(LIMIT, move || csp::block_on(skynet::skynet(leaves))),
            sum
        );
    }
}

#[test]
fn philosophers_eat_every_meal_with_at_most_four_seated() {
    let dinner = bounded(LIMIT, || csp::block_on(philosophers::dine(50)));
    assert_eq!(dinner.meals, 5 * 50);
    assert!(
        (1..=4).contains(&dinner.most_seated),
        "{} seated at once",
        dinner.most_seated
    );
}

#[test]
fn pipeline_sums_even_squares_and_odd_cubes() {
    let sum = bounded(LIMIT, || {
        csp::block_on(pipeline::even_squares_and_odd_cubes(10))
    });
    assert_eq!(sum, (4 + 16 + 36 + 64 + 100) + (1 + 27 + 125 + 343 + 729));
    let sum = bounded(LIMIT, || {
        csp::block_on(pipeline::even_squares_and_odd_cubes(1000))
    });
    assert_eq!(sum, 125_166_917_000);
}

#[test]
fn tokio_interop_echoes_every_line_upper_cased() {
    let lines = ["one", "two", "Three little words"];
    let echoes = bounded(LIMIT, move || {
        let tokio = tokio::runtime::Runtime::new().expect("start a tokio runtime");
        let csp = csp::Runtime::builder()
            .worker_threads(2)
            .enter_tokio(tokio.handle().clone())
            .build()
            .expect("start a csp runtime");
        let echoes = tokio
            .block_on(tokio_interop::serve_clients(&csp.handle(), 2, &lines, 3))
            .expect("the server and clients do their I/O");
        drop(csp);
        echoes
    });
    let expected = ["ONE", "TWO", "THREE LITTLE WORDS"];
    assert_eq!(echoes, [expected, expected]);
}

#[test]
fn deadlock_reports_both_processes_and_the_main_future() {
    let report = bounded(LIMIT, || {
        deadlock::report(std::time::Duration::from_millis(50))
    });
    assert!(
        report.starts_with("csp: deadlock: all processes are asleep"),
        "{report}"
    );
    assert!(
        report.contains("the block_on future: waiting on join of process #"),
        "{report}"
    );
    // Each process by where it was spawned, each channel by where it was made.
    assert_eq!(
        report.matches("examples/deadlock.rs:").count(),
        4,
        "{report}"
    );
    assert_eq!(
        report.matches("waiting on recv on channel #").count(),
        2,
        "{report}"
    );
}

/// A running example binary, killed when dropped.
#[cfg(feature = "io")]
struct Server {
    child: std::process::Child,
    addr: std::net::SocketAddr,
}

#[cfg(feature = "io")]
impl Server {
    /// Starts example `name` (built by `cargo test` beside this test's binary) with `args`
    /// and reads the address it prints.
    fn start(name: &str, args: &[&str]) -> Server {
        Server::start_with_env(name, args, &[])
    }

    /// As [`start`](Server::start), with `env` added to the example's environment.
    fn start_with_env(name: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        use std::io::BufRead;
        let dir = std::env::current_exe()
            .expect("the test binary's path")
            .parent()
            .and_then(|deps| deps.parent())
            .expect("the test binary lives in target/<profile>/deps")
            .join("examples");
        let binary = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        let mut child = std::process::Command::new(&binary)
            .args(args)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", binary.display()));
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the example's first line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{name} printed {line:?}, not its address"))
            .parse()
            .expect("a socket address");
        Server { child, addr }
    }

    fn connect(&self) -> std::net::TcpStream {
        let stream = std::net::TcpStream::connect(self.addr).expect("connect to the example");
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        stream
    }
}

#[cfg(feature = "io")]
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(feature = "io")]
#[test]
fn echo_server_echoes_over_loopback_and_closes_idle_connections() {
    use std::io::{Read, Write};
    bounded(LIMIT, || {
        let server = Server::start(
            "echo_server",
            &["127.0.0.1:0", "--workers", "2", "--idle-ms", "2000"],
        );
        let mut conns: Vec<_> = (0..5).map(|_| server.connect()).collect();
        for (i, conn) in conns.iter_mut().enumerate() {
            let line = format!("line {i}\n");
            conn.write_all(line.as_bytes()).unwrap();
            let mut back = vec![0; line.len()];
            conn.read_exact(&mut back).unwrap();
            assert_eq!(back, line.as_bytes());
        }
        // Silent now: the idle timeout closes each.
        for conn in &mut conns {
            let mut rest = Vec::new();
            conn.read_to_end(&mut rest).unwrap();
            assert_eq!(rest, b"");
        }
    });
}

#[cfg(feature = "io")]
#[test]
fn http_hello_hyper_hello_and_their_tokio_twins_answer_over_loopback() {
    use std::io::{Read, Write};
    for name in [
        "http_hello",
        "http_hello_tokio",
        "hyper_hello",
        "hyper_hello_tokio",
    ] {
        let reply = bounded(LIMIT, move || {
            let server = Server::start(name, &["127.0.0.1:0", "--workers", "2"]);
            let mut conn = server.connect();
            // Two requests on one connection (keep-alive), the second closing it.
            conn.write_all(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n")
                .unwrap();
            conn.write_all(b"GET /again HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
                .unwrap();
            let mut reply = String::new();
            conn.read_to_string(&mut reply).unwrap();
            reply
        });
        assert_eq!(
            reply.matches("HTTP/1.1 200 OK\r\n").count(),
            2,
            "{name}: {reply}"
        );
        assert_eq!(
            reply.matches("Hello, world!\n").count(),
            2,
            "{name}: {reply}"
        );
        assert!(reply.ends_with("Hello, world!\n"), "{name}: {reply}");
    }
}

/// hyper's header-read timer, a csp sleep in `hyper_hello` (and tokio's in its twin): a
/// request answered, then the head of a second one begun and left unfinished. Once a
/// head is parsed hyper arms a timer for the next, and at its deadline closes the
/// connection: not before it (300 ms here, counted from before the first request was
/// sent), and not never (a timer that did not fire would leave the read waiting until
/// the client's 20 s read timeout failed the test).
#[cfg(feature = "io")]
#[test]
fn hyper_hello_closes_a_connection_whose_next_request_head_stalls() {
    use std::io::{Read, Write};
    for name in ["hyper_hello", "hyper_hello_tokio"] {
        bounded(LIMIT, move || {
            let server = Server::start_with_env(
                name,
                &["127.0.0.1:0", "--workers", "2"],
                &[("HTTP_HEADER_READ_MS", "300")],
            );
            let mut conn = server.connect();
            let sent = std::time::Instant::now();
            conn.write_all(b"GET / HTTP/1.1\r\nhost: test\r\n\r\n")
                .unwrap();
            let mut reply = Vec::new();
            let mut chunk = [0; 1024];
            while !reply.ends_with(b"Hello, world!\n") {
                let n = conn.read(&mut chunk).unwrap();
                assert!(n > 0, "{name}: closed before its first answer");
                reply.extend_from_slice(&chunk[..n]);
            }
            conn.write_all(b"GET /stalled HTTP/1.1\r\nhost: t").unwrap();
            // Whatever hyper writes before it closes (a 408, or nothing), the read ends.
            let mut rest = Vec::new();
            conn.read_to_end(&mut rest)
                .unwrap_or_else(|err| panic!("{name}: the stalled connection: {err}"));
            assert!(
                !rest.windows(6).any(|w| w == b"200 OK"),
                "{name}: answered a request that never arrived whole"
            );
            assert!(
                sent.elapsed() >= std::time::Duration::from_millis(300),
                "{name}: closed before the head's 300 ms were up"
            );
        });
    }
}

#[test]
fn worker_pool_sums_every_weight_or_stops_at_the_first_malformed_item() {
    bounded(LIMIT, || {
        let rt = csp::Runtime::builder().worker_threads(2).build().unwrap();
        assert_eq!(
            rt.block_on(worker_pool::weigh_all(40, 4, None)),
            Ok((0..40).sum())
        );
        // Without the abort of the others, the failing run would check all million
        // items, a millisecond each, long past the watchdog; with it, it returns at
        // once, and nothing is left running.
        let failed = rt.block_on(worker_pool::weigh_all(1_000_000, 4, Some(10)));
        assert_eq!(failed, Err("item 10 is malformed".to_owned()));
        assert_eq!(rt.metrics().processes_alive, 0);
    });
}
