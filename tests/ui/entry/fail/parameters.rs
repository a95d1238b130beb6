#[csp::main]
async fn main(args: Vec<String>) {
    let _ = args;
}

#[csp::test]
async fn test_with_parameters(n: u32, m: u32) {
    let _ = n + m;
}
