//! The console (feature `console`): its routes against the process table, the metrics
//! against a real parser, the SVG as XML, its answers while every worker is blocked,
//! clients that are slow, silent, endless or announce bodies they never send (none holds
//! the console up), the dump on a signal, and the page of `examples/console.rs` in a
//! headless browser.
//!
//! Run with `cargo test --features console`, which builds the example the browser test
//! runs; or, for this file alone, `cargo build --features console --example console`
//! first, then `cargo test --features console --test console`. `promtool` (Debian's `prometheus`) and
//! `chromium` are needed for two of the tests; without them those tests say so and pass,
//! except under `CI=true`, where `.ci/run` installs both and a missing one fails.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bounded, wait_until, wait_until_waiting};

/// Seconds any test here may take.
const LIMIT: u64 = 60;

/// `GET path` from the console at `addr`: the status and the body. Fails if the console
/// does not answer within `within`.
fn get(addr: SocketAddr, path: &str, within: Duration) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&addr, within).expect("connect to the console");
    stream.set_read_timeout(Some(within)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .unwrap_or_else(|err| panic!("no answer to GET {path} within {within:?}: {err}"));
    let response = String::from_utf8(response).expect("a UTF-8 response");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    (status, body.to_owned())
}

/// A runtime of two workers serving its console on a free loopback port.
fn runtime() -> (csp::Runtime, SocketAddr) {
    let rt = csp::Runtime::builder()
        .worker_threads(2)
        .console("127.0.0.1:0")
        .build()
        .expect("a runtime with a console");
    let addr = rt.console_addr().expect("the console's address");
    (rt, addr)
}

/// Whether a tool this test needs is missing: fine on a developer's machine (said on
/// standard error), a failure under CI, which installs it.
fn missing(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is not installed: .ci/run installs it"
        );
        eprintln!("{tool} is not installed: this check is skipped");
    }
    !found
}

#[test]
fn the_json_lists_every_process_of_the_table_with_its_wait_and_figures() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        let (tx, rx) = csp::channel::<u8>();
        let waiter = rt.spawn(async move { rx.recv().await });
        let polled = rt.spawn(async {
            for _ in 0..5 {
                csp::yield_now().await;
            }
            std::future::pending::<()>().await
        });
        wait_until(10, "both processes asleep", || {
            let table = rt.processes();
            table.len() == 2 && table.iter().all(|p| p.state == csp::ProcessState::Sleeping)
        });
        let (status, body) = get(addr, "/api/processes", Duration::from_secs(5));
        assert_eq!(status, 200, "{body}");
        let json: serde_json::Value = serde_json::from_str(&body).expect("valid JSON");
        let listed = json.as_array().expect("an array");
        let table = rt.processes();
        assert_eq!(listed.len(), table.len(), "{body}");
        for (row, p) in listed.iter().zip(&table) {
            assert_eq!(row["id"], p.id, "{body}");
            assert_eq!(row["spawned_at"], p.spawned_at.to_string(), "{body}");
            assert_eq!(row["state"], format!("{:?}", p.state), "{body}");
            match &p.waiting_on {
                Some(w) => assert_eq!(row["waiting_on"], w.as_str(), "{body}"),
                None => assert!(row["waiting_on"].is_null(), "{body}"),
            }
        }
        let by_id = |id: u64| listed.iter().find(|r| r["id"] == id).unwrap();
        // Polled once, then woken by nothing; polled six times (five yields).
        assert_eq!(by_id(waiter.id())["polls"], 1, "{body}");
        assert_eq!(by_id(polled.id())["polls"], 6, "{body}");
        assert_eq!(by_id(polled.id())["requeues"], 5, "{body}");
        assert!(
            by_id(waiter.id())["waiting_on"]
                .as_str()
                .unwrap()
                .starts_with("recv on channel #"),
            "{body}"
        );
        drop(tx);
    });
}

#[test]
fn the_svg_is_xml_with_one_node_per_process_and_the_dot_names_them_all() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        let (_tx, rx) = csp::channel::<u8>();
        let rx2 = rx.clone();
        let a = rt.spawn(async move { rx.recv().await });
        let b = rt.spawn(async move { rx2.recv().await });
        let c = rt.spawn(b); // waits for b, a join edge
        wait_until(10, "three processes asleep on csp waits", || {
            let table = rt.processes();
            table.len() == 3 && table.iter().all(|p| p.waiting_on.is_some())
        });
        let (status, dot) = get(addr, "/api/graph.dot", Duration::from_secs(5));
        assert_eq!(status, 200);
        for p in rt.processes() {
            assert!(dot.contains(&format!("p{} [", p.id)), "{dot}");
        }
        let (status, svg) = get(addr, "/api/graph.svg", Duration::from_secs(20));
        assert_eq!(status, 200, "{svg}");
        let options = roxmltree::ParsingOptions {
            allow_dtd: true, // Graphviz declares SVG's doctype
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&svg, options)
            .expect("the SVG is well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let nodes = process_nodes(&doc);
        let mut ids: Vec<u64> = rt.processes().iter().map(|p| p.id).collect();
        ids.sort_unstable();
        assert_eq!(nodes, ids, "{svg}");
        drop((a, c));
    });
}

/// The ids of the process nodes of an SVG drawn by Graphviz (a `g` of class `node`
/// titled `p<id>`) or by layout-rs (a text whose first line is `process #<id>`).
fn process_nodes(doc: &roxmltree::Document<'_>) -> Vec<u64> {
    let graphviz = doc
        .descendants()
        .any(|n| n.has_tag_name("g") && n.attribute("class") == Some("node"));
    let mut ids: Vec<u64> = doc
        .descendants()
        .filter_map(|n| {
            if graphviz {
                if !(n.has_tag_name("g") && n.attribute("class") == Some("node")) {
                    return None;
                }
                let title = n.children().find(|c| c.has_tag_name("title"))?.text()?;
                return title.strip_prefix('p')?.parse().ok();
            }
            if !n.has_tag_name("text") {
                return None;
            }
            let first = n
                .descendants()
                .find_map(|t| t.text().filter(|s| !s.trim().is_empty()))?;
            first.trim().strip_prefix("process #")?.parse().ok()
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn the_metrics_pass_promtool_and_count_what_the_runtime_counts() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        rt.block_on(async {
            for _ in 0..7 {
                csp::spawn(async {}).await.unwrap();
            }
        });
        let (status, text) = get(addr, "/metrics", Duration::from_secs(5));
        assert_eq!(status, 200, "{text}");
        // Every sample follows its family's HELP and TYPE lines.
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap().to_owned());
            } else if !line.starts_with('#') {
                let name = line.split(' ').next().unwrap();
                assert!(name.starts_with("csp_"), "{line}");
                assert!(
                    declared.iter().any(|d| d == name),
                    "{name} has no TYPE: {text}"
                );
            }
        }
        assert!(text.contains("\ncsp_spawned_total 7\n"), "{text}");
        assert!(text.contains("\ncsp_workers 2\n"), "{text}");
        if missing("promtool") {
            return;
        }
        let mut promtool = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start promtool");
        promtool
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = promtool.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool check metrics failed:\n{}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

#[test]
fn the_console_answers_within_a_second_while_every_worker_is_blocked() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        let (started, blocked) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let started = started.clone();
            rt.spawn(async move {
                started.send(()).unwrap();
                std::thread::sleep(Duration::from_secs(3)); // holds its worker
            });
        }
        for _ in 0..2 {
            blocked.recv().unwrap();
        }
        let asked = Instant::now();
        let (status, page) = get(addr, "/", Duration::from_secs(1));
        assert_eq!(status, 200);
        assert!(asked.elapsed() < Duration::from_secs(1));
        assert!(
            page.contains("<table>") && page.contains("id=\"processes\""),
            "{page}"
        );
        // And the page tells of both polls by the time they have run long.
        wait_until(10, "two long-poll warnings", || {
            get(addr, "/", Duration::from_secs(1))
                .1
                .matches("class=\"warning long-poll\"")
                .count()
                >= 2
        });
        rt.shutdown_timeout(Duration::from_secs(5));
    });
}

#[test]
fn a_long_poll_warning_names_the_process_it_held_up() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        let (tx, rx) = csp::channel::<()>();
        let (ran_tx, ran_rx) = std::sync::mpsc::channel();
        let receiver = rt.spawn(async move {
            rx.recv().await.unwrap();
            ran_tx.send(()).unwrap();
        });
        wait_until_waiting(&rt, receiver.id());
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let blocker = rt.spawn(async move {
            // Wakes the receiver into this worker's slot, then blocks until released.
            tx.send(()).await.unwrap();
            let ran = ran_rx.recv_timeout(Duration::from_secs(10)).is_ok();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
            ran
        });
        let held_up = format!("it held up process #{}", receiver.id());
        let found = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            get(addr, "/", Duration::from_secs(2)).1.contains(&held_up)
        });
        let page = get(addr, "/", Duration::from_secs(2)).1;
        let warnings = page.split("id=\"warnings\"").nth(1).unwrap_or("");
        let warnings = warnings.split("</section>").next().unwrap_or("");
        assert!(found, "no warning says {held_up:?}: {warnings}");
        release_tx.send(()).unwrap();
        assert!(
            rt.block_on(blocker).unwrap(),
            "the receiver ran while its waker blocked"
        );
    });
}

#[test]
fn a_console_on_a_taken_address_fails_the_build_and_says_where() {
    bounded(LIMIT, || {
        let (_rt, addr) = runtime();
        let err = csp::Runtime::builder()
            .worker_threads(1)
            .console(addr.to_string())
            .build()
            .unwrap_err();
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    });
}

#[test]
fn the_console_stops_when_its_runtime_drops() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        assert_eq!(get(addr, "/metrics", Duration::from_secs(5)).0, 200);
        drop(rt);
        wait_until(10, "the port closed", || TcpStream::connect(addr).is_err());
    });
}

/// Sends `request` (raw bytes) to the console at `addr` and reads the whole answer
/// (the console closes its side once it has answered), leaving the client's side open:
/// the stream, and the answer.
fn send_raw(addr: SocketAddr, request: &[u8]) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to the console");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("an answer");
    (stream, String::from_utf8(answer).expect("a UTF-8 answer"))
}

#[test]
fn a_client_that_announces_a_body_and_sends_none_holds_up_no_one() {
    // The console answered, then read the body it was promised, with no time limit:
    // the one thread that serves and samples was stuck for as long as the client kept
    // its connection open, and the runtime's shutdown waited for it.
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        let (_open, answer) = send_raw(
            addr,
            format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 2000\r\n\r\n")
                .as_bytes(),
        );
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert_eq!(get(addr, "/metrics", Duration::from_secs(10)).0, 200);
        drop(rt);
    });
}

#[test]
fn a_huge_content_length_is_answered_and_the_program_goes_on() {
    // A body that long made the old server allocate it whole as it dropped the request:
    // the allocation failed and aborted the process (this test binary).
    bounded(LIMIT, || {
        let (_rt, addr) = runtime();
        for length in ["9223372036854775807", "18446744073709551615"] {
            let request = format!("GET / HTTP/1.1\r\nContent-Length: {length}\r\n\r\n");
            let (_open, answer) = send_raw(addr, request.as_bytes());
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        }
        assert_eq!(get(addr, "/metrics", Duration::from_secs(10)).0, 200);
    });
}

#[test]
fn a_slow_or_endless_request_is_cut_off_and_the_others_are_served() {
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        // Connected, and silent.
        let _silent = TcpStream::connect(addr).unwrap();
        // A head that never ends: refused once too long.
        let mut endless = b"GET / HTTP/1.1\r\n".to_vec();
        while endless.len() < 64 * 1024 {
            endless.extend_from_slice(b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        // The console may stop reading (and close) before all of it is written.
        let _ = stream.write_all(&endless);
        let mut status = String::new();
        let _ = BufReader::new(stream).read_line(&mut status);
        assert!(
            status.is_empty() || status.starts_with("HTTP/1.1 431"),
            "{status}"
        );
        assert_eq!(get(addr, "/metrics", Duration::from_secs(10)).0, 200);
        // And the runtime's drop does not wait for a silent client.
        let _silent_again = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let dropped = Instant::now();
        drop(rt);
        eprintln!("dropped in {:?} with a silent client", dropped.elapsed());
    });
}

#[test]
fn other_methods_are_refused_with_the_allowed_ones_and_absolute_targets_served() {
    bounded(LIMIT, || {
        let (_rt, addr) = runtime();
        let (_, answer) = send_raw(
            addr,
            b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        );
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
        assert!(answer.contains("Allow: GET, HEAD\r\n"), "{answer}");
        let target = format!("http://{addr}/metrics");
        let (status, body) = get(addr, &target, Duration::from_secs(10));
        assert_eq!(status, 200);
        assert!(body.contains("csp_"), "{body}");
        // HEAD: the head alone.
        let (_, answer) = send_raw(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.ends_with("\r\n\r\n"),
            "a body after the head: {answer:?}"
        );
    });
}

/// The dump on SIGQUIT, in a child process (the signal goes to the whole process).
#[test]
fn sigquit_prints_the_process_table_and_the_graph_and_the_program_goes_on() {
    const CHILD: &str = "CSP_TEST_DUMP_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let rt = csp::Runtime::builder().worker_threads(1).build().unwrap();
        let (_tx, rx) = csp::channel::<u8>();
        rt.spawn(async move { rx.recv().await });
        println!("ready");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        println!("still here");
        return;
    }
    bounded(LIMIT, || {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "sigquit_prints_the_process_table_and_the_graph_and_the_program_goes_on",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the child");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("ready") {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the child ended");
        }
        // Once the process has blocked.
        std::thread::sleep(Duration::from_millis(200));
        let killed = Command::new("kill")
            .args(["-QUIT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut dump = String::new();
        while !dump.contains("digraph") {
            assert!(stderr.read_line(&mut dump).unwrap() > 0, "no dump: {dump}");
        }
        assert!(dump.contains("csp: process dump"), "{dump}");
        assert!(dump.contains("waiting on recv on channel #"), "{dump}");
        child.stdin.take().unwrap().write_all(b"go on\n").unwrap();
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        assert!(
            rest.contains("still here"),
            "the program did not go on: {rest}"
        );
        assert!(child.wait().unwrap().success());
    });
}

/// `examples/console.rs` in a headless browser: the page shows the processes, the
/// graph and the long-poll warning, and a screenshot is saved to
/// `target/console-screenshot.png`.
#[test]
fn a_browser_shows_the_processes_the_graph_and_the_long_poll_warning() {
    bounded(LIMIT * 2, || {
        let Some(browser) = ["chromium", "chromium-browser", "google-chrome"]
            .into_iter()
            .find(|b| {
                Command::new("sh")
                    .args(["-c", &format!("command -v {b}")])
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            })
        else {
            assert!(missing("chromium"));
            return;
        };
        let example = Example::start();
        wait_until(20, "the example's long poll on the page", || {
            get(example.addr, "/", Duration::from_secs(2))
                .1
                .contains("class=\"warning long-poll\"")
        });
        let headless = |extra: &[&str]| {
            let out = Command::new(browser)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                ])
                .args(extra)
                .arg(format!("http://{}/", example.addr))
                .stderr(Stdio::null())
                .output()
                .expect("run the browser");
            assert!(out.status.success(), "{browser} failed");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let dom = headless(&["--dump-dom"]);
        // The DOM as the browser built it (HTML, not XML: checked as text).
        let rows = dom.matches("<tr class=\"process ").count();
        assert!(rows >= 12, "{rows} process rows: {dom}");
        assert!(
            dom.contains("examples/console.rs:"),
            "no spawn sites: {dom}"
        );
        let graph = dom.split("id=\"graph\"").nth(1).expect("a graph section");
        assert!(graph.contains("<svg"), "no picture of the graph: {graph}");
        assert!(
            dom.contains("class=\"warning long-poll\""),
            "no long-poll warning"
        );
        assert!(dom.contains("data-series=\"polls\""), "no plots");
        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshot.png");
        let _ = std::fs::remove_file(&shot);
        headless(&[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1600",
        ]);
        let png = std::fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        eprintln!("screenshot: {}", shot.display());
    });
}

/// `examples/console.rs`, running, killed when dropped.
struct Example {
    child: std::process::Child,
    addr: SocketAddr,
}

impl Example {
    fn start() -> Example {
        let binary = std::env::current_exe()
            .unwrap()
            .parent()
            .and_then(|deps| deps.parent())
            .expect("the test binary lives in target/<profile>/deps")
            .join("examples")
            .join(format!("console{}", std::env::consts::EXE_SUFFIX));
        let mut child = Command::new(&binary)
            .arg("127.0.0.1:0")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "start {}: {err}; build it with `cargo build --features console --example console`",
                    binary.display()
                )
            });
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr
            .read_line(&mut line)
            .expect("the example's first line");
        let addr = line
            .trim()
            .strip_prefix("csp: console on http://")
            .and_then(|a| a.strip_suffix('/'))
            .unwrap_or_else(|| panic!("the example printed {line:?}, not its console"))
            .parse()
            .expect("a socket address");
        Example { child, addr }
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_loopback_console_answers_for_loopback_hosts_only() {
    // A page whose host name an attacker points at 127.0.0.1 (DNS rebinding) reaches the
    // console through the visitor's browser, with its own name in `Host`.
    bounded(LIMIT, || {
        let (_rt, addr) = runtime();
        let port = addr.port();
        let ask = |host: &str| {
            let request = format!("GET /api/processes HTTP/1.1\r\nHost: {host}\r\n\r\n");
            send_raw(addr, request.as_bytes()).1
        };
        for host in [format!("attacker.example:{port}"), "10.1.2.3".to_owned()] {
            let answer = ask(&host);
            assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
            assert!(!answer.contains("\"processes\""), "{host}: {answer}");
        }
        for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
            let answer = ask(&host);
            assert!(answer.starts_with("HTTP/1.1 200"), "{host}: {answer}");
        }
        // HTTP/1.0 without a Host: no browser sends that.
        let answer = send_raw(addr, b"GET /metrics HTTP/1.0\r\n\r\n").1;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    });
}

#[test]
fn a_long_poll_while_a_slow_client_holds_the_console_is_still_seen() {
    // The console reads one request at a time; a client that sends part of its head and
    // then nothing holds it for the request timeout. The workers' sampling must go on
    // meanwhile, or a long poll in that time goes unseen.
    bounded(LIMIT, || {
        let (rt, addr) = runtime();
        let mut slow = TcpStream::connect(addr).expect("connect to the console");
        slow.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        // Taken by the console's thread, which now waits for the rest.
        std::thread::sleep(Duration::from_millis(100));
        let blocker = rt.spawn(async {
            std::thread::sleep(Duration::from_millis(300));
        });
        rt.block_on(blocker).unwrap();
        drop(slow);
        let (status, metrics) = get(addr, "/metrics", Duration::from_secs(10));
        assert_eq!(status, 200);
        let long_polls = metrics
            .lines()
            .find_map(|line| line.strip_prefix("csp_console_long_polls "))
            .unwrap_or_else(|| panic!("no csp_console_long_polls in {metrics}"));
        assert_eq!(long_polls.trim(), "1", "{metrics}");
    });
}

#[test]
fn silent_connections_hold_up_no_one() {
    // Connections that send nothing (a browser opens some speculatively) wait aside for
    // their 2 s; a client that speaks meanwhile is served at once.
    bounded(LIMIT, || {
        let (_rt, addr) = runtime();
        let silent: Vec<_> = (0..8)
            .map(|_| TcpStream::connect(addr).expect("connect to the console"))
            .collect();
        // Taken by the console's thread.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(get(addr, "/metrics", Duration::from_secs(10)).0, 200);
        // Served while every silent connection still waited: none was closed by its
        // time running out before (a console that served them in turn gives each its
        // 2 s, and closes it unanswered, before it gets to the request).
        for mut conn in silent {
            conn.set_nonblocking(true).unwrap();
            let mut byte = [0u8; 1];
            let still_open = matches!(
                conn.read(&mut byte),
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock
            );
            assert!(
                still_open,
                "a silent connection was closed before the request was served"
            );
        }
    });
}
