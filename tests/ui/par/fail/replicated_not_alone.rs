async fn f() {
    let _ = csp::par!(async { 4 }, for x in 0..3 => async move { x });
}

fn main() {}
