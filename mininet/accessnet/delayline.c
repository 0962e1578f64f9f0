/* delayline: a propagation delay between two interfaces (for kernels without netem), and optionally the
 * access link's drain: the rate at which the link sends what the switch queued.
 *
 *   delayline [-r RATE_BPS -b BUCKET_BYTES [-c CONTROL_FIFO]] IF_A IF_B DELAY_US_A2B DELAY_US_B2A
 *
 * Every frame read on one interface is written to the other DELAY us after it arrived (the kernel's
 * receive timestamp, so a line that was itself late to read a frame still sends it on time). Per direction
 * the order is kept (FIFO, and a fixed delay cannot reorder). One thread: ppoll() on both raw sockets with a
 * nanosecond timeout until the next frame is due; timer slack 1 ns; SCHED_FIFO when permitted. Prints
 * counts and the worst lateness on exit (SIGTERM/SIGINT). The accuracy is measured by tests/test_delayline.py.
 *
 * With -r, A->B is also a link of RATE_BPS whose sender may send BUCKET_BYTES ahead: the switch's queue
 * model (refmodel/queue.py) to the letter. Each frame of L bytes arriving at t is released at
 *
 *     tat = max(tat, t) + L * 8e9 / RATE       release = max(t, tat - BUCKET * 8e9 / RATE)
 *
 * and leaves after the delay. The release times are absolute: when the line is late (the host stalled it)
 * the frames behind go out at once until the schedule is caught up, so a stall delays frames but never the
 * link's service, as on a real link and in the switch's model. (Linux's tbf, the drain this replaces for
 * the P4 switches, earns tokens only up to its bucket while its timer is late, and loses the rest of the
 * stall's service for good: the real queue then stays behind the model.) A rate change takes effect for the
 * frames that arrive after it, as in the model; it comes as a decimal rate in bit/s per line on CONTROL_FIFO.
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
#include <fcntl.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#define MAX_FRAME 65536
#define QCAP (1u << 14) /* frames in flight per direction (1 Gbit/s x 200 ms is ~16k frames) */
#define SLOT 1600      /* bytes per queued frame */

struct frame { int64_t due; uint32_t len; unsigned char *data; };
struct fifo { struct frame *f; uint32_t head, tail; };
struct dir {
    int in, out;
    int64_t delay;
    double rate;            /* bit/s; 0: no drain, a pure delay */
    int64_t bucket_bytes;
    double tat;             /* ns, CLOCK_MONOTONIC: when the link will have sent all it released so far */
    struct fifo q;
    uint64_t frames, dropped, late, rate_changes;
    int64_t max_late;
};

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
    setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    return s;
}

/* The kernel's receive time of a frame, on CLOCK_MONOTONIC (SO_TIMESTAMPNS gives CLOCK_REALTIME: the
   offset between the two clocks is read beside it), or now when the kernel gave none. */
static int64_t arrival_ns(struct msghdr *m) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts, real, mono;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            clock_gettime(CLOCK_REALTIME, &real);
            clock_gettime(CLOCK_MONOTONIC, &mono);
            int64_t stamp = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
            int64_t off = ((int64_t)real.tv_sec - mono.tv_sec) * 1000000000 + (real.tv_nsec - mono.tv_nsec);
            int64_t t = stamp - off, now = (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec;
            return t < now ? t : now;
        }
    }
    return now_ns();
}

/* When a frame of len bytes that arrived at t leaves this line: after the drain (if any), then the delay. */
static int64_t due_ns(struct dir *d, int64_t t, uint32_t len) {
    if (d->rate <= 0) return t + d->delay;
    double tx = len * 8e9 / d->rate, bucket = d->bucket_bytes * 8e9 / d->rate;
    d->tat = (d->tat > t ? d->tat : (double)t) + tx;
    double release = d->tat - bucket > t ? d->tat - bucket : (double)t;
    return (int64_t)release + d->delay;
}

/* Read everything waiting on d->in and stamp it with when it is due. */
static void receive(struct dir *d, unsigned char *buf) {
    for (;;) {
        struct sockaddr_ll from;
        char ctrl[256];
        struct iovec iov = {buf, MAX_FRAME};
        struct msghdr m = {&from, sizeof from, &iov, 1, ctrl, sizeof ctrl, 0};
        ssize_t n = recvmsg(d->in, &m, MSG_DONTWAIT);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) running = 0; /* interface gone: stop */
            return;
        }
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        /* Full (never at these rates) or larger than a slot (impossible with offloads off, MTU 1500). */
        if (d->q.tail - d->q.head >= QCAP || n > SLOT) { d->dropped++; continue; }
        struct frame *f = &d->q.f[d->q.tail % QCAP];
        f->due = due_ns(d, arrival_ns(&m), (uint32_t)n);
        f->len = (uint32_t)n;
        memcpy(f->data, buf, (size_t)n);
        d->q.tail++;
    }
}

/* A rate change from the control FIFO: one decimal rate in bit/s per line (a partial line waits). */
static void control(int fd, struct dir *d, char *line, size_t *have) {
    for (;;) {
        ssize_t n = read(fd, line + *have, 127 - *have);
        if (n <= 0) return;
        *have += (size_t)n;
        line[*have] = 0;
        char *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            double r = atof(line);
            if (r > 0) {
                d->rate = r;
                d->rate_changes++;
                if (d->rate_changes <= 1000) /* the log stays small: one line a change */
                    fprintf(stderr, "delayline: rate %.0f bit/s from %.6f s\n", r, now_ns() / 1e9);
            }
            else fprintf(stderr, "delayline: ignored control line '%s' (want a rate in bit/s)\n", line);
            *have -= (size_t)(nl + 1 - line);
            memmove(line, nl + 1, *have + 1);
        }
        if (*have >= 127) *have = 0; /* a line too long for a rate: dropped */
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

static void usage(void) {
    fprintf(stderr, "usage: delayline [-r RATE_BPS -b BUCKET_BYTES [-c CONTROL_FIFO]] IF_A IF_B DELAY_US_A2B "
                    "DELAY_US_B2A\n");
    exit(2);
}

int main(int argc, char **argv) {
    double rate = 0;
    long long bucket = -1;
    const char *ctl_path = NULL;
    for (int o; (o = getopt(argc, argv, "r:b:c:")) != -1;) {
        if (o == 'r') rate = atof(optarg);
        else if (o == 'b') bucket = atoll(optarg);
        else if (o == 'c') ctl_path = optarg;
        else usage();
    }
    if (argc - optind != 4 || (rate > 0) != (bucket >= 0) || (ctl_path && rate <= 0) || rate < 0) usage();
    char **arg = argv + optind;
    int a = open_port(arg[0]), b = open_port(arg[1]);
    struct dir dirs[2] = {
        {.in = a, .out = b, .delay = atoll(arg[2]) * 1000, .rate = rate, .bucket_bytes = bucket},
        {.in = b, .out = a, .delay = atoll(arg[3]) * 1000},
    };
    /* O_RDWR: the FIFO never reads as closed between its writers (open before anything forwards) */
    int ctl = ctl_path ? open(ctl_path, O_RDWR | O_NONBLOCK) : -1;
    if (ctl_path && ctl < 0) { perror(ctl_path); return 1; }
    char line[128] = {0};
    size_t have = 0;
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

    struct pollfd fds[3] = {{a, POLLIN, 0}, {b, POLLIN, 0}, {ctl, POLLIN, 0}};
    while (running) {
        int64_t next = transmit(&dirs[0]);
        int64_t n2 = transmit(&dirs[1]);
        if (n2 < next) next = n2;
        int64_t wait = next == INT64_MAX ? 200000000 : next - now_ns();
        if (wait < 0) wait = 0;
        struct timespec ts = {wait / 1000000000, wait % 1000000000};
        int r = ppoll(fds, ctl >= 0 ? 3 : 2, &ts, NULL);
        if (r > 0) {
            /* an interface that disappeared (its namespace was removed) ends the line,
               rather than spinning at real-time priority */
            if ((fds[0].revents | fds[1].revents) & (POLLERR | POLLHUP | POLLNVAL)) break;
            if (fds[0].revents & POLLIN) receive(&dirs[0], buf);
            if (fds[1].revents & POLLIN) receive(&dirs[1], buf);
            if (ctl >= 0 && (fds[2].revents & POLLIN)) control(ctl, &dirs[0], line, &have);
        }
    }
    for (int i = 0; i < 2; i++)
        fprintf(stderr, "delayline %s->%s: %llu frames, %llu later than 0.5 ms, max late %.3f ms, dropped %llu\n",
                arg[i], arg[1 - i], (unsigned long long)dirs[i].frames, (unsigned long long)dirs[i].late,
                dirs[i].max_late / 1e6, (unsigned long long)dirs[i].dropped);
    return 0;
}
