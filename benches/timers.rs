//! csp's timers against tokio's on the timer workloads of `workloads.rs`: one group per
//! workload, with a `csp` and a `tokio` function each, both runtimes built once with the
//! same number of worker threads. Throughput is in sleeps. The `vs_tokio` example also
//! reports the lateness of a 1 ms sleep on an idle runtime.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/workloads.rs"]
mod workloads;

use workloads::TIMER_WORKLOADS;

fn timers(c: &mut Criterion) {
    workloads::bench_groups(c, TIMER_WORKLOADS);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = timers
}
criterion_main!(benches);
