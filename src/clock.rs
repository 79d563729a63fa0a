//! The hot loop's clock, and waiting until a moment on it precisely enough for open-loop
//! schedules, think times and simulated latencies. Shared by the engine and the targets.
//!
//! Client threads lower their timer slack to 1 µs (Linux), so `nanosleep` wakes within
//! microseconds instead of the default 50 µs; the last few microseconds are spun.

use std::time::Duration;

/// The hot loop's clock: quanta reads the CPU's time-stamp counter (a few ns) where the
/// kernel's clock_gettime costs 20-30 ns on this kind of VM; calibrated once per process.
/// Schedules, waits and simulated latencies use this one clock, so they cannot drift apart.
pub use quanta::Instant;

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
