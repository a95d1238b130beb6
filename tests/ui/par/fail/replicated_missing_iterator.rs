async fn f() {
    let _ = csp::par!(for x in => async move { x });
}

fn main() {}
