//! The syntax of `alt!` and `prialt!`: every documented form compiles, and malformed
//! input fails with an error pointing at the offending tokens.

#[test]
fn alt_syntax() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
