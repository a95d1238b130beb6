#[csp::test]
#[test]
async fn twice() {}

fn main() {}
