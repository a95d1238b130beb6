//! Skynet: a tree of 1,111,111 processes, built and torn down.
//!
//! The root process covers leaves 0 to 999,999. Every process covering more than one leaf
//! spawns ten children, each covering a tenth of its leaves, and sums what they send it
//! on its channel; a process covering one leaf sends that leaf's number. Each sends its
//! sum to its parent and ends, so the root ends up with 0 + 1 + ... + 999,999 =
//! 499,999,500,000, after 1,111,111 processes.
//!
//! ```text
//! cargo run --release --example skynet
//! ```

use csp::Sender;

/// Leaves of the tree.
const LEAVES: u64 = 1_000_000;

/// Children of each inner process.
const FANOUT: u64 = 10;

#[csp::main]
async fn main() {
    let sum = skynet(LEAVES).await;
    println!("skynet: the {LEAVES} leaves sum to {sum}");
}

/// The sum of the leaf numbers `0..leaves` of a tree of processes; `leaves` must be a
/// power of ten.
pub async fn skynet(leaves: u64) -> u64 {
    assert!(
        leaves > 0 && FANOUT.pow(leaves.ilog(FANOUT)) == leaves,
        "the tree has a power of {FANOUT} leaves, not {leaves}"
    );
    let (tx, rx) = csp::bounded(1);
    spawn_node(tx, 0, leaves);
    rx.recv().await.expect("the root of the tree sends its sum")
}

/// Spawns the process covering leaves `first..first + leaves`, which sends their sum to
/// `parent`.
fn spawn_node(parent: Sender<u64>, first: u64, leaves: u64) {
    csp::spawn(async move {
        let sum = if leaves == 1 {
            first
        } else {
            // Room for every child's sum, so no child waits to send it.
            let (tx, rx) = csp::bounded(FANOUT as usize);
            let per_child = leaves / FANOUT;
            for child in 0..FANOUT {
                spawn_node(tx.clone(), first + child * per_child, per_child);
            }
            drop(tx); // the channel closes once every child has sent its sum
            let mut sum = 0;
            while let Ok(child_sum) = rx.recv().await {
                sum += child_sum;
            }
            sum
        };
        parent
            .send(sum)
            .await
            .expect("the parent waits for the sum");
    });
}
