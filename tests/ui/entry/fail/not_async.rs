#[csp::main]
fn main() {}

#[csp::test]
fn not_async_test() {}
