async fn f(token: csp::CancellationToken) {
    csp::alt! {
        cancelled(token) -> _why => {}
    }
}

fn main() {}
