async fn f() {
    let _ = csp::par!(async { 1 }, async {
        let shared = std::rc::Rc::new(2);
        csp::yield_now().await;
        *shared
    });
}

fn main() {}
