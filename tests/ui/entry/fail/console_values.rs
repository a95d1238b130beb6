#[csp::main(console = 6669)]
async fn a_number() {}

#[csp::main(console = "")]
async fn empty() {}

#[csp::main(console)]
async fn bare() {}

#[csp::main(console = "127.0.0.1:1", console = "127.0.0.1:2")]
async fn twice() {}

fn main() {}
