//! Emulators: small stand-ins for the external systems a workload talks to besides its
//! target (ECperf's supplier). They serve on loopback, on their own thread and runtime,
//! so a study starts them in-process and `loadrig emulate` runs them alone.

pub mod supplier;
