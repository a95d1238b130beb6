#[csp::test(worker_threads = 0)]
async fn zero() {}

#[csp::test(worker_threads = "2")]
async fn string() {}

#[csp::test(worker_threads = N)]
async fn constant() {}

#[csp::test(worker_threads = 2u8)]
async fn suffix() {}

#[csp::test(worker_threads)]
async fn bare() {}

#[csp::test(worker_threads = 1, worker_threads = 2)]
async fn twice() {}

const N: usize = 2;

fn main() {}
