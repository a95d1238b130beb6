async fn f() {
    let _ = csp::par!(for x in 0..3 =>);
}

fn main() {}
