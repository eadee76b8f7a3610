// Shim over <gps.h> for Swift (libgps: gpsd 3.22, API major 11, on bookworm; gpsd 3.25, API
// major 14, on trixie; the fields used here are the same in both).
//
// Why a shim:
// - The watch flags and the `set` mask bits are macros built from shifts (`(1llu<<10)`); they are
//   re-exported here as functions so Swift sees them whatever the importer makes of the macros.
// - `struct gps_data_t` is ~24 KB, full of unions and fixed arrays: Swift must not copy it by
//   value (reading `pointer.pointee.fix.latitude` can copy the whole struct). `cgps_copy_tpv`
//   copies the few fields a TPV fills into a small flat struct in one call instead.
// - The mask is copied as it is: NaN means "unknown", and `set` is only meaningful because the
//   caller clears it before each `gps_read` (libgps does not clear it: a SKY or DEVICE report
//   leaves the previous TPV's bits standing).
#ifndef WORKOUTD_CGPS_SHIM_H
#define WORKOUTD_CGPS_SHIM_H

#include <gps.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if GPSD_API_MAJOR_VERSION < 9
#error "workoutd needs libgps API 9 or later (fix.time as timespec, altHAE/altMSL)"
#endif

/// `WATCH_ENABLE | WATCH_JSON`: stream JSON reports (what gpxlogger asks for too).
static inline unsigned int cgps_watch_enable_json(void) { return WATCH_ENABLE | WATCH_JSON; }
/// `WATCH_DISABLE`: stop streaming before closing.
static inline unsigned int cgps_watch_disable(void) { return WATCH_DISABLE; }

static inline uint64_t cgps_mask_online(void) { return ONLINE_SET; }
static inline uint64_t cgps_mask_time(void) { return TIME_SET; }
static inline uint64_t cgps_mask_timerr(void) { return TIMERR_SET; }
static inline uint64_t cgps_mask_latlon(void) { return LATLON_SET; }
static inline uint64_t cgps_mask_altitude(void) { return ALTITUDE_SET; }
static inline uint64_t cgps_mask_speed(void) { return SPEED_SET; }
static inline uint64_t cgps_mask_track(void) { return TRACK_SET; }
static inline uint64_t cgps_mask_climb(void) { return CLIMB_SET; }
static inline uint64_t cgps_mask_status(void) { return STATUS_SET; }
static inline uint64_t cgps_mask_mode(void) { return MODE_SET; }
static inline uint64_t cgps_mask_herr(void) { return HERR_SET; }
static inline uint64_t cgps_mask_verr(void) { return VERR_SET; }
static inline uint64_t cgps_mask_speederr(void) { return SPEEDERR_SET; }
static inline uint64_t cgps_mask_device(void) { return DEVICE_SET; }
static inline uint64_t cgps_mask_devicelist(void) { return DEVICELIST_SET; }
static inline uint64_t cgps_mask_version(void) { return VERSION_SET; }
static inline uint64_t cgps_mask_error(void) { return ERROR_SET; }
static inline uint64_t cgps_mask_packet(void) { return PACKET_SET; }

/// `MODE_2D`, the least a position needs.
static inline int cgps_mode_2d(void) { return MODE_2D; }
static inline int cgps_api_major(void) { return GPSD_API_MAJOR_VERSION; }
static inline int cgps_api_minor(void) { return GPSD_API_MINOR_VERSION; }

/// The TPV fields workoutd uses, flat. Doubles are NaN when unknown, as in `gps_fix_t`.
struct cgps_tpv {
  uint64_t set;
  int mode;
  int status;
  int64_t time_sec;
  int64_t time_nsec;
  double ept;
  double latitude;
  double longitude;
  double alt_hae;
  double alt_msl;
  double geoid_sep;
  double eph;
  double epx;
  double epy;
  double epv;
  double track;
  double speed;
  double eps;
  double climb;
  int leap_seconds;
};

/// A zeroed `gps_data_t` on the heap (it is far too large for a thread's stack frame);
/// free it with `cgps_free` after `gps_close`. NULL when out of memory.
static inline struct gps_data_t *cgps_alloc(void) {
  return (struct gps_data_t *)calloc(1, sizeof(struct gps_data_t));
}
static inline void cgps_free(struct gps_data_t *data) { free(data); }
/// Zeroes the whole structure (before reusing it for a new `gps_open`).
static inline void cgps_reset(struct gps_data_t *data) { memset(data, 0, sizeof(*data)); }

/// Clears `set` before a `gps_read`, so that afterwards it names only what that read filled.
static inline void cgps_clear_set(struct gps_data_t *data) { data->set = 0; }
static inline uint64_t cgps_set(const struct gps_data_t *data) { return data->set; }
static inline int cgps_fd(const struct gps_data_t *data) { return (int)data->gps_fd; }

/// Copies the fix out of `data` (see `struct cgps_tpv`).
static inline void cgps_copy_tpv(const struct gps_data_t *data, struct cgps_tpv *out) {
  const struct gps_fix_t *fix = &data->fix;
  out->set = data->set;
  out->mode = fix->mode;
  out->status = fix->status;
  out->time_sec = (int64_t)fix->time.tv_sec;
  out->time_nsec = (int64_t)fix->time.tv_nsec;
  out->ept = fix->ept;
  out->latitude = fix->latitude;
  out->longitude = fix->longitude;
  out->alt_hae = fix->altHAE;
  out->alt_msl = fix->altMSL;
  out->geoid_sep = fix->geoid_sep;
  out->eph = fix->eph;
  out->epx = fix->epx;
  out->epy = fix->epy;
  out->epv = fix->epv;
  out->track = fix->track;
  out->speed = fix->speed;
  out->eps = fix->eps;
  out->climb = fix->climb;
  out->leap_seconds = data->leap_seconds;
}

/// gpsd's release string from the last VERSION report ("3.22"), or "".
static inline const char *cgps_version_release(const struct gps_data_t *data) {
  return data->version.release;
}

/// The calling thread's errno (libgps reports `gps_open` failures as negative errno values,
/// the netlib codes NL_NOHOST, NL_NOCONNECT, ...).
static inline int cgps_errno(void) { return errno; }
static inline void cgps_set_errno(int value) { errno = value; }

#endif
