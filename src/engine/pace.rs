//! Waiting until a moment, precisely enough for open-loop schedules and think times.
//!
//! Client threads lower their timer slack to 1 µs (Linux), so `nanosleep` wakes within
//! microseconds instead of the default 50 µs; the last few microseconds are spun.

use std::time::Duration;

// The hot loop's clock (the CPU's time-stamp counter): schedules and waits use one clock,
// so they cannot drift apart.
use quanta::Instant;

/// Below this, spinning is cheaper and more precise than asking the kernel to wake us.
const SPIN_BELOW: Duration = Duration::from_micros(20);

/// Make this thread's sleeps precise (Linux timer slack of 1 µs). Harmless elsewhere.
pub fn precise_timers_for_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and only affects the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0);
    }
}

/// Block this thread until `deadline`.
pub fn sleep_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > SPIN_BELOW {
            std::thread::sleep(left - SPIN_BELOW / 2);
        } else {
            std::hint::spin_loop();
        }
    }
}
