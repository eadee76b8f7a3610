// One small GPIO API over libgpiod, whichever major version the system has: 1.6 (the v1 API,
// Debian 12 bookworm) or 2.x (the v2 API of request, line-settings and edge-event objects,
// Debian 13 trixie). gpio.c picks the implementation from the header it is compiled against;
// Swift sees only this. Each requested line is its own request, with its own descriptor to poll.
#ifndef WORKOUTD_CGPIOD_H
#define WORKOUTD_CGPIOD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wgpio_chip wgpio_chip;
typedef struct wgpio_line wgpio_line;

/// The pull resistor asked for on an input (kernel 5.5+); AS_IS leaves the firmware's setting.
enum wgpio_bias { WGPIO_BIAS_AS_IS = 0, WGPIO_BIAS_PULL_UP, WGPIO_BIAS_PULL_DOWN, WGPIO_BIAS_DISABLED };

/// The libgpiod API this was built against: 1 or 2.
int wgpio_api_major(void);
/// The library's own version string ("1.6.3", "2.2.1").
const char *wgpio_library_version(void);

/// Opens a chip by label ("pinctrl-bcm2711"), name ("gpiochip0"), number ("0") or /dev path.
/// NULL (errno set) if there is none.
wgpio_chip *wgpio_chip_open(const char *description);
void wgpio_chip_close(wgpio_chip *chip);
const char *wgpio_chip_name(const wgpio_chip *chip);
const char *wgpio_chip_label(const wgpio_chip *chip);
unsigned wgpio_chip_num_lines(const wgpio_chip *chip);
/// The offset of the line the device tree names `name`, or -1.
int wgpio_chip_find_line(wgpio_chip *chip, const char *name);

/// Requests line `offset` as an input that reports both edges, stamped with CLOCK_MONOTONIC
/// where the kernel can. NULL (errno set) if the kernel refuses (busy, no such line).
wgpio_line *wgpio_request_input(wgpio_chip *chip, unsigned offset, enum wgpio_bias bias, const char *consumer);
/// Requests line `offset` as an output, inactive (off) at first.
wgpio_line *wgpio_request_output(wgpio_chip *chip, unsigned offset, bool active_low, const char *consumer);
/// The descriptor that polls readable when an edge event waits.
int wgpio_line_fd(wgpio_line *line);
/// 1 active, 0 inactive, -1 (errno set) on failure.
int wgpio_line_get_value(wgpio_line *line);
/// 0, or -1 (errno set).
int wgpio_line_set_value(wgpio_line *line, bool active);
/// Reads one edge event: 1 rising, 0 falling, -1 (errno set) on failure; the kernel's
/// timestamp in nanoseconds in `*timestamp_ns`.
int wgpio_line_read_event(wgpio_line *line, uint64_t *timestamp_ns);
/// Releases the line (an output is switched off first by the caller).
void wgpio_line_release(wgpio_line *line);

#endif
