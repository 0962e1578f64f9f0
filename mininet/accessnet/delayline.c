/* delayline: a pure propagation delay between two interfaces (for kernels without netem).
 *
 *   delayline IF_A IF_B DELAY_US_A2B DELAY_US_B2A
 *
 * Every frame read on one interface is written to the other DELAY us after it
 * was read. A delay line has no rate: frames are never held back by each other,
 * only by time, so it adds no queue of its own. Per direction the order is kept
 * (FIFO, and a fixed delay cannot reorder). One thread: ppoll() on both raw
 * sockets with a nanosecond timeout until the next frame is due; timer slack 1
 * ns; SCHED_FIFO when permitted. Prints counts and the worst lateness on exit
 * (SIGTERM/SIGINT). The accuracy is measured by tests/test_delayline.py.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#define MAX_FRAME 65536
#define QCAP (1u << 14) /* frames in flight per direction (1 Gbit/s x 200 ms is ~16k frames) */
#define SLOT 1600      /* bytes per queued frame */

struct frame { int64_t due; uint32_t len; unsigned char *data; };
struct fifo { struct frame *f; uint32_t head, tail; };
struct dir { int in, out; int64_t delay; struct fifo q; uint64_t frames, dropped, late; int64_t max_late; };

static volatile sig_atomic_t running = 1;
static void on_signal(int s) { (void)s; running = 0; }

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int open_port(const char *ifname) {
    int s = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (s < 0) { perror("socket"); exit(1); }
    struct sockaddr_ll a = {0};
    a.sll_family = AF_PACKET;
    a.sll_protocol = htons(ETH_P_ALL);
    a.sll_ifindex = (int)if_nametoindex(ifname);
    if (!a.sll_ifindex) { fprintf(stderr, "delayline: no interface %s\n", ifname); exit(1); }
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) { perror("bind"); exit(1); }
    int one = 1, buf = 8 << 20;
    setsockopt(s, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    return s;
}

/* Read everything waiting on d->in and stamp it due at now + delay. */
static void receive(struct dir *d, unsigned char *buf) {
    for (;;) {
        struct sockaddr_ll from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(d->in, buf, MAX_FRAME, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) running = 0; /* interface gone: stop */
            return;
        }
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        /* Full (never at these rates) or larger than a slot (impossible with offloads off, MTU 1500). */
        if (d->q.tail - d->q.head >= QCAP || n > SLOT) { d->dropped++; continue; }
        struct frame *f = &d->q.f[d->q.tail % QCAP];
        f->due = now_ns() + d->delay;
        f->len = (uint32_t)n;
        memcpy(f->data, buf, (size_t)n);
        d->q.tail++;
    }
}

/* Send every frame that is due; returns the next due time or INT64_MAX. */
static int64_t transmit(struct dir *d) {
    while (d->q.head != d->q.tail) {
        struct frame *f = &d->q.f[d->q.head % QCAP];
        int64_t t = now_ns();
        if (f->due > t) return f->due;
        if (send(d->out, f->data, f->len, 0) < 0 && errno == EAGAIN) return t + 10000;
        if (t - f->due > d->max_late) d->max_late = t - f->due;
        if (t - f->due > 500000) d->late++; /* more than 0.5 ms late */
        d->frames++;
        d->q.head++;
    }
    return INT64_MAX;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: delayline IF_A IF_B DELAY_US_A2B DELAY_US_B2A\n");
        return 2;
    }
    int a = open_port(argv[1]), b = open_port(argv[2]);
    struct dir dirs[2] = {
        {a, b, atoll(argv[3]) * 1000, {0}, 0, 0, 0, 0},
        {b, a, atoll(argv[4]) * 1000, {0}, 0, 0, 0, 0},
    };
    for (int i = 0; i < 2; i++) {
        dirs[i].q.f = calloc(QCAP, sizeof(struct frame));
        unsigned char *pool = malloc((size_t)QCAP * SLOT);
        if (!dirs[i].q.f || !pool) { fprintf(stderr, "delayline: out of memory\n"); return 1; }
        memset(pool, 0, (size_t)QCAP * SLOT); /* fault the pages in now, not while forwarding */
        for (uint32_t k = 0; k < QCAP; k++) dirs[i].q.f[k].data = pool + (size_t)k * SLOT;
    }
    unsigned char *buf = malloc(MAX_FRAME);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the lab that started us */
    if (getppid() == 1) return 1;
    struct sched_param sp = {.sched_priority = 30}; /* above the switch (20) and the audio (10): it is the wire */
    sched_setscheduler(0, SCHED_FIFO, &sp); /* best effort */
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    struct pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    while (running) {
        int64_t next = transmit(&dirs[0]);
        int64_t n2 = transmit(&dirs[1]);
        if (n2 < next) next = n2;
        int64_t wait = next == INT64_MAX ? 200000000 : next - now_ns();
        if (wait < 0) wait = 0;
        struct timespec ts = {wait / 1000000000, wait % 1000000000};
        int r = ppoll(fds, 2, &ts, NULL);
        if (r > 0) {
            /* an interface that disappeared (its namespace was removed) ends the line,
               rather than spinning at real-time priority */
            if ((fds[0].revents | fds[1].revents) & (POLLERR | POLLHUP | POLLNVAL)) break;
            if (fds[0].revents & POLLIN) receive(&dirs[0], buf);
            if (fds[1].revents & POLLIN) receive(&dirs[1], buf);
        }
    }
    for (int i = 0; i < 2; i++)
        fprintf(stderr, "delayline %s->%s: %llu frames, %llu later than 0.5 ms, max late %.3f ms, dropped %llu\n",
                argv[1 + i], argv[2 - i], (unsigned long long)dirs[i].frames, (unsigned long long)dirs[i].late,
                dirs[i].max_late / 1e6, (unsigned long long)dirs[i].dropped);
    return 0;
}
