#[csp::main(worker_threads = 0)]
fn main() {}
