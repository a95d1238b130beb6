async fn f() {
    let _ = csp::par!(async { 1 } async { 2 });
}

fn main() {}
