// `console = "addr"` expands to `Builder::console`, which exists with or without the
// `console` feature (without it, building the runtime fails saying so).
#[csp::main(worker_threads = 1, console = "127.0.0.1:0")]
async fn serve() -> u8 {
    7
}

#[csp::test(console = "localhost:0")]
async fn a_test_with_a_console() {}

fn main() {
    let _: fn() -> u8 = serve;
}
