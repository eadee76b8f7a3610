// The price of one wake-up on this machine, for Benchmarks/device.py: a thread that sleeps on
// an absolute timer and wakes once a second, doing nothing else. Its CPU time a wake-up is what
// the kernel (and a hypervisor, where there is one) charges a thread for going to sleep and
// being woken with cold caches; workoutd wakes about four times a recorded second (the tick,
// and the three sleeps of the commit's fdatasync), gpxlogger about three times a fix.
//
// Usage: wake-probe SECONDS; prints "CPU-µs-per-wake-up switches-per-wake-up".
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double thread_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static long switches(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nvcsw + usage.ru_nivcsw;
}

int main(int argc, char **argv) {
  if (argc != 2 || atoi(argv[1]) < 1) {
    fprintf(stderr, "usage: wake-probe SECONDS\n");
    return 2;
  }
  int wakes = atoi(argv[1]);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  next.tv_sec += 1;
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);  // starts on a wake-up
  double cpu = thread_cpu();
  long switched = switches();
  for (int i = 0; i < wakes; i++) {
    next.tv_sec += 1;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  printf("%.1f %.2f\n", (thread_cpu() - cpu) / wakes * 1e6, (double)(switches() - switched) / wakes);
  return 0;
}
