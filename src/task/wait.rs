//! What a blocked process waits on, packed into the header's 8-byte wait word when it
//! blocks (Relaxed: only read for dumps), and turned into text only by
//! `Runtime::processes()`.

use std::fmt;

/// A csp wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitOn {
    Recv { channel: u64 },
    Send { channel: u64 },
    Closed { channel: u64 },
    Alt { channels: u64 },
    Join { process: u64 },
}

const KIND_SHIFT: u32 = 56;
const PAYLOAD: u64 = (1 << KIND_SHIFT) - 1;

impl WaitOn {
    pub(crate) fn encode(self) -> u64 {
        let (kind, payload) = match self {
            WaitOn::Recv { channel } => (1, channel),
            WaitOn::Send { channel } => (2, channel),
            WaitOn::Closed { channel } => (3, channel),
            WaitOn::Alt { channels } => (4, channels),
            WaitOn::Join { process } => (5, process),
        };
        (kind << KIND_SHIFT) | (payload & PAYLOAD)
    }

    /// `None` for 0 (nothing recorded) or an unknown kind.
    pub(crate) fn decode(word: u64) -> Option<WaitOn> {
        let payload = word & PAYLOAD;
        Some(match word >> KIND_SHIFT {
            1 => WaitOn::Recv { channel: payload },
            2 => WaitOn::Send { channel: payload },
            3 => WaitOn::Closed { channel: payload },
            4 => WaitOn::Alt { channels: payload },
            5 => WaitOn::Join { process: payload },
            _ => return None,
        })
    }
}

impl fmt::Display for WaitOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitOn::Recv { channel } => write!(f, "recv on channel #{channel}"),
            WaitOn::Send { channel } => write!(f, "send on channel #{channel}"),
            WaitOn::Closed { channel } => write!(f, "close of channel #{channel}"),
            WaitOn::Alt { channels: 1 } => write!(f, "alt over 1 channel"),
            WaitOn::Alt { channels } => write!(f, "alt over {channels} channels"),
            WaitOn::Join { process } => write!(f, "join of process #{process}"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_well() {
        for wait in [
            WaitOn::Recv { channel: 7 },
            WaitOn::Send { channel: 4 },
            WaitOn::Closed { channel: 1 << 40 },
            WaitOn::Alt { channels: 2 },
            WaitOn::Join { process: 9 },
        ] {
            assert_eq!(WaitOn::decode(wait.encode()), Some(wait));
        }
        assert_eq!(WaitOn::decode(0), None);
        assert_eq!(
            WaitOn::Recv { channel: 7 }.to_string(),
            "recv on channel #7"
        );
        assert_eq!(
            WaitOn::Join { process: 9 }.to_string(),
            "join of process #9"
        );
    }
}
