//! csp's channels against tokio's `mpsc` on the channel workloads of `workloads.rs`: one
//! group per workload, with a `csp` and a `tokio` function each, both runtimes built once
//! with the same number of worker threads. Throughput is in messages (round trips for
//! `ping_pong`, hops for `ring`). Criterion measures one function after the other; the
//! `vs_tokio` example alternates the two runtimes sample by sample instead.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/workloads.rs"]
mod workloads;

use workloads::CHANNEL_WORKLOADS;

fn channels(c: &mut Criterion) {
    workloads::bench_groups(c, CHANNEL_WORKLOADS);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = channels
}
criterion_main!(benches);
