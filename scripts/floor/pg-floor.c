// The floor for client CPU per PostgreSQL primary-key select on loopback: N connections on
// one thread, one query in flight on each, the extended protocol written by hand on the
// socket (Bind + Execute + Sync of a statement prepared once, as pgbench -M prepared does),
// and nothing read from a reply but "ReadyForQuery arrived". libpq only opens the
// connections (SCRAM) and prepares the statement. What any client must do; nothing else.
// Build: mkdir -p target/peers/floor && gcc -O2 scripts/floor/pg-floor.c -o target/peers/floor/pg-floor -I/usr/include/postgresql -lpq
// Run:   eval "$(scripts/services.sh env)"; target/peers/floor/pg-floor "$LOADRIG_PG_URL" 4 10
//        (pgbench_accounts from `pgbench -i -s 10`, as scripts/bench-peers.sh makes it)
// Prints ops/s and the process's own user and system CPU per operation (getrusage).
#include <libpq-fe.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

#define ROWS 1000000 /* pgbench scale 10 */

struct conn {
    int fd;
    char in[8192];
    size_t have;
};

static void put32(char *p, uint32_t v) {
    v = htonl(v);
    memcpy(p, &v, 4);
}

static void put16(char *p, uint16_t v) {
    v = htons(v);
    memcpy(p, &v, 2);
}

// Bind (unnamed portal, statement "s", one text parameter), Execute (all rows), Sync.
static void send_query(struct conn *c) {
    char aid[16], msg[128], *p = msg;
    int alen = snprintf(aid, sizeof aid, "%d", 1 + rand() % ROWS);
    uint32_t blen = 4 + 1 + 2 + 2 + 2 + 4 + alen + 2;
    *p++ = 'B';
    put32(p, blen), p += 4;
    *p++ = 0;                  /* portal "" */
    *p++ = 's', *p++ = 0;      /* statement "s" */
    put16(p, 0), p += 2;       /* parameter formats: all text */
    put16(p, 1), p += 2;       /* one parameter */
    put32(p, alen), p += 4;
    memcpy(p, aid, alen), p += alen;
    put16(p, 0), p += 2;       /* result formats: all text */
    *p++ = 'E';
    put32(p, 9), p += 4;
    *p++ = 0;                  /* portal "" */
    put32(p, 0), p += 4;       /* no row limit */
    *p++ = 'S';
    put32(p, 4), p += 4;
    if (send(c->fd, msg, p - msg, 0) != p - msg) {
        perror("send");
        exit(1);
    }
}

// True when the bytes read so far end with a complete ReadyForQuery ('Z', length 5).
static int reply_done(struct conn *c) {
    return c->have >= 6 && c->in[c->have - 6] == 'Z' && c->in[c->have - 2] == 5 &&
           c->in[c->have - 5] == 0 && c->in[c->have - 4] == 0 && c->in[c->have - 3] == 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s CONNINFO CONNECTIONS SECONDS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    double secs = atof(argv[3]);
    struct conn *cs = calloc(n, sizeof *cs);
    PGconn **pg = calloc(n, sizeof *pg);
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        pg[i] = PQconnectdb(argv[1]);
        if (PQstatus(pg[i]) != CONNECTION_OK) {
            fprintf(stderr, "connect: %s", PQerrorMessage(pg[i]));
            return 1;
        }
        PGresult *r = PQprepare(pg[i], "s", "SELECT abalance FROM pgbench_accounts WHERE aid = $1", 1, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "prepare: %s", PQerrorMessage(pg[i]));
            return 1;
        }
        PQclear(r);
        cs[i].fd = PQsocket(pg[i]);
        int one = 1;
        setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fcntl(cs[i].fd, F_SETFL, O_NONBLOCK);
        struct epoll_event e = {.events = EPOLLIN | EPOLLET, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &e);
    }
    long ops = 0;
    struct floor_start start = floor_begin();
    for (int i = 0; i < n; i++) send_query(&cs[i]);
    struct epoll_event ev[256];
    while (now() - start.t < secs) {
        int k = epoll_wait(ep, ev, 256, -1);
        for (int j = 0; j < k; j++) {
            struct conn *c = &cs[ev[j].data.u32];
            for (;;) { /* edge-triggered: read until EAGAIN */
                ssize_t m = recv(c->fd, c->in + c->have, sizeof c->in - c->have, 0);
                if (m < 0 && errno == EAGAIN) break;
                if (m <= 0) {
                    perror("recv");
                    exit(1);
                }
                c->have += m;
                if (reply_done(c)) {
                    ops++;
                    c->have = 0;
                    send_query(c);
                } else if (c->have == sizeof c->in) {
                    fprintf(stderr, "reply too long\n");
                    exit(1);
                }
            }
        }
    }
    floor_report("pg-floor", n, ops, start);
    for (int i = 0; i < n; i++) PQfinish(pg[i]);
    return 0;
}
