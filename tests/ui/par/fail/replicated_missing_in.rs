async fn f(xs: Vec<u8>) {
    let _ = csp::par!(for x of xs => async move { x });
}

fn main() {}
