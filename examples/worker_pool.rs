//! A pool of workers that fails fast: a feeder hands items to four workers over a
//! bounded channel, each worker checks its items, and the first item that fails the
//! check stops everything, the feeder and the other workers, at once.
//!
//! It is two nested `try_par!`s: the first `Err` of any branch aborts the others (their
//! futures are dropped) and comes back once they have all ended, so the failing run
//! returns within milliseconds of the failure with no process left, where a pool that
//! waited for every worker would first work through the whole queue.
//!
//! ```text
//! cargo run --example worker_pool
//! ```

use std::time::{Duration, Instant};

/// How long the check of one item takes.
const WORK: Duration = Duration::from_millis(1);

/// Checks `item`: its weight, or why it is malformed.
async fn check(item: u32, bad: Option<u32>) -> Result<u64, String> {
    csp::sleep(WORK).await; // the work
    match bad {
        Some(bad) if bad == item => Err(format!("item {item} is malformed")),
        _ => Ok(u64::from(item)),
    }
}

/// Runs items `0..items` through `workers` workers: the sum of their weights, or the
/// first failure (item `bad`, if any).
pub async fn weigh_all(items: u32, workers: usize, bad: Option<u32>) -> Result<u64, String> {
    let (queue, jobs) = csp::bounded::<u32>(workers);
    let feed = async move {
        for item in 0..items {
            queue.send(item).await.map_err(|_| "the workers are gone")?;
        }
        Ok::<_, String>(())
    };
    let work = async move {
        csp::try_par!(for _ in 0..workers => {
            let jobs = jobs.clone();
            async move {
                let mut weight = 0;
                while let Ok(item) = jobs.recv().await {
                    weight += check(item, bad).await?;
                }
                Ok::<_, String>(weight)
            }
        })
    };
    let ((), weights) = csp::try_par!(feed, work)?;
    Ok(weights.iter().sum())
}

#[csp::main]
async fn main() {
    let handle = csp::Handle::current();
    let start = Instant::now();
    let all = weigh_all(400, 4, None).await;
    println!("400 good items: {all:?} in {:?}", start.elapsed());

    let start = Instant::now();
    let failed = weigh_all(400, 4, Some(10)).await;
    println!(
        "item 10 malformed: {failed:?} in {:?}, {} processes left",
        start.elapsed(),
        handle.metrics().processes_alive
    );
}
