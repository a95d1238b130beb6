//! Thread-ring, from the Computer Language Benchmarks Game: 503 processes in a ring pass
//! a token around.
//!
//! Process `i` (numbered from 1) receives on its own rendezvous channel and sends to the
//! next one's, process 503 to process 1's. Process 1 is handed the token `N`; each
//! process that receives a token `t > 0` passes on `t - 1`. The one that receives 0 holds
//! the token at the end, after `N` passes: process `N % 503 + 1`. It stops, and the ring
//! winds down: its successor's channel closes, so the successor stops too, and so on
//! round.
//!
//! ```text
//! cargo run --release --example ring            # 1,000,000 passes
//! cargo run --release --example ring -- 50000000
//! ```

use csp::{Receiver, Sender};

/// Processes in the ring.
const PROCESSES: usize = 503;

/// Passes of the token unless the command line says otherwise.
const PASSES: u64 = 1_000_000;

#[csp::main]
async fn main() {
    let passes = match std::env::args().nth(1) {
        Some(arg) => arg.parse().expect("the number of passes, a whole number"),
        None => PASSES,
    };
    let holder = ring(PROCESSES, passes).await;
    println!(
        "ring: after {passes} passes around {PROCESSES} processes, process {holder} holds the token"
    );
}

/// Passes a token `passes` times around a ring of `processes` processes and returns the
/// number (from 1) of the process holding it at the end.
pub async fn ring(processes: usize, passes: u64) -> usize {
    let (mut outboxes, inboxes): (Vec<_>, Vec<_>) = (0..processes).map(|_| csp::channel()).unzip();
    let first = outboxes[0].clone();
    outboxes.rotate_left(1); // process `i` sends to process `i + 1`'s inbox
    let ring: Vec<_> = inboxes
        .into_iter()
        .zip(outboxes)
        .enumerate()
        .map(|(i, (inbox, next))| csp::spawn(pass_on(i + 1, inbox, next)))
        .collect();

    first.send(passes).await.expect("process 1 is listening");
    drop(first);

    let mut holder = None;
    for process in ring {
        if let Some(number) = process.await.expect("a process of the ring failed") {
            holder = Some(number);
        }
    }
    holder.expect("one process holds the token")
}

/// Process `number` of the ring: passes each token on, less one, until it receives 0
/// (it then returns its number) or its inbox closes.
async fn pass_on(number: usize, inbox: Receiver<u64>, next: Sender<u64>) -> Option<usize> {
    while let Ok(token) = inbox.recv().await {
        if token == 0 {
            return Some(number);
        }
        if next.send(token - 1).await.is_err() {
            break;
        }
    }
    None
}
