async fn f() {
    let _ = csp::par!(for x in 0..3 => async move { x }, async { 4 });
}

fn main() {}
