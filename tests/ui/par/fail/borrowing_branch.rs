async fn f() {
    let name = String::from("borrowed");
    let _ = csp::par!(async { name.len() });
}

fn main() {}
