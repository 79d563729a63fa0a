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

/// Calibrate the hot loop's clock now: its first read in a process spins for up to 200 ms
/// against the kernel's clock, which must happen before a run starts, not in its first
/// operations or between the two reads of [`from_std`].
pub fn calibrate() {
    let _ = Instant::now();
}

/// `t`, an instant of the kernel's monotonic clock, as an instant of the hot loop's clock.
/// Every thread that places a run's intervals on the hot clock converts the run's start
/// with this, so they agree on its boundaries; the hot clock is read first, so a
/// calibration cannot fall between the two reads.
pub fn from_std(t: std::time::Instant) -> Instant {
    let hot = Instant::now();
    let now = std::time::Instant::now();
    match t.checked_duration_since(now) {
        Some(ahead) => hot + ahead,
        None => hot.checked_sub(now - t).unwrap_or(hot),
    }
}

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
