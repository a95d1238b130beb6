#[csp::main(4)]
async fn number() {}

#[csp::main(worker_threads = )]
async fn no_value() {}

#[csp::main(worker_threads: 2)]
async fn colon() {}

#[csp::main(runtime::worker_threads = 2)]
async fn path() {}

fn main() {}
