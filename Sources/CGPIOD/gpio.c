// The two implementations of CGPIOD.h. libgpiod 1.6's header defines GPIOD_LINE_BULK_MAX_LINES
// (the v1 bulk API); 2.x has no bulk objects: that tells the two apart at compile time.
#include "CGPIOD.h"

#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPIOD_LINE_BULK_MAX_LINES
// ---------------------------------------------------------------------------------------------
// v1 (libgpiod 1.6): lines are objects of the chip, requested one by one.

struct wgpio_chip { struct gpiod_chip *chip; };
struct wgpio_line { struct gpiod_line *line; };

int wgpio_api_major(void) { return 1; }
const char *wgpio_library_version(void) { return gpiod_version_string(); }

wgpio_chip *wgpio_chip_open(const char *description) {
  struct gpiod_chip *chip = gpiod_chip_open_lookup(description);
  if (!chip) return NULL;
  wgpio_chip *wrapped = malloc(sizeof *wrapped);
  if (!wrapped) { gpiod_chip_close(chip); errno = ENOMEM; return NULL; }
  wrapped->chip = chip;
  return wrapped;
}

void wgpio_chip_close(wgpio_chip *chip) { gpiod_chip_close(chip->chip); free(chip); }
const char *wgpio_chip_name(const wgpio_chip *chip) { return gpiod_chip_name(chip->chip); }
const char *wgpio_chip_label(const wgpio_chip *chip) { return gpiod_chip_label(chip->chip); }
unsigned wgpio_chip_num_lines(const wgpio_chip *chip) { return gpiod_chip_num_lines(chip->chip); }

int wgpio_chip_find_line(wgpio_chip *chip, const char *name) {
  struct gpiod_line *line = gpiod_chip_find_line(chip->chip, name);
  return line ? (int)gpiod_line_offset(line) : -1;
}

static wgpio_line *wrap_line(struct gpiod_line *line) {
  wgpio_line *wrapped = malloc(sizeof *wrapped);
  if (!wrapped) { gpiod_line_release(line); errno = ENOMEM; return NULL; }
  wrapped->line = line;
  return wrapped;
}

wgpio_line *wgpio_request_input(wgpio_chip *chip, unsigned offset, enum wgpio_bias bias, const char *consumer) {
  struct gpiod_line *line = gpiod_chip_get_line(chip->chip, offset);
  if (!line) return NULL;
  int flags = 0;
  switch (bias) {
  case WGPIO_BIAS_PULL_UP: flags = GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP; break;
  case WGPIO_BIAS_PULL_DOWN: flags = GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN; break;
  case WGPIO_BIAS_DISABLED: flags = GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE; break;
  case WGPIO_BIAS_AS_IS: break;
  }
  if (gpiod_line_request_both_edges_events_flags(line, consumer, flags) != 0) return NULL;
  return wrap_line(line);
}

wgpio_line *wgpio_request_output(wgpio_chip *chip, unsigned offset, bool active_low, const char *consumer) {
  struct gpiod_line *line = gpiod_chip_get_line(chip->chip, offset);
  if (!line) return NULL;
  int flags = active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
  if (gpiod_line_request_output_flags(line, consumer, flags, 0) != 0) return NULL;
  return wrap_line(line);
}

int wgpio_line_fd(wgpio_line *line) { return gpiod_line_event_get_fd(line->line); }
int wgpio_line_get_value(wgpio_line *line) { return gpiod_line_get_value(line->line); }
int wgpio_line_set_value(wgpio_line *line, bool active) { return gpiod_line_set_value(line->line, active ? 1 : 0); }

int wgpio_line_read_event(wgpio_line *line, uint64_t *timestamp_ns) {
  struct gpiod_line_event event;
  if (gpiod_line_event_read(line->line, &event) != 0) return -1;
  *timestamp_ns = (uint64_t)event.ts.tv_sec * 1000000000u + (uint64_t)event.ts.tv_nsec;
  return event.event_type == GPIOD_LINE_EVENT_RISING_EDGE ? 1 : 0;
}

void wgpio_line_release(wgpio_line *line) { gpiod_line_release(line->line); free(line); }

#else
// ---------------------------------------------------------------------------------------------
// v2 (libgpiod 2.x): a chip is opened by path only; lines are requested through settings and
// configuration objects, and events are read into a buffer.

struct wgpio_chip {
  struct gpiod_chip *chip;
  char *name;
  char *label;
  unsigned num_lines;
};

struct wgpio_line {
  struct gpiod_line_request *request;
  struct gpiod_edge_event_buffer *events;
  unsigned offset;
};

int wgpio_api_major(void) { return 2; }
const char *wgpio_library_version(void) { return gpiod_api_version(); }

static wgpio_chip *open_path(const char *path) {
  struct gpiod_chip *chip = gpiod_chip_open(path);
  if (!chip) return NULL;
  struct gpiod_chip_info *info = gpiod_chip_get_info(chip);
  if (!info) { gpiod_chip_close(chip); return NULL; }
  wgpio_chip *wrapped = calloc(1, sizeof *wrapped);
  if (wrapped) {
    wrapped->chip = chip;
    wrapped->name = strdup(gpiod_chip_info_get_name(info));
    wrapped->label = strdup(gpiod_chip_info_get_label(info));
    wrapped->num_lines = (unsigned)gpiod_chip_info_get_num_lines(info);
  }
  gpiod_chip_info_free(info);
  if (!wrapped || !wrapped->name || !wrapped->label) {
    if (wrapped) { free(wrapped->name); free(wrapped->label); free(wrapped); }
    gpiod_chip_close(chip);
    errno = ENOMEM;
    return NULL;
  }
  return wrapped;
}

// As v1's gpiod_chip_open_lookup: a path, a number, a name, or else a label.
wgpio_chip *wgpio_chip_open(const char *description) {
  char path[512];
  if (description[0] == '/') return open_path(description);
  if (description[0] != '\0' && strspn(description, "0123456789") == strlen(description)) {
    snprintf(path, sizeof path, "/dev/gpiochip%s", description);
    return open_path(path);
  }
  if (strncmp(description, "gpiochip", 8) == 0) {
    snprintf(path, sizeof path, "/dev/%s", description);
    return open_path(path);
  }
  DIR *dev = opendir("/dev");
  if (!dev) return NULL;
  wgpio_chip *found = NULL;
  struct dirent *entry;
  while (!found && (entry = readdir(dev)) != NULL) {
    if (strncmp(entry->d_name, "gpiochip", 8) != 0) continue;
    snprintf(path, sizeof path, "/dev/%s", entry->d_name);
    if (!gpiod_is_gpiochip_device(path)) continue;
    wgpio_chip *chip = open_path(path);
    if (!chip) continue;
    if (strcmp(chip->label, description) == 0) found = chip; else wgpio_chip_close(chip);
  }
  closedir(dev);
  if (!found) errno = ENOENT;
  return found;
}

void wgpio_chip_close(wgpio_chip *chip) {
  gpiod_chip_close(chip->chip);
  free(chip->name);
  free(chip->label);
  free(chip);
}

const char *wgpio_chip_name(const wgpio_chip *chip) { return chip->name; }
const char *wgpio_chip_label(const wgpio_chip *chip) { return chip->label; }
unsigned wgpio_chip_num_lines(const wgpio_chip *chip) { return chip->num_lines; }
int wgpio_chip_find_line(wgpio_chip *chip, const char *name) {
  return gpiod_chip_get_line_offset_from_name(chip->chip, name);
}

// Requests one line with `settings` (consumed); NULL with errno set on failure.
static wgpio_line *request(wgpio_chip *chip, unsigned offset, struct gpiod_line_settings *settings,
                           const char *consumer, bool events) {
  if (offset >= chip->num_lines) { gpiod_line_settings_free(settings); errno = EINVAL; return NULL; }
  struct gpiod_line_config *lines = gpiod_line_config_new();
  struct gpiod_request_config *config = gpiod_request_config_new();
  struct gpiod_line_request *requested = NULL;
  if (lines && config && gpiod_line_config_add_line_settings(lines, &offset, 1, settings) == 0) {
    gpiod_request_config_set_consumer(config, consumer);
    requested = gpiod_chip_request_lines(chip->chip, config, lines);
  }
  int saved = errno;
  gpiod_line_settings_free(settings);
  if (lines) gpiod_line_config_free(lines);
  if (config) gpiod_request_config_free(config);
  errno = saved;
  if (!requested) return NULL;
  wgpio_line *line = calloc(1, sizeof *line);
  if (line) {
    line->request = requested;
    line->offset = offset;
    if (events) line->events = gpiod_edge_event_buffer_new(1);
  }
  if (!line || (events && !line->events)) {
    free(line);
    gpiod_line_request_release(requested);
    errno = ENOMEM;
    return NULL;
  }
  return line;
}

wgpio_line *wgpio_request_input(wgpio_chip *chip, unsigned offset, enum wgpio_bias bias, const char *consumer) {
  struct gpiod_line_settings *settings = gpiod_line_settings_new();
  if (!settings) { errno = ENOMEM; return NULL; }
  gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_INPUT);
  gpiod_line_settings_set_edge_detection(settings, GPIOD_LINE_EDGE_BOTH);
  gpiod_line_settings_set_event_clock(settings, GPIOD_LINE_CLOCK_MONOTONIC);
  switch (bias) {
  case WGPIO_BIAS_PULL_UP: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_PULL_UP); break;
  case WGPIO_BIAS_PULL_DOWN: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_PULL_DOWN); break;
  case WGPIO_BIAS_DISABLED: gpiod_line_settings_set_bias(settings, GPIOD_LINE_BIAS_DISABLED); break;
  case WGPIO_BIAS_AS_IS: break;
  }
  return request(chip, offset, settings, consumer, true);
}

wgpio_line *wgpio_request_output(wgpio_chip *chip, unsigned offset, bool active_low, const char *consumer) {
  struct gpiod_line_settings *settings = gpiod_line_settings_new();
  if (!settings) { errno = ENOMEM; return NULL; }
  gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT);
  gpiod_line_settings_set_active_low(settings, active_low);
  gpiod_line_settings_set_output_value(settings, GPIOD_LINE_VALUE_INACTIVE);
  return request(chip, offset, settings, consumer, false);
}

int wgpio_line_fd(wgpio_line *line) { return gpiod_line_request_get_fd(line->request); }

int wgpio_line_get_value(wgpio_line *line) {
  enum gpiod_line_value value = gpiod_line_request_get_value(line->request, line->offset);
  return value == GPIOD_LINE_VALUE_ERROR ? -1 : value == GPIOD_LINE_VALUE_ACTIVE;
}

int wgpio_line_set_value(wgpio_line *line, bool active) {
  return gpiod_line_request_set_value(
    line->request, line->offset, active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

int wgpio_line_read_event(wgpio_line *line, uint64_t *timestamp_ns) {
  int count = gpiod_line_request_read_edge_events(line->request, line->events, 1);
  if (count < 1) {
    if (count == 0) errno = EAGAIN;
    return -1;
  }
  struct gpiod_edge_event *event = gpiod_edge_event_buffer_get_event(line->events, 0);
  *timestamp_ns = gpiod_edge_event_get_timestamp_ns(event);
  return gpiod_edge_event_get_event_type(event) == GPIOD_EDGE_EVENT_RISING_EDGE ? 1 : 0;
}

void wgpio_line_release(wgpio_line *line) {
  gpiod_line_request_release(line->request);
  if (line->events) gpiod_edge_event_buffer_free(line->events);
  free(line);
}
#endif
