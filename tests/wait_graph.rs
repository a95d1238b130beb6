//! The wait graph (`Handle::wait_graph`): its DOT text on programs whose waits are known
//! exactly, and the file a deadlock report writes with `CSP_DEADLOCK_DOT`.
//!
//! Every test runs under a watchdog (`common::bounded`) and compares the whole set of
//! edges, so a missing or extra wait fails it (or a missing or extra dashed edge to the
//! last user of a channel's other side, or red edge of a cycle).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::channels::channel_id;
use common::{bounded, runtime, wait_until_no_process};

#[path = "../examples/deadlock.rs"]
#[allow(dead_code)]
mod deadlock;

/// A DOT graph as written by `wait_graph`: node labels by name, and edges.
#[derive(Debug)]
struct Graph {
    nodes: BTreeMap<String, String>,
    edges: BTreeSet<(String, String, String)>,
    /// Each edge's attributes before its label (`style=dashed, color=red, `).
    styles: BTreeMap<(String, String, String), String>,
}

impl Graph {
    /// The edges whose attributes include `attribute` (`style=dashed`, `color=red`).
    fn edges_with(&self, attribute: &str) -> BTreeSet<(String, String, String)> {
        self.styles
            .iter()
            .filter(|(_, style)| style.split(", ").any(|a| a == attribute))
            .map(|(edge, _)| edge.clone())
            .collect()
    }
}

/// Parses the one-statement-per-line DOT that csp writes; panics on anything else.
fn parse(dot: &str) -> Graph {
    let mut lines = dot.lines();
    assert_eq!(lines.next(), Some("digraph csp {"), "{dot}");
    assert_eq!(dot.lines().last(), Some("}"), "{dot}");
    let mut graph = Graph {
        nodes: BTreeMap::new(),
        edges: BTreeSet::new(),
        styles: BTreeMap::new(),
    };
    for line in lines {
        let line = line.trim();
        if line == "}" || line == "rankdir=LR;" || line.starts_with("node [") {
            continue;
        }
        let (head, attrs) = line
            .split_once(" [")
            .unwrap_or_else(|| panic!("not a statement: {line:?} in\n{dot}"));
        let (style, label) = attrs
            .split_once("label=\"")
            .and_then(|(style, rest)| Some((style, rest.strip_suffix("\"];")?)))
            .unwrap_or_else(|| panic!("no label in {line:?}"));
        let label = label.to_owned();
        match head.split_once(" -> ") {
            Some((from, to)) => {
                let edge = (from.to_owned(), to.to_owned(), label);
                graph.styles.insert(edge.clone(), style.to_owned());
                assert!(graph.edges.insert(edge), "a repeated edge: {line:?}");
            }
            None => {
                assert!(
                    graph.nodes.insert(head.into(), label).is_none(),
                    "a repeated node: {line:?}"
                );
            }
        }
    }
    for (from, to, _) in &graph.edges {
        assert!(
            graph.nodes.contains_key(from),
            "edge from unknown {from} in\n{dot}"
        );
        assert!(
            graph.nodes.contains_key(to),
            "edge to unknown {to} in\n{dot}"
        );
    }
    graph
}

fn edge(from: String, to: String, label: &str) -> (String, String, String) {
    (from, to, label.to_owned())
}

/// Waits until the runtime's graph has exactly `edges` and every process in it sleeps,
/// and returns it.
fn wait_for_edges(rt: &csp::Runtime, edges: &BTreeSet<(String, String, String)>) -> Graph {
    let deadline = Instant::now() + Duration::from_secs(common::scaled_secs(10));
    loop {
        let dot = rt.wait_graph();
        let graph = parse(&dot);
        // A process registers its wait before its poll ends: wait for both.
        let asleep = graph
            .nodes
            .values()
            .filter(|label| label.starts_with("process #"))
            .all(|label| label.contains("\\nSleeping\\n"));
        if &graph.edges == edges && asleep {
            return graph;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for the edges {edges:?}; the last graph:\n{dot}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn two_processes_waiting_for_each_other_wait_on_each_others_channel() {
    bounded(20, || {
        let rt = runtime(2, "graph-two");
        // Made inside the runtime, and used only there: not foreign.
        let made_on = line!() + 2;
        let ((to_alice, alice_inbox), (to_bob, bob_inbox)) =
            rt.block_on(async { (csp::channel::<u8>(), csp::channel::<u8>()) });
        let (a, b) = (channel_id(&alice_inbox), channel_id(&bob_inbox));
        let alice = rt.spawn(async move {
            let heard = alice_inbox.recv().await;
            to_bob.send(1).await.ok();
            heard
        });
        let bob = rt.spawn(async move {
            let heard = bob_inbox.recv().await;
            to_alice.send(2).await.ok();
            heard
        });
        let (pa, pb) = (format!("p{}", alice.id()), format!("p{}", bob.id()));
        let expected = BTreeSet::from([
            edge(pa.clone(), format!("c{a}"), "recv"),
            edge(pb.clone(), format!("c{b}"), "recv"),
        ]);
        let graph = wait_for_edges(&rt, &expected);
        assert_eq!(graph.nodes.len(), 4, "{graph:?}");
        for p in [&pa, &pb] {
            let label = &graph.nodes[p];
            assert!(label.contains("\\nSleeping\\n"), "{label}");
            assert!(label.contains("tests/wait_graph.rs:"), "{label}");
        }
        assert!(graph.nodes[&pa].ends_with(&format!("recv on channel #{a}")));
        // Each channel is named by where it was made.
        assert_eq!(
            graph.nodes[&format!("c{a}")],
            format!("channel #{a} (rendezvous, made at tests/wait_graph.rs:{made_on}:34)")
        );
        assert_eq!(
            graph.nodes[&format!("c{b}")],
            format!("channel #{b} (rendezvous, made at tests/wait_graph.rs:{made_on}:56)")
        );
        // Nobody ever sent on either: no last sender, no cycle.
        assert!(graph.styles.values().all(String::is_empty), "{graph:?}");
        alice.abort();
        bob.abort();
        wait_until_no_process(&rt, 10);
        let after = parse(&rt.wait_graph());
        assert!(
            after.nodes.is_empty() && after.edges.is_empty(),
            "{after:?}"
        );
    });
}

#[test]
fn a_stalled_pipeline_shows_each_stage_and_the_join_of_its_last() {
    bounded(20, || {
        let rt = runtime(2, "graph-pipeline");
        let (tx1, rx1) = csp::channel::<u32>();
        let bounded_on = line!() + 1;
        let (tx2, rx2) = csp::bounded::<u32>(1);
        let (go, gate) = csp::channel::<()>();
        let (c1, c2, cg) = (channel_id(&tx1), channel_id(&tx2), channel_id(&gate));
        // The buffer of c2 is full and its reader waits at a gate: the middle stage
        // blocks sending, so the source blocks sending too.
        tx2.try_send(0).unwrap();
        let source = rt.spawn(async move { tx1.send(1).await.is_ok() });
        let middle = rt.spawn(async move {
            let tx2 = tx2;
            tx2.send(1).await.ok();
            while let Ok(v) = rx1.recv().await {
                tx2.send(v).await.ok();
            }
        });
        let sink = rt.spawn(async move {
            gate.recv().await.ok();
            let mut sum = 0;
            while let Ok(v) = rx2.recv().await {
                sum += v;
            }
            sum
        });
        let sink_id = sink.id();
        let collector = rt.spawn(async move { sink.await.unwrap() });
        let expected = BTreeSet::from([
            edge(format!("p{}", source.id()), format!("c{c1}"), "send"),
            edge(format!("p{}", middle.id()), format!("c{c2}"), "send"),
            edge(format!("p{sink_id}"), format!("c{cg}"), "recv"),
            edge(
                format!("p{}", collector.id()),
                format!("p{sink_id}"),
                "join",
            ),
        ]);
        let graph = wait_for_edges(&rt, &expected);
        // Made and used on this thread too: foreign.
        assert_eq!(
            graph.nodes[&format!("c{c2}")],
            format!(
                "channel #{c2} (bounded(1), made at tests/wait_graph.rs:{bounded_on}:26)\\nforeign"
            )
        );
        assert!(
            graph.nodes[&format!("p{}", collector.id())]
                .ends_with(&format!("join of process #{sink_id}")),
            "{graph:?}"
        );
        go.send_blocking(()).unwrap();
        assert!(rt.block_on(source).unwrap());
        assert_eq!(rt.block_on(collector).unwrap(), 2);
        rt.block_on(middle).unwrap();
        assert!(parse(&rt.wait_graph()).edges.is_empty());
    });
}

#[test]
fn an_alt_over_three_channels_waits_on_each_of_them() {
    bounded(20, || {
        let rt = runtime(2, "graph-alt");
        let (tx1, rx1) = csp::channel::<u8>();
        let (tx2, rx2) = csp::unbounded::<u8>();
        let (tx3, rx3) = csp::channel::<u8>();
        let ids = [channel_id(&rx1), channel_id(&rx2), channel_id(&rx3)];
        let chooser = rt.spawn(async move {
            csp::alt! {
                recv(rx1) -> v => v.map(|v| (1, v)),
                recv(rx2) -> v => v.map(|v| (2, v)),
                send(tx3, 3) -> r => r.map(|()| (3, 3)).map_err(|_| csp::RecvError),
            }
        });
        let p = format!("p{}", chooser.id());
        let expected = BTreeSet::from([
            edge(p.clone(), format!("c{}", ids[0]), "alt: recv"),
            edge(p.clone(), format!("c{}", ids[1]), "alt: recv"),
            edge(p.clone(), format!("c{}", ids[2]), "alt: send"),
        ]);
        let graph = wait_for_edges(&rt, &expected);
        assert!(
            graph.nodes[&p].ends_with("alt over 3 channels"),
            "{graph:?}"
        );
        assert_eq!(graph.nodes.len(), 4, "{graph:?}");
        tx2.send_blocking(9).unwrap();
        assert_eq!(rt.block_on(chooser).unwrap(), Ok((2, 9)));
        drop((tx1, rx3));
    });
}

#[test]
fn a_process_woken_from_outside_csp_waits_on_the_foreign_node() {
    bounded(20, || {
        let rt = runtime(2, "graph-foreign");
        let (tx, rx) = futures::channel::oneshot::channel::<u8>();
        let waiter = rt.spawn(async move { rx.await.ok() });
        let expected = BTreeSet::from([edge(
            format!("p{}", waiter.id()),
            "foreign".to_owned(),
            "foreign",
        )]);
        let graph = wait_for_edges(&rt, &expected);
        assert!(graph.nodes.contains_key("foreign"));
        tx.send(4).unwrap();
        assert_eq!(rt.block_on(waiter).unwrap(), Some(4));
    });
}

#[test]
fn a_process_asleep_on_a_timer_waits_on_the_foreign_node_through_a_timer_edge() {
    bounded(20, || {
        let rt = runtime(2, "graph-timer");
        let sleeper = rt.spawn(csp::sleep(Duration::from_secs(60)));
        let expected = BTreeSet::from([edge(
            format!("p{}", sleeper.id()),
            "foreign".to_owned(),
            "timer",
        )]);
        let graph = wait_for_edges(&rt, &expected);
        assert!(graph.nodes.contains_key("foreign"));
        sleeper.abort();
    });
}

#[test]
fn a_block_on_future_is_the_main_node() {
    bounded(20, || {
        let rt = Arc::new(runtime(2, "graph-main"));
        let (tx, rx) = csp::channel::<u8>();
        let c = channel_id(&rx);
        let main = {
            let rt = rt.clone();
            std::thread::spawn(move || rt.block_on(rx.recv()))
        };
        let expected = BTreeSet::from([edge("main".into(), format!("c{c}"), "recv")]);
        let graph = wait_for_edges(&rt, &expected);
        assert_eq!(graph.nodes["main"], "block_on");
        tx.send_blocking(3).unwrap();
        assert_eq!(main.join().unwrap(), Ok(3));
    });
}

/// The edges of a graph, as `parse` reads them.
type Edges = BTreeSet<(String, String, String)>;

/// Alice and Bob, on channels made inside `rt` and used only there (not foreign): one
/// greeting each way goes through, then each waits for the other to speak again, under a
/// timeout of `patience` if given. The two processes, each one's wait on its inbox, and
/// each inbox's dashed edge to the process that last sent on it (the other one).
fn alice_and_bob(
    rt: &csp::Runtime,
    patience: Option<Duration>,
) -> ([csp::JoinHandle<()>; 2], Edges, Edges) {
    let ((to_alice, alice_inbox), (to_bob, bob_inbox)) =
        rt.block_on(async { (csp::channel::<u8>(), csp::channel::<u8>()) });
    let (a, b) = (channel_id(&alice_inbox), channel_id(&bob_inbox));
    async fn hear_again(inbox: &csp::Receiver<u8>, patience: Option<Duration>) {
        match patience {
            Some(patience) => drop(csp::timeout(patience, inbox.recv()).await),
            None => drop(inbox.recv().await),
        }
    }
    let alice = rt.spawn(async move {
        to_bob.send(1).await.ok();
        alice_inbox.recv().await.ok();
        hear_again(&alice_inbox, patience).await;
    });
    let bob = rt.spawn(async move {
        bob_inbox.recv().await.ok();
        to_alice.send(2).await.ok();
        hear_again(&bob_inbox, patience).await;
    });
    let (pa, pb) = (format!("p{}", alice.id()), format!("p{}", bob.id()));
    let (ca, cb) = (format!("c{a}"), format!("c{b}"));
    let waits = BTreeSet::from([
        edge(pa.clone(), ca.clone(), "recv"),
        edge(pb.clone(), cb.clone(), "recv"),
    ]);
    let last_senders = BTreeSet::from([edge(ca, pb, "last sent"), edge(cb, pa, "last sent")]);
    ([alice, bob], waits, last_senders)
}

#[test]
fn a_deadlock_cycle_is_drawn_red_through_dashed_edges_to_the_last_senders() {
    bounded(20, || {
        let rt = runtime(2, "graph-cycle");
        // A real deadlock.
        let ([alice, bob], waits, last_senders) = alice_and_bob(&rt, None);
        let expected = waits.union(&last_senders).cloned().collect();
        let graph = wait_for_edges(&rt, &expected);
        assert_eq!(graph.edges_with("style=dashed"), last_senders, "{graph:?}");
        // alice -> her inbox -> bob -> his inbox -> alice: every edge of it red.
        assert_eq!(graph.edges_with("color=red"), expected, "{graph:?}");
        alice.abort();
        bob.abort();
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn a_waiting_send_points_at_the_last_receiver_never_at_itself_and_without_a_cycle_nothing_is_red() {
    bounded(20, || {
        let rt = runtime(2, "graph-other-side");
        let ((tx, rx), (gate_tx, gate), (own_tx, own_rx)) = rt.block_on(async {
            (
                csp::channel::<u8>(),
                csp::channel::<()>(),
                csp::bounded::<u8>(1),
            )
        });
        let (c, cg, co) = (channel_id(&rx), channel_id(&gate), channel_id(&own_rx));
        // The receiver takes one value, then waits at a gate nobody ever sent on; the
        // sender's second value waits for it.
        let receiver = rt.spawn(async move {
            rx.recv().await.ok();
            gate.recv().await.ok();
        });
        let sender = rt.spawn(async move {
            tx.send(1).await.ok();
            tx.send(2).await.ok();
        });
        // A process that sent itself a value and waits for another: its channel's last
        // sender is the waiter itself, so no edge points back at it.
        let loner = rt.spawn(async move {
            own_tx.send(7).await.ok();
            own_rx.recv().await.ok();
            own_rx.recv().await.ok();
        });
        let (pr, ps, pl) = (
            format!("p{}", receiver.id()),
            format!("p{}", sender.id()),
            format!("p{}", loner.id()),
        );
        let expected = BTreeSet::from([
            edge(ps.clone(), format!("c{c}"), "send"),
            edge(format!("c{c}"), pr.clone(), "last received"),
            edge(pr.clone(), format!("c{cg}"), "recv"),
            edge(pl.clone(), format!("c{co}"), "recv"),
        ]);
        let graph = wait_for_edges(&rt, &expected);
        assert_eq!(
            graph.edges_with("style=dashed"),
            BTreeSet::from([edge(format!("c{c}"), pr, "last received")]),
            "{graph:?}"
        );
        assert!(graph.edges_with("color=red").is_empty(), "{graph:?}");
        for p in [receiver, sender, loner] {
            p.abort();
        }
        drop(gate_tx);
        wait_until_no_process(&rt, 10);
    });
}

#[test]
fn an_alt_arm_that_waited_then_fired_is_the_last_receiver_a_later_send_points_at() {
    bounded(20, || {
        let rt = runtime(2, "graph-alt-user");
        let ((tx, rx), (_gate_tx, gate)) =
            rt.block_on(async { (csp::channel::<u8>(), csp::channel::<()>()) });
        let (c, cg) = (channel_id(&rx), channel_id(&gate));
        // The chooser waits in an alt until the first value comes, then at a gate.
        let chooser = rt.spawn(async move {
            csp::alt! {
                recv(rx) -> v => v.ok(),
                recv(gate) -> _closed => None,
            };
            gate.recv().await.ok();
            drop(rx);
        });
        let pc = format!("p{}", chooser.id());
        wait_for_edges(
            &rt,
            &BTreeSet::from([
                edge(pc.clone(), format!("c{c}"), "alt: recv"),
                edge(pc.clone(), format!("c{cg}"), "alt: recv"),
            ]),
        );
        let sender = rt.spawn(async move {
            tx.send(1).await.ok();
            tx.send(2).await.ok();
        });
        let expected = BTreeSet::from([
            edge(format!("p{}", sender.id()), format!("c{c}"), "send"),
            edge(format!("c{c}"), pc.clone(), "last received"),
            edge(pc, format!("c{cg}"), "recv"),
        ]);
        let graph = wait_for_edges(&rt, &expected);
        assert!(graph.edges_with("color=red").is_empty(), "{graph:?}");
        sender.abort();
        chooser.abort();
        wait_until_no_process(&rt, 10);
    });
}

/// Set in the child run of the test below.
const CHILD: &str = "CSP_WAIT_GRAPH_TEST_CHILD";

#[test]
fn a_deadlock_report_writes_the_graph_where_csp_deadlock_dot_says() {
    if std::env::var_os(CHILD).is_some() && std::env::var_os("CSP_DEADLOCK_DOT").is_some() {
        // The child: run the example's deadlock with CSP_DEADLOCK_DOT set by the parent,
        // and print the report for it.
        println!("{}", deadlock::report(Duration::from_millis(50)));
        return;
    }
    let dir = std::env::temp_dir().join(format!("csp-wait-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dot_path = dir.join("deadlock.dot");
    let output = bounded(60, {
        let dot_path = dot_path.clone();
        move || {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "a_deadlock_report_writes_the_graph_where_csp_deadlock_dot_says",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .env("CSP_DEADLOCK_DOT", &dot_path)
                .output()
                .unwrap()
        }
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "the wait graph (Graphviz DOT) is in {} (CSP_DEADLOCK_DOT)",
            dot_path.display()
        )),
        "{stdout}"
    );
    let dot = std::fs::read_to_string(&dot_path).unwrap();
    let graph = parse(&dot);
    // Alice and Bob greeted each other once, then each waits to receive on its own
    // inbox, whose last sender is the other: a cycle. Main joins Alice.
    let recvs: Vec<_> = graph.edges.iter().filter(|e| e.2 == "recv").collect();
    assert_eq!(recvs.len(), 2, "{dot}");
    assert!(
        recvs
            .iter()
            .all(|e| e.0.starts_with('p') && e.1.starts_with('c'))
    );
    let joins: Vec<_> = graph.edges.iter().filter(|e| e.2 == "join").collect();
    assert_eq!(joins.len(), 1, "{dot}");
    assert_eq!(joins[0].0, "main");
    let dashed = graph.edges_with("style=dashed");
    assert_eq!(dashed.len(), 2, "{dot}");
    for (from, to, label) in &dashed {
        assert_eq!(label, "last sent", "{dot}");
        // From the inbox one process waits on to the other process.
        let waiter = recvs.iter().find(|e| &e.1 == from).expect("a waiter");
        assert!(to.starts_with('p') && to != &waiter.0, "{dot}");
    }
    assert_eq!(graph.edges.len(), 5, "{dot}");
    let red = graph.edges_with("color=red");
    let cycle: BTreeSet<_> = recvs.iter().map(|&e| e.clone()).chain(dashed).collect();
    assert_eq!(red, cycle, "{dot}");
    // The processes by where they were spawned, the channels by where they were made.
    assert_eq!(
        graph
            .nodes
            .values()
            .filter(|l| l.contains("examples/deadlock.rs:"))
            .count(),
        4,
        "{dot}"
    );
    assert_eq!(
        graph
            .nodes
            .values()
            .filter(|l| l.starts_with("channel #")
                && l.contains(" (rendezvous, made at ")
                // `tests/../examples/deadlock.rs` in this test's copy of the example.
                && l.contains("examples/deadlock.rs:"))
            .count(),
        2,
        "{dot}"
    );
    // Render it, when Graphviz is here.
    match Command::new("dot").arg("-Tsvg").arg(&dot_path).output() {
        Ok(svg) => {
            assert!(
                svg.status.success(),
                "{}",
                String::from_utf8_lossy(&svg.stderr)
            );
            let svg = String::from_utf8_lossy(&svg.stdout);
            assert!(svg.contains("<svg"), "{svg}");
            assert_eq!(svg.matches("class=\"edge\"").count(), 5, "{svg}");
            assert!(svg.contains("stroke=\"red\""), "{svg}");
            assert!(svg.contains("stroke-dasharray"), "{svg}");
        }
        Err(e) => eprintln!(
            "skipped rendering the wait graph: `dot` (Graphviz) did not run ({e}); \
             install it with `apt-get install graphviz`"
        ),
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn surveys_race_channels_that_come_and_go() {
    bounded(60, || {
        let rt = runtime(2, "graph-churn");
        let rounds = common::scaled(2_000u32);
        // One wait that lasts the whole run: every survey must find it, whatever the
        // churn around it.
        let (release, anchor_rx) = rt.block_on(async { csp::channel::<()>() });
        let anchor_channel = channel_id(&anchor_rx);
        let anchor = rt.spawn(async move { anchor_rx.recv().await.is_ok() });
        let anchor_edge = edge(
            format!("p{}", anchor.id()),
            format!("c{anchor_channel}"),
            "recv",
        );
        wait_for_edges(&rt, &BTreeSet::from([anchor_edge.clone()]));
        let pairs: Vec<_> = (0..4)
            .map(|_| {
                rt.spawn(async move {
                    let mut exchanged = 0;
                    for i in 0..rounds {
                        // A fresh channel each round: it joins the census when the
                        // first side waits, and leaves when both ends are gone.
                        let (tx, rx) = csp::channel::<u32>();
                        let sender = csp::spawn(async move { tx.send(i).await.is_ok() });
                        if rx.recv().await == Ok(i) {
                            exchanged += 1;
                        }
                        assert!(sender.await.unwrap());
                    }
                    exchanged
                })
            })
            .collect();
        // At least one survey, even if the pairs are done before the first.
        let mut surveys = 0;
        while surveys == 0 || pairs.iter().any(|p| !p.is_finished()) {
            let graph = parse(&rt.wait_graph());
            assert!(graph.edges.contains(&anchor_edge), "{graph:?}");
            for (from, to, label) in &graph.edges {
                // A pair waits on its channel, or joins its sender; a channel may point
                // at the last user of its other side.
                let join = label == "join" && to.starts_with('p');
                let other_side = matches!(label.as_str(), "last sent" | "last received")
                    && from.starts_with('c')
                    && to.starts_with('p');
                assert!(
                    other_side || (from.starts_with('p') && (to.starts_with('c') || join)),
                    "{graph:?}"
                );
            }
            surveys += 1;
        }
        for pair in pairs {
            assert_eq!(rt.block_on(pair).unwrap(), rounds);
        }
        release.send_blocking(()).unwrap();
        assert!(rt.block_on(anchor).unwrap());
        wait_until_no_process(&rt, 10);
        assert!(parse(&rt.wait_graph()).edges.is_empty());
    });
}

#[test]
fn a_cycle_of_waits_each_under_a_timeout_is_not_drawn_red() {
    // As the cycle above, but each second receive is under a timeout: the timers end it,
    // so nothing is stuck, and no edge is red.
    bounded(20, || {
        let rt = runtime(2, "graph-timeouts");
        let ([alice, bob], waits, last_senders) = alice_and_bob(&rt, Some(Duration::from_secs(60)));
        let expected = waits.union(&last_senders).cloned().collect();
        let graph = wait_for_edges(&rt, &expected);
        assert!(graph.edges_with("color=red").is_empty(), "{graph:?}");
        alice.abort();
        bob.abort();
        wait_until_no_process(&rt, 10);
    });
}
