//! Choice: the claim flag shared by every arm of one choice, the interface each arm
//! implements, and the one-arm choice behind the plain channel futures.

pub(crate) mod claim;
pub(crate) mod operation;
pub(crate) mod single;
