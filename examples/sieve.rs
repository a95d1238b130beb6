//! The concurrent prime sieve, as in Go's classic: a chain of processes, each a filter.
//!
//! A producer process sends 2, 3, 4, ... down a channel. Whatever comes out of the end
//! of the chain is a prime, since no smaller prime's filter dropped it; each prime found
//! adds a filter process to the end of the chain, which drops that prime's multiples.
//! When enough primes are found, dropping the end of the chain ends every process in it.
//!
//! ```text
//! cargo run --example sieve
//! ```

use csp::{Receiver, pipe};

/// Primes to find.
const PRIMES: usize = 100;

#[csp::main]
async fn main() {
    let primes = primes(PRIMES).await;
    let last = primes.last().expect("at least one prime");
    println!("sieve: the first {PRIMES} primes end with {last}");
}

/// The first `n` primes.
pub async fn primes(n: usize) -> Vec<u64> {
    let mut chain = candidates();
    let mut primes = Vec::with_capacity(n);
    while primes.len() < n {
        let prime = chain.recv().await.expect("the candidates never run out");
        primes.push(prime);
        chain = pipe::filter(chain, move |candidate| candidate % prime != 0);
    }
    primes
    // `chain` drops here: its last filter ends, which ends the one before it, and so on
    // up to the producer.
}

/// The numbers from 2 on, sent by a process of their own until nobody listens.
fn candidates() -> Receiver<u64> {
    pipe::producer(|tx| async move {
        for candidate in 2.. {
            if tx.send(candidate).await.is_err() {
                return;
            }
        }
    })
}
