//! The syntax of csp's macros: every documented form compiles, and malformed input fails
//! with an error pointing at the offending tokens. One test per macro family, each over
//! its own folder of cases.

#[test]
fn alt_syntax() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/alt/pass/*.rs");
    cases.compile_fail("tests/ui/alt/fail/*.rs");
}

#[test]
fn par_syntax() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/par/pass/*.rs");
    cases.compile_fail("tests/ui/par/fail/*.rs");
}

#[test]
fn entry_syntax() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/entry/pass/*.rs");
    cases.compile_fail("tests/ui/entry/fail/*.rs");
}
