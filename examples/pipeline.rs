//! `csp::pipe` in action: two pipelines of processes, merged into one.
//!
//! ```text
//!  numbers ─▶ map(square) ─▶ filter(even) ──┐
//!                                           ├─▶ merge ─▶ buffer(16) ─▶ sum
//!  numbers ─▶ filter(odd) ─▶ map(cube) ─────┘
//! ```
//!
//! Every box is a process, every arrow a channel. Each stage ends once its input is
//! closed and drained, then closes its output, so the end of the numbers flows down to
//! the sum.
//!
//! ```text
//! cargo run --example pipeline
//! ```

use csp::{Receiver, pipe};
use futures::StreamExt;

/// The numbers run from 1 to this.
const N: u64 = 1000;

#[csp::main]
async fn main() {
    let sum = even_squares_and_odd_cubes(N).await;
    println!("pipeline: the even squares and odd cubes of 1..={N} sum to {sum}");
}

/// The sum of the squares of the even numbers and the cubes of the odd numbers in
/// `1..=n`.
pub async fn even_squares_and_odd_cubes(n: u64) -> u64 {
    let even_squares = pipe::filter(pipe::map(numbers(n), |x| x * x), |x| x % 2 == 0);
    let odd_cubes = pipe::map(pipe::filter(numbers(n), |x| x % 2 == 1), |x| x * x * x);
    let all = pipe::buffer(pipe::merge(vec![even_squares, odd_cubes]), 16);
    // A `Receiver` is a `Stream`, so the tail of a pipeline takes stream combinators.
    all.fold(0, |sum, x| async move { sum + x }).await
}

/// The numbers `1..=n`, from a process of their own.
fn numbers(n: u64) -> Receiver<u64> {
    pipe::producer(move |tx| async move {
        for x in 1..=n {
            if tx.send(x).await.is_err() {
                return;
            }
        }
    })
}
