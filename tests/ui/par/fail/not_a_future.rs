async fn f() {
    let _ = csp::par!(async { 1 }, 2);
}

fn main() {}
