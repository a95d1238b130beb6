// `#[csp::main(worker_threads = N)]` on a `main` returning `()`, with a detached process
// that never ends: the runtime's shutdown does not wait for it.
#[csp::main(worker_threads = 2)]
async fn main() {
    csp::spawn(std::future::pending::<()>());
    let (a, b) = csp::par!(async { 1 }, async { 2 });
    assert_eq!(a + b, 3);
}
