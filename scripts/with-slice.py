#!/usr/bin/env python3
"""Run a command with the CPU time slice loadrig's client threads ask for, so a peer
benchmark client can be scheduled as loadrig is (Linux 6.12+, EEVDF custom slices).

Usage: scripts/with-slice.py SLICE COMMAND [ARGS...]   (SLICE like 300us or 1ms)

The slice is set on this process with sched_setattr (SCHED_OTHER, sched_runtime) and is
inherited by COMMAND and every thread it starts. Exits 2 when the kernel does not take it.
"""
import ctypes
import os
import re
import struct
import sys

SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    m = re.fullmatch(r"(\d+)(us|ms)", sys.argv[1])
    if not m:
        print(f"with-slice: '{sys.argv[1]}': expected a slice like 300us or 1ms", file=sys.stderr)
        sys.exit(2)
    ns = int(m[1]) * (1_000 if m[2] == "us" else 1_000_000)
    call = SYS_SCHED_SETATTR.get(os.uname().machine)
    libc = ctypes.CDLL(None, use_errno=True)
    # struct sched_attr, first version (48 bytes): size, policy, flags, nice, priority,
    # runtime, deadline, period.
    attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQ", 48, 0, 0, os.nice(0), 0, ns, 0, 0), 48)
    if call is None or libc.syscall(call, 0, attr, 0) != 0:
        err = os.strerror(ctypes.get_errno()) if call else "unknown architecture"
        print(f"with-slice: the kernel did not take a {sys.argv[1]} slice ({err})", file=sys.stderr)
        sys.exit(2)
    os.execvp(sys.argv[2], sys.argv[2:])


main()
