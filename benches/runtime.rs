//! csp against tokio on the workloads of `workloads.rs`: one group per workload, with a
//! `csp` and a `tokio` function each, both runtimes built once with the same number of
//! worker threads. Criterion measures one function after the other; the `vs_tokio`
//! example alternates the two runtimes sample by sample instead.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/workloads.rs"]
mod workloads;

use workloads::WORKLOADS;

fn csp_vs_tokio(c: &mut Criterion) {
    workloads::bench_groups(c, WORKLOADS);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = csp_vs_tokio
}
criterion_main!(benches);
