//! Enough file descriptors for the run's sessions, found before anything connects: a run
//! of 10,000 clients under the common default of 1,024 would otherwise start with a flood
//! of connect errors that look like the server's.

use crate::error::InputError;

/// Descriptors the process holds besides its sessions: stdio, the result and stream files,
/// the runtimes' epoll and event descriptors, the metrics listener.
const BASE: u64 = 64;

/// Raise the soft `RLIMIT_NOFILE` to the hard limit when `sessions` × `per_session` (plus
/// the process's own) need more than the soft limit allows; when even the hard limit is too
/// low, an input error with the numbers and the fix.
pub fn ensure(sessions: usize, per_session: usize) -> Result<(), InputError> {
    let need = BASE + (sessions * per_session) as u64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(()); // Unknown: the connects will say what goes wrong.
    }
    if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= need {
        return Ok(());
    }
    if limit.rlim_max != libc::RLIM_INFINITY && limit.rlim_max < need {
        return Err(InputError::new(format!(
            "{sessions} client sessions need about {need} open files, and this process may \
             open at most {} (its hard limit)",
            limit.rlim_max
        ))
        .help(format!(
            "raise the limit before the run (ulimit -n {need}, as root or in \
             /etc/security/limits.conf), or run fewer clients"
        )));
    }
    let raised = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit only reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(InputError::new(format!(
            "{sessions} client sessions need about {need} open files; the soft limit is {} \
             and raising it failed: {}",
            limit.rlim_cur,
            std::io::Error::last_os_error()
        ))
        .help(format!("raise it before the run: ulimit -n {need}")));
    }
    Ok(())
}
