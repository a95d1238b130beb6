//! A program to watch in the console: dining philosophers with a butler, a pipeline, a
//! process that blocks its worker on purpose, and two clerks stuck waiting on each other.
//!
//! ```text
//! cargo run --features console --example console            # serves on 127.0.0.1:6669
//! cargo run --features console --example console 127.0.0.1:0  # any free port
//! ```
//!
//! Then open the address it prints. The one line that turns the console on is
//! `.console(addr)` below (or `#[csp::main(console = "127.0.0.1:6669")]`, or
//! `CSP_CONSOLE=127.0.0.1:6669` in the environment of any program built with the
//! feature). It runs until interrupted, or for the seconds given as a second argument.

use std::time::Duration;

use csp::{Receiver, Sender};

/// Philosophers at the table, and forks.
const PHILOSOPHERS: usize = 5;

/// How long the blocking process holds its worker, and how often.
const BLOCK_FOR: Duration = Duration::from_millis(200);
const BLOCK_EVERY: Duration = Duration::from_millis(1500);

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:6669".to_owned());
    let seconds: Option<u64> = args.next().map(|s| s.parse().expect("seconds to run"));
    let rt = csp::Runtime::builder()
        .worker_threads(2)
        .console(addr)
        .build()
        .expect("failed to build the runtime");
    rt.block_on(async {
        csp::spawn(dinner());
        csp::spawn(pipeline());
        csp::spawn(blocker());
        clerks();
        match seconds {
            Some(s) => csp::sleep(Duration::from_secs(s)).await,
            None => std::future::pending().await,
        }
    });
    rt.shutdown_timeout(Duration::from_millis(100));
}

/// Philosophers who think and eat forever, seated by a butler who lets four sit at once.
async fn dinner() {
    let (sit, sit_requests) = csp::channel::<()>();
    let (stand, stand_requests) = csp::channel::<()>();
    csp::spawn(butler(sit_requests, stand_requests));
    let forks: Vec<(Sender<()>, Receiver<()>)> =
        (0..PHILOSOPHERS).map(|_| csp::bounded(1)).collect();
    for (tx, _) in &forks {
        tx.try_send(()).expect("a fork on the table");
    }
    for i in 0..PHILOSOPHERS {
        let left = forks[i].clone();
        let right = forks[(i + 1) % PHILOSOPHERS].clone();
        csp::spawn(philosopher(i, left, right, sit.clone(), stand.clone()));
    }
}

async fn butler(sit_requests: Receiver<()>, stand_requests: Receiver<()>) {
    let mut seated = 0;
    loop {
        csp::alt! {
            recv(sit_requests) -> r if seated < PHILOSOPHERS - 1 => match r {
                Ok(()) => seated += 1,
                Err(_) => return,
            },
            recv(stand_requests) -> r => match r {
                Ok(()) => seated -= 1,
                Err(_) => return,
            },
        }
    }
}

async fn philosopher(
    i: usize,
    left: (Sender<()>, Receiver<()>),
    right: (Sender<()>, Receiver<()>),
    sit: Sender<()>,
    stand: Sender<()>,
) {
    let think = Duration::from_millis(30 + 7 * i as u64);
    loop {
        csp::sleep(think).await;
        if sit.send(()).await.is_err() {
            return;
        }
        let _ = left.1.recv().await;
        let _ = right.1.recv().await;
        csp::sleep(Duration::from_millis(20)).await; // eating
        let _ = left.0.send(()).await;
        let _ = right.0.send(()).await;
        let _ = stand.send(()).await;
    }
}

/// Numbers, squared, summed: three processes in a row.
async fn pipeline() {
    let (numbers, squarer_in) = csp::channel::<u64>();
    let (squares, summer_in) = csp::bounded::<u64>(4);
    csp::spawn(async move {
        let ticks = csp::tick(Duration::from_millis(10));
        let mut n = 0;
        while ticks.recv().await.is_ok() {
            n += 1;
            if numbers.send(n).await.is_err() {
                return;
            }
        }
    });
    csp::spawn(async move {
        while let Ok(n) = squarer_in.recv().await {
            if squares.send(n * n).await.is_err() {
                return;
            }
        }
    });
    let mut sum = 0u64;
    while let Ok(square) = summer_in.recv().await {
        sum = sum.wrapping_add(square);
    }
}

/// Holds its worker in a blocking call now and then: what the console warns about.
async fn blocker() {
    loop {
        csp::sleep(BLOCK_EVERY).await;
        std::thread::sleep(BLOCK_FOR); // wrong in a process: use spawn_blocking
    }
}

/// Two clerks who greet each other once, then each waits for the other to speak again:
/// a deadlock of two, drawn as a cycle in the wait graph.
fn clerks() {
    let (to_ann, ann_inbox) = csp::channel::<&str>();
    let (to_bo, bo_inbox) = csp::channel::<&str>();
    csp::spawn(async move {
        let _ = to_bo.send("hello").await;
        let _ = ann_inbox.recv().await;
        let _ = ann_inbox.recv().await; // Bo never speaks twice
        drop(to_bo);
    });
    csp::spawn(async move {
        let _ = bo_inbox.recv().await;
        let _ = to_ann.send("hello back").await;
        let _ = bo_inbox.recv().await; // nor does Ann
        drop(to_ann);
    });
}
