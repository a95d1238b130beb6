//! `/api/processes`: the process table as JSON, one object per live process.
//!
//! ```text
//! [{"id":3,"spawned_at":"src/main.rs:12:5","state":"Sleeping",
//!   "waiting_on":"recv on channel #2","waiting_for_ms":1000,"group":null,
//!   "polls":17,"requeues":0,"busy_ms":0,"longest_poll_ms":0}]
//! ```

use std::fmt::Write;

use super::snapshot::Row;

/// The rows as a JSON array.
pub(super) fn processes(rows: &[Row]) -> String {
    let mut out = String::from("[");
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"id\":{},\"spawned_at\":{},\"state\":\"{:?}\",\"waiting_on\":{},\
             \"waiting_for_ms\":{},\"group\":{},\"polls\":{},\"requeues\":{},\
             \"busy_ms\":{},\"longest_poll_ms\":{}}}",
            row.id,
            string(&row.spawned_at.to_string()),
            row.state,
            row.waiting_on.as_deref().map_or("null".to_owned(), string),
            row.waiting_for
                .map_or("null".to_owned(), |d| d.as_millis().to_string()),
            row.group.map_or("null".to_owned(), |g| g.to_string()),
            row.polls,
            row.requeues,
            row.busy.as_millis(),
            row.longest_poll.as_millis(),
        );
    }
    out.push(']');
    out
}

/// `text` as a JSON string, quotes included.
pub(super) fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::string;

    #[test]
    fn strings_escape_quotes_backslashes_and_control_characters() {
        assert_eq!(string("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
    }
}
