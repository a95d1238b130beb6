#[csp::main]
struct Main;

fn main() {}
