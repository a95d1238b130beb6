fn main() {
    let _ = csp::par!(async { 1 });
}
