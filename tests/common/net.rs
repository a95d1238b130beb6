//! Helpers of the socket tests (`tests/net*.rs`): one test at a time, with a count of
//! this process's open file descriptors before and after, and the limit on them.

use std::sync::{Mutex, MutexGuard};

use super::wait_until;

/// Held by the socket test running now: file descriptors are counted per process.
static SERIAL: Mutex<()> = Mutex::new(());

/// This process's open file descriptors (the entries of `/proc/self/fd`, less the one
/// the listing itself opens).
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("list /proc/self/fd")
        .count()
        .saturating_sub(1)
}

/// A socket test's file-descriptor account: made first, checked last.
pub struct Fds {
    _serial: MutexGuard<'static, ()>,
    before: usize,
}

impl Fds {
    /// Waits for the socket tests before this one to end, then counts.
    pub fn start() -> Fds {
        let serial = SERIAL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Fds {
            _serial: serial,
            before: open_fds(),
        }
    }

    /// Waits (bounded) until every descriptor opened since `start` is closed again: the
    /// sockets, and the runtimes' I/O drivers.
    #[track_caller]
    pub fn assert_none_left(self) {
        let before = self.before;
        let mut now = 0;
        wait_until(10, "no file descriptor is left open", || {
            now = open_fds();
            now <= before
        });
        drop(self);
        let _ = now;
    }
}

/// Raises this process's soft limit on open files to `wanted` (or the hard limit, if
/// lower); the limit now.
pub fn raise_fd_limit(wanted: u64) -> u64 {
    // SAFETY: getrlimit and setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
        limit.rlim_cur
    }
}

/// Lowers this process's soft limit on open files to `limit`.
pub fn lower_fd_limit(limit: u64) {
    // SAFETY: as in `raise_fd_limit`.
    unsafe {
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut current), 0);
        current.rlim_cur = limit;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &current), 0);
    }
}

/// CPU time (user and system) process `pid` has used, in clock ticks (`/proc/PID/stat`).
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read the stat");
    // The command name may hold spaces: the fields after it follow its closing paren.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}
