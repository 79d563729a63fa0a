#!/usr/bin/env python3
"""Where a PostgreSQL round trip's time goes, from a loopback capture (scripts/bench-turnaround.sh).

  turnaround.py PCAP PORT SKIP WINDOW
      Reads a tcpdump capture (`-w`, Ethernet framing as on Linux's lo) of the connections to
      PORT. Of each client's requests that start between SKIP and SKIP + WINDOW seconds after
      the first packet, it times the server (the request's first packet to the first reply
      packet after it) and the client (that reply to the client's next request), and prints
      one JSON line: per statement, the count and the mean and median of both, in
      microseconds, and the totals over all statements.

A statement is named by its text: a simple Query's SQL, or for Bind the SQL of the prepared
statement it names (from the Parse messages seen since the capture began, so start the
capture before the client connects). Both clients send one statement per request and wait
for its reply (pgbench -M prepared, loadrig's closed loop), which this assumes.
"""

import json
import statistics
import struct
import sys
from collections import defaultdict


def packets(path):
    """(seconds, source port, destination port, payload) of each TCP packet with a payload."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = struct.unpack("<I", head[:4])[0]
        endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
        if struct.unpack(endian + "I", head[20:24])[0] != 1:
            sys.exit("turnaround.py: expected Ethernet framing (tcpdump -i lo)")
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, _ = struct.unpack(endian + "IIII", rec)
            data = f.read(incl)
            if len(data) < 34 or data[12:14] != b"\x08\x00":  # IPv4: the script uses 127.0.0.1
                continue
            ihl = (data[14] & 0x0F) * 4
            if data[23] != 6:  # TCP
                continue
            tcp = 14 + ihl
            sport, dport = struct.unpack(">HH", data[tcp : tcp + 4])
            payload = data[tcp + (data[tcp + 12] >> 4) * 4 :]
            if payload:
                yield sec + frac / (1e9 if nano else 1e6), sport, dport, payload


def cstring(buf, at):
    end = buf.find(b"\0", at)
    if end < 0:
        return "", len(buf)
    return buf[at:end].decode("utf-8", "replace"), end + 1


def label(payload, prepared):
    """The statement a request runs, learning the Parse messages it carries on the way."""
    at, name = 0, None
    while at + 5 <= len(payload):
        kind = payload[at : at + 1]
        size = struct.unpack(">I", payload[at + 1 : at + 5])[0]
        body = payload[at + 5 : at + 1 + size]
        if kind == b"Q":
            name = cstring(body, 0)[0]
        elif kind == b"P":
            stmt, rest = cstring(body, 0)
            prepared[stmt] = cstring(body, rest)[0]
        elif kind == b"B" and name is None:
            stmt = cstring(body, cstring(body, 0)[1])[0]
            name = prepared.get(stmt, "prepared " + stmt)
        at += 1 + size
    return " ".join(name.split()) if name else None


def in_turn(seen, follows):
    """The statements in the order a transaction sends them: from BEGIN, each one's most
    frequent successor (the order first seen where there is no BEGIN)."""
    start = next((w for w in seen if w.upper().startswith("BEGIN")), None)
    if start is None:
        return seen
    ordered = [start]
    while follows[ordered[-1]]:
        nxt = max(follows[ordered[-1]], key=follows[ordered[-1]].get)
        if nxt in ordered:
            break
        ordered.append(nxt)
    return [w for w in ordered if w in seen] + [w for w in seen if w not in ordered]


def main():
    path, port, skip, window = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    conns = defaultdict(list)  # client port -> [(seconds, 'q' or 'r', statement)]
    prepared = defaultdict(dict)
    first = None
    for ts, sport, dport, payload in packets(path):
        first = ts if first is None else first
        if dport == port:
            conns[sport].append((ts, "q", label(payload, prepared[sport])))
        elif sport == port:
            conns[dport].append((ts, "r", None))
    server, client, order = defaultdict(list), defaultdict(list), []
    follows = defaultdict(lambda: defaultdict(int))  # statement -> the next one's counts
    for events in conns.values():
        asked = [e[2] for e in events if e[1] == "q" and e[2] is not None]
        for a, b in zip(asked, asked[1:]):
            follows[a][b] += 1
        for i, (ts, kind, what) in enumerate(events):
            if kind != "q" or what is None or not first + skip <= ts < first + skip + window:
                continue
            reply = next((e for e in events[i + 1 :] if e[1] == "r"), None)
            if reply is None:
                continue
            nxt = next((e for e in events[i + 1 :] if e[1] == "q"), None)
            if what not in server:
                order.append(what)
            server[what].append(reply[0] - ts)
            if nxt is not None and nxt[0] >= reply[0]:
                client[what].append(nxt[0] - reply[0])

    order = in_turn(order, follows)

    def stats(xs):
        us = [x * 1e6 for x in xs]
        return {"n": len(us), "mean": round(statistics.mean(us), 1), "p50": round(statistics.median(us), 1)} if us else None

    every_server = [x for w in order for x in server[w]]
    every_client = [x for w in order for x in client[w]]
    print(
        json.dumps(
            {
                "statements": [{"sql": w, "server": stats(server[w]), "client": stats(client[w])} for w in order],
                "server": stats(every_server),
                "client": stats(every_client),
            }
        )
    )


if __name__ == "__main__":
    main()
