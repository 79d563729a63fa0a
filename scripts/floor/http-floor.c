#define _GNU_SOURCE /* strcasestr */
// The floor for client CPU per HTTP/1.1 GET on loopback: N keep-alive connections on one
// thread, one request in flight on each, the request written once and reused, a reply
// taken as complete when its header block and Content-Length bytes of body have arrived
// (the least parsing any HTTP client must do). A connection the server closes (nginx's
// keepalive_requests, 1,000 by default) is opened again, as wrk and loadrig do. Nothing
// recorded.
// Build: mkdir -p target/peers/floor && gcc -O2 scripts/floor/http-floor.c -o target/peers/floor/http-floor
// Run:   eval "$(scripts/services.sh env)"; target/peers/floor/http-floor "$LOADRIG_HTTP_PORT" /static/hello.txt 50 10
// Prints ops/s and the process's own user and system CPU per operation (getrusage).
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "floor.h"

struct conn {
    int fd;
    char in[16384];
    size_t have;
};

static char req[512];
static int req_len;
static struct conn *cs;
static int ep;

static void send_request(struct conn *c) {
    if (send(c->fd, req, req_len, 0) != req_len) {
        perror("send");
        exit(1);
    }
}

// Connects connection i (again, after the server closed it) and watches it for replies.
static void open_conn(int i, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(0x7f000001)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    cs[i].fd = fd;
    cs[i].have = 0;
    struct epoll_event e = {.events = EPOLLIN | EPOLLET, .data.u32 = i};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

// True when a whole response (headers and Content-Length bytes of body) has arrived.
static int reply_done(struct conn *c) {
    c->in[c->have] = 0;
    char *end = strstr(c->in, "\r\n\r\n");
    if (!end) return 0;
    char *cl = strcasestr(c->in, "\r\ncontent-length:");
    if (!cl || cl > end) {
        fprintf(stderr, "a reply without Content-Length\n");
        exit(1);
    }
    size_t body = strtoul(cl + 17, NULL, 10);
    return c->have >= (size_t)(end + 4 - c->in) + body;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s PORT PATH CONNECTIONS SECONDS\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[3]);
    double secs = atof(argv[4]);
    req_len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", argv[2], port);
    cs = calloc(n, sizeof *cs);
    ep = epoll_create1(0);
    for (int i = 0; i < n; i++) open_conn(i, port);
    long ops = 0;
    struct floor_start start = floor_begin();
    for (int i = 0; i < n; i++) send_request(&cs[i]);
    struct epoll_event ev[256];
    while (now() - start.t < secs) {
        int k = epoll_wait(ep, ev, 256, -1);
        for (int j = 0; j < k; j++) {
            int i = ev[j].data.u32;
            struct conn *c = &cs[i];
            for (;;) { /* edge-triggered: read until EAGAIN */
                ssize_t m = recv(c->fd, c->in + c->have, sizeof c->in - 1 - c->have, 0);
                if (m < 0 && errno == EAGAIN) break;
                if (c->have == 0 && (m == 0 || (m < 0 && errno == ECONNRESET))) { /* closed: reopen */
                    close(c->fd);
                    open_conn(i, port);
                    send_request(c);
                    break;
                }
                if (m <= 0) {
                    perror("recv");
                    exit(1);
                }
                c->have += m;
                if (reply_done(c)) {
                    ops++;
                    c->have = 0;
                    if (strcasestr(c->in, "\r\nconnection: close")) { /* the server's last reply */
                        close(c->fd);
                        open_conn(i, port);
                    }
                    send_request(c);
                    break;
                } else if (c->have == sizeof c->in - 1) {
                    fprintf(stderr, "reply too long\n");
                    exit(1);
                }
            }
        }
    }
    floor_report("http-floor", n, ops, start);
    return 0;
}
