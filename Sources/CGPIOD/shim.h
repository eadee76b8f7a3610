// Shim over <gpiod.h> (libgpiod 1.6, v1 API) for Swift: the request flags are enum bits made
// with a macro, re-exported as plain constants.
#ifndef WORKOUTD_CGPIOD_SHIM_H
#define WORKOUTD_CGPIOD_SHIM_H

#include <gpiod.h>

static const int cgpiod_flag_active_low = GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW;
static const int cgpiod_flag_bias_disable = GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE;
static const int cgpiod_flag_bias_pull_down = GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN;
static const int cgpiod_flag_bias_pull_up = GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP;
static const int cgpiod_event_rising = GPIOD_LINE_EVENT_RISING_EDGE;
static const int cgpiod_event_falling = GPIOD_LINE_EVENT_FALLING_EDGE;

#endif
