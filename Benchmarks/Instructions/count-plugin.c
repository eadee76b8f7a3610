/*
 * A QEMU TCG plugin that counts the guest instructions a program executes, all its threads
 * together, by the file they ran in: Benchmarks/instructions-arm64.py's counter, the aarch64
 * (and, for comparison, x86_64) twin of callgrind's count in Benchmarks/instructions.py.
 *
 * Why a plugin of our own: callgrind runs on this machine's CPU only, and Debian's qemu-user is
 * built without plugins. The count is the emulated program's own instruction stream, which
 * emulation does not change (what it costs the host does not enter it): the figure a Pi would
 * execute for the same work, user space only.
 *
 * How (the API of QEMU's include/qemu/qemu-plugin.h, version 4): each translation block, as it
 * is translated, gets one inline add of its instruction count to a per-vCPU slot (in
 * linux-user each guest thread is a vCPU), the slot of the file the block's code lies in,
 * found from the host address of its first instruction in this process's /proc/self/maps. An
 * inline add is a few host instructions in the translated code, no call: the program runs near
 * emulation's usual speed, so its timeouts do not fire. A block left early (a fault) is counted
 * whole; a system call ends a block, so that is rare.
 *
 * The count is observable while the program runs: a thread of the plugin writes the running
 * totals every `interval` ms (default 100) to `out` (written beside and renamed, so a reader
 * never sees half a file), and once more at exit:
 *   <CLOCK_MONOTONIC ns> <instructions> <vCPUs>
 *   <instructions> <file's base name>        (one line per file, "[anonymous]" for the rest)
 * A window is the difference of two such samples. That thread reads the per-vCPU slots while
 * the vCPUs write them (aligned 64-bit words: a reader sees an old or a new value, never a torn
 * one). QEMU reallocates the slots when a 17th vCPU appears (plugins/core.c,
 * plugin_grow_scoreboards__locked): the vCPU count is printed so that a reader can refuse a
 * window across which it grew.
 *
 * Usage: qemu-aarch64 -plugin count-plugin.so,out=FILE[,interval=MS] PROGRAM ARGS...
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_FILES 64           /* a process's code files; more share the last slot */
#define ANONYMOUS 0            /* slot 0: code in no file (the vDSO, anything generated) */
#define OTHERS (MAX_FILES - 1) /* the last: files beyond the others */

/* One scoreboard entry (per vCPU): instructions by file slot. */
typedef struct {
    uint64_t by_file[MAX_FILES];
} Counts;

static struct qemu_plugin_scoreboard *counts;
static char *file_names[MAX_FILES];
static int files = 1; /* slot 0 is ANONYMOUS */

/* The code mappings of this process, host addresses, from /proc/self/maps. */
typedef struct {
    uintptr_t start, end;
    int file;
} Range;
static Range *ranges;
static size_t n_ranges;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* ranges, file_names, files */
static const char *out_path;
static long interval_ms = 100;
static pid_t owner; /* a forked child (before its exec) must not write our file */

static int file_slot(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int i = 1; i < files; i++) {
        if (strcmp(file_names[i], base) == 0) {
            return i;
        }
    }
    if (files == OTHERS) {
        return OTHERS;
    }
    file_names[files] = strdup(base);
    return files++;
}

/* Re-reads /proc/self/maps: executable file mappings (guest code lies in them, at host
 * addresses; QEMU's own are there too, never asked for). */
static void read_maps(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    if (maps == NULL) {
        return;
    }
    n_ranges = 0;
    size_t capacity = 0;
    while (fgets(line, sizeof line, maps)) {
        uintptr_t start, end;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3 ||
            path_at == 0 || line[path_at] != '/') {
            continue;
        }
        line[strcspn(line, "\n")] = 0;
        if (n_ranges == capacity) {
            capacity = capacity ? capacity * 2 : 256;
            ranges = realloc(ranges, capacity * sizeof *ranges);
        }
        ranges[n_ranges++] = (Range){start, end, file_slot(line + path_at)};
    }
    fclose(maps);
}

static int find_range(uintptr_t address)
{
    for (size_t i = 0; i < n_ranges; i++) {
        if (address >= ranges[i].start && address < ranges[i].end) {
            return ranges[i].file;
        }
    }
    return -1;
}

/* The file a block's code lies in: from the maps as last read, or as read again now (a
 * library loaded since). */
static int block_file(struct qemu_plugin_tb *tb)
{
    uintptr_t address = (uintptr_t)qemu_plugin_insn_haddr(qemu_plugin_tb_get_insn(tb, 0));
    if (address == 0) {
        return ANONYMOUS;
    }
    pthread_mutex_lock(&lock);
    int file = find_range(address);
    if (file < 0) {
        read_maps();
        file = find_range(address);
    }
    pthread_mutex_unlock(&lock);
    return file < 0 ? ANONYMOUS : file;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    int file = block_file(tb);
    qemu_plugin_u64 slot = {counts, offsetof(Counts, by_file) + file * sizeof(uint64_t)};
    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, QEMU_PLUGIN_INLINE_ADD_U64, slot,
                                                      qemu_plugin_tb_n_insns(tb));
}

/* `who` names the writer's own temporary file: the writer thread and the exit callback may
 * write at the same time. */
static void write_totals(const char *who)
{
    if (getpid() != owner) {
        return;
    }
    uint64_t by_file[MAX_FILES] = {0}, total = 0;
    int vcpus = qemu_plugin_num_vcpus();
    for (int v = 0; v < vcpus; v++) {
        const Counts *c = qemu_plugin_scoreboard_find(counts, v);
        for (int f = 0; f < MAX_FILES; f++) {
            uint64_t n = __atomic_load_n(&c->by_file[f], __ATOMIC_RELAXED);
            by_file[f] += n;
            total += n;
        }
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.%s", out_path, who);
    FILE *f = fopen(temporary, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "%" PRIu64 " %" PRIu64 " %d\n", (uint64_t)now.tv_sec * 1000000000u + now.tv_nsec, total, vcpus);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_FILES; i++) {
        if (by_file[i]) {
            fprintf(f, "%" PRIu64 " %s\n", by_file[i], file_names[i]);
        }
    }
    pthread_mutex_unlock(&lock);
    if (fclose(f) == 0) {
        rename(temporary, out_path);
    }
}

static void *writer(void *unused)
{
    (void)unused;
    struct timespec pause = {interval_ms / 1000, (interval_ms % 1000) * 1000000};
    for (;;) {
        nanosleep(&pause, NULL);
        write_totals("writing");
    }
    return NULL;
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
    write_totals("exiting");
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out_path = argv[i] + 4;
        } else if (strncmp(argv[i], "interval=", 9) == 0 && atol(argv[i] + 9) > 0) {
            interval_ms = atol(argv[i] + 9);
        } else {
            fprintf(stderr, "count-plugin: unknown argument %s (out=FILE, interval=MS)\n", argv[i]);
            return -1;
        }
    }
    if (out_path == NULL) {
        fprintf(stderr, "count-plugin: out=FILE is needed\n");
        return -1;
    }
    owner = getpid();
    file_names[ANONYMOUS] = "[anonymous]";
    file_names[OTHERS] = "[other files]";
    counts = qemu_plugin_scoreboard_new(sizeof(Counts));
    qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    /* The writer takes no signal: linux-user's host handlers expect a vCPU thread
     * (linux-user/signal.c, host_signal_handler uses thread_cpu). It inherits this mask. */
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    pthread_t thread;
    int error = pthread_create(&thread, NULL, writer, NULL);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (error) {
        fprintf(stderr, "count-plugin: no writer thread: %s\n", strerror(error));
        return -1;
    }
    pthread_detach(thread);
    return 0;
}
