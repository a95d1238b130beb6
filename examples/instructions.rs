//! One hot path, run a fixed number of times on csp or on tokio (one worker thread each),
//! for `scripts/instructions` to count its instructions under
//! `valgrind --tool=callgrind`: a figure that, unlike a time, does not move from run to
//! run.
//!
//! ```text
//! cargo run --release --example instructions -- csp ping_pong 10000
//! scripts/instructions            # the table of instructions per operation
//! ```
//!
//! Each workload runs inside a process (spawned from `block_on`), whose `block_on`
//! thread then only waits. Workloads, per operation:
//! - `ping_pong`: a round trip over two rendezvous channels between two processes
//!   (tokio: `mpsc::channel(1)`, its closest);
//! - `alt4`: a `try_send` into one of four `bounded(16)` channels, then a 4-arm `alt!`
//!   that finds it ready (tokio: `try_send`, then `tokio::select!` over four `recv`s);
//! - `bounded`: a send then a receive through a `bounded(128)` channel, in one process;
//! - `spawn_join`: spawning a process that returns at once, then awaiting its handle;
//! - `ring`: one hop of a token round a ring of 503 processes over rendezvous channels
//!   (vs_tokio's `ring`): a receive, a send that wakes the next process, and a receive
//!   that waits.

use std::future::Future;

#[path = "../benches/common/workloads.rs"]
mod workloads;

use workloads::{Executor, RecvEnd, SendEnd, ring_hops, run_in_process};

/// The workloads, by name.
const WORKLOADS: [&str; 5] = ["ping_pong", "alt4", "bounded", "spawn_join", "ring"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: instructions <csp|tokio> <ping_pong|alt4|bounded|spawn_join|ring> <count>";
    let [runtime, workload, count] = args.as_slice() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let Ok(count) = count.parse::<usize>() else {
        eprintln!("{usage}: the count must be a number, got {count:?}");
        std::process::exit(2);
    };
    if !WORKLOADS.contains(&workload.as_str()) {
        eprintln!("{usage}: unknown workload {workload:?}");
        std::process::exit(2);
    }
    match runtime.as_str() {
        "csp" => run::<csp::Runtime>(workload, count, Csp),
        "tokio" => run::<tokio::runtime::Runtime>(workload, count, Tokio),
        other => {
            eprintln!("{usage}: unknown runtime {other:?}");
            std::process::exit(2);
        }
    }
}

/// What differs between the runtimes beyond `Executor`: the choice over four receives.
trait Choose<E: Executor>: Copy + Send + 'static {
    /// Receives from whichever of `rxs` is ready.
    fn alt4(self, rxs: &mut [E::Receiver<u64>; 4]) -> impl Future<Output = u64> + Send;

    /// Puts `value` in `tx` without waiting.
    fn try_send(self, tx: &E::Sender<u64>, value: u64);
}

#[derive(Clone, Copy)]
struct Csp;

#[derive(Clone, Copy)]
struct Tokio;

impl Choose<csp::Runtime> for Csp {
    async fn alt4(self, rxs: &mut [csp::Receiver<u64>; 4]) -> u64 {
        let [a, b, c, d] = rxs;
        csp::alt! {
            recv(a) -> v => v.unwrap(),
            recv(b) -> v => v.unwrap(),
            recv(c) -> v => v.unwrap(),
            recv(d) -> v => v.unwrap(),
        }
    }

    fn try_send(self, tx: &csp::Sender<u64>, value: u64) {
        tx.try_send(value).expect("room in the channel");
    }
}

impl Choose<tokio::runtime::Runtime> for Tokio {
    async fn alt4(self, rxs: &mut [tokio::sync::mpsc::Receiver<u64>; 4]) -> u64 {
        let [a, b, c, d] = rxs;
        tokio::select! {
            v = a.recv() => v.unwrap(),
            v = b.recv() => v.unwrap(),
            v = c.recv() => v.unwrap(),
            v = d.recv() => v.unwrap(),
        }
    }

    fn try_send(self, tx: &tokio::sync::mpsc::Sender<u64>, value: u64) {
        tx.try_send(value).expect("room in the channel");
    }
}

fn run<E: Executor + 'static>(workload: &str, count: usize, choose: impl Choose<E>) {
    let rt = E::with_workers(1);
    let done = match workload {
        "ping_pong" => run_in_process(&rt, ping_pong::<E>(count)),
        "alt4" => run_in_process(&rt, alt4::<E>(count, choose)),
        "bounded" => run_in_process(&rt, bounded::<E>(count)),
        "ring" => {
            run_in_process(&rt, ring_hops::<E>(count));
            count
        }
        _ => run_in_process(&rt, spawn_join::<E>(count)),
    };
    assert_eq!(done, count);
}

async fn ping_pong<E: Executor + 'static>(count: usize) -> usize {
    let (ping, mut pinged) = E::rendezvous::<usize>();
    let (pong, mut ponged) = E::rendezvous::<usize>();
    let ponger = E::spawn(async move {
        while let Some(n) = pinged.recv().await {
            pong.send(n + 1).await.expect("the pinger listens");
        }
    });
    for n in 0..count {
        ping.send(n).await.expect("the ponger listens");
        assert_eq!(ponged.recv().await, Some(n + 1));
    }
    drop(ping);
    ponger.await.expect("the ponger finished");
    count
}

async fn alt4<E: Executor + 'static>(count: usize, choose: impl Choose<E>) -> usize {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..4).map(|_| E::bounded::<u64>(16)).unzip();
    let mut rxs: [E::Receiver<u64>; 4] = rxs.try_into().ok().expect("four receivers");
    let mut sum = 0;
    for n in 0..count as u64 {
        choose.try_send(&txs[(n % 4) as usize], n);
        sum += choose.alt4(&mut rxs).await;
    }
    assert_eq!(sum, (count as u64) * (count as u64 - 1) / 2);
    count
}

async fn bounded<E: Executor + 'static>(count: usize) -> usize {
    let (tx, mut rx) = E::bounded::<usize>(128);
    for n in 0..count {
        tx.send(n).await.expect("the receiver lives");
        assert_eq!(rx.recv().await, Some(n));
    }
    count
}

async fn spawn_join<E: Executor + 'static>(count: usize) -> usize {
    for n in 0..count {
        let output = E::spawn(async move { n }).await;
        assert_eq!(output.expect("the process finished"), n);
    }
    count
}
