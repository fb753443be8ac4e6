/* An outside agent in C: attaches to a dmxshm agent slot and drives its robots
 * with a lane follower, through the slot ABI of docs/abi.md (version 1) alone.
 *
 *   cc -O2 -ffp-contract=off -o dmx_agent examples/c/dmx_agent.c -lpthread -lm   (Linux)
 *   dmxshm run --external-agents 1 --name demo &
 *   ./dmx_agent "$(dmxshm ps --json | python3 -c 'import json,sys; \
 *       print(json.load(sys.stdin)[0]["slots"][0]["segment"])')"
 *
 * Arguments: the slot's segment name (/dmx-...-slot.N, from `dmxshm ps --json`)
 * and, optionally, how many commands to send. Prints "claimed PID" once it holds
 * the slot and "sent N" at the end. Exit 0 when the network ended, 2 on bad
 * arguments or a slot of another ABI, 3 when the slot is held by another client,
 * 4 when the network died under it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Header: byte offsets of docs/abi.md. */
enum {
    H_MAGIC = 0, H_ABI = 8, H_MODE = 12, H_SLOT = 16, H_ROBOTS = 20, H_RECORD = 24,
    H_FIELDS = 28, H_TABLE = 32, H_IDS = 36, H_OBS = 40, H_CMD = 44, H_MAXW = 56,
    N_OBS_SEQ = 64, N_STATUS = 72, N_AWAITING = 104, N_EXAMINED = 112, N_UNITS = 120,
    C_PID = 128, C_AT = 136, C_NAME = 144,
    OBS_RECORDS = 64, CMD_WHEELS = 64,
};
enum { SERVING = 1, ENDED = 2, FAILED = 3 };

static uint8_t *base;

static uint32_t u32(size_t at) { uint32_t v; memcpy(&v, base + at, 4); return v; }
/* The words two processes share: acquire loads, release stores. */
static uint64_t load64(size_t at) { return __atomic_load_n((uint64_t *)(base + at), __ATOMIC_ACQUIRE); }
static void store64(size_t at, uint64_t v) { __atomic_store_n((uint64_t *)(base + at), v, __ATOMIC_RELEASE); }

static int lock_byte(int fd, int byte, int cmd) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    if (fcntl(fd, cmd, &fl) < 0) return -1;
    return fl.l_type != F_UNLCK;  /* F_OFD_GETLK: whether someone else holds it */
}

/* The offset of a field of an observation record, from the header's field table. */
static long field(const char *name, uint32_t *count) {
    uint32_t n = u32(H_FIELDS), table = u32(H_TABLE);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = base + table + 32 * i;
        if (strncmp((const char *)e, name, 16) == 0) {
            uint32_t off; memcpy(&off, e + 16, 4); memcpy(count, e + 20, 4);
            return off;
        }
    }
    return -1;
}

static void ring(sem_t *bell) { int v = 0; if (sem_getvalue(bell, &v) == 0 && v == 0) sem_post(bell); }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s /dmx-...-slot.N [commands]\n", argv[0]); return 2; }
    const char *name = argv[1];
    long limit = argc > 2 ? atol(argv[2]) : -1;
    int fd = shm_open(name, O_RDWR, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) { perror(name); return 2; }
    base = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 2; }
    if (memcmp(base + H_MAGIC, "DMXSLOT\x01", 8) != 0 || u32(H_ABI) != 1) {
        fprintf(stderr, "%s is not a dmxshm agent slot of ABI 1\n", name); return 2;
    }
    uint64_t units; memcpy(&units, base + N_UNITS, 8);
    if (units != 0) {  /* this example answers in rad/s, not PWM duty */
        fprintf(stderr, "%s takes PWM duties (--action pwm); this agent sends wheel "
                "speeds\n", name); return 2;
    }
    /* The claim: byte 1, dropped by the kernel if this process dies. */
    if (lock_byte(fd, 1, F_OFD_SETLK) < 0) {
        uint64_t holder; memcpy(&holder, base + C_PID, 8);
        fprintf(stderr, "slot held by pid %llu\n", (unsigned long long)holder); return 3;
    }
    double now = (double)time(NULL);
    memcpy(base + C_AT, &now, 8);
    strncpy((char *)base + C_NAME, "c-example", 31);
    store64(C_PID, (uint64_t)getpid());
    char bell_name[300];
    snprintf(bell_name, sizeof bell_name, "%s.obs", name);
    sem_t *obs_bell = sem_open(bell_name, 0);
    snprintf(bell_name, sizeof bell_name, "%s.cmd", name);
    sem_t *cmd_bell = sem_open(bell_name, 0);
    if (obs_bell == SEM_FAILED || cmd_bell == SEM_FAILED) { perror("sem_open"); return 2; }
    printf("claimed %d\n", (int)getpid());
    fflush(stdout);

    int gym = u32(H_MODE) == 0;
    uint32_t robots = u32(H_ROBOTS), record = u32(H_RECORD), count;
    size_t obs = u32(H_OBS), cmd = u32(H_CMD);
    long lane = field("lane", &count), tof = field("tof_m", &count);
    double max_w; memcpy(&max_w, base + H_MAXW, 8);
    uint64_t seen = 0, m = (load64(cmd) + 1) / 2;  /* after any command before ours */
    long sent = 0;
    uint8_t *copy = malloc((size_t)robots * record);
    double *wheels = malloc(sizeof(double) * 2 * robots);
    while (limit < 0 || sent < limit) {
        /* Wait for an observation newer than the last (gym: the one awaited). */
        uint64_t seq = load64(N_OBS_SEQ), step = 0;
        int fresh = 0;
        if (seq > seen && seq % 2 == 0) {
            memcpy(&step, base + obs, 8);
            memcpy(copy, base + obs + OBS_RECORDS, (size_t)robots * record);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            uint64_t cseq = load64(cmd);
            fresh = load64(N_OBS_SEQ) == seq &&
                    (!gym || (load64(N_AWAITING) == step &&
                              (cseq % 2 || cseq == load64(N_EXAMINED))));
        }
        if (!fresh) {
            uint64_t status = load64(N_STATUS);
            if (status == ENDED || status == FAILED) break;
            if (status == SERVING && lock_byte(fd, 0, F_OFD_GETLK) == 0) {
                fprintf(stderr, "the network died\n"); return 4;
            }
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 50 * 1000000L;
            if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
            sem_timedwait(obs_bell, &until);
            continue;
        }
        seen = seq;
        /* A lane follower: PD on the lane pseudo-sensor, slowing behind an obstacle. */
        for (uint32_t r = 0; r < robots; r++) {
            float l[3], range;
            memcpy(l, copy + (size_t)r * record + lane, sizeof l);
            memcpy(&range, copy + (size_t)r * record + tof, sizeof range);
            double offset = isnan(l[0]) ? 0 : l[0], heading = isnan(l[1]) ? 0 : l[1];
            double gap = fmin(fmax((range - 0.15) / 0.30, 0.0), 1.0);
            double v = 0.22 * gap, omega = -10.0 * offset - 4.0 * heading;
            wheels[2 * r] = fmax(-max_w, fmin(max_w, (v - omega * 0.055) / 0.0318));
            wheels[2 * r + 1] = fmax(-max_w, fmin(max_w, (v + omega * 0.055) / 0.0318));
        }
        /* The command under its sequence word: odd while written, even once done. */
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double sent_s = t.tv_sec + t.tv_nsec * 1e-9;
        uint32_t reset = 0;
        store64(cmd, 2 * m + 1);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        memcpy(base + cmd + 8, &step, 8);
        memcpy(base + cmd + 16, &sent_s, 8);
        memcpy(base + cmd + 24, &reset, 4);
        memcpy(base + cmd + CMD_WHEELS, wheels, sizeof(double) * 2 * robots);
        store64(cmd, 2 * m + 2);
        m++;
        ring(cmd_bell);
        sent++;
    }
    printf("sent %ld\n", sent);
    return 0;
}
