// Shim over <qrencode.h>: the enum values Swift needs as plain ints.
#ifndef WORKOUTD_CQRENCODE_SHIM_H
#define WORKOUTD_CQRENCODE_SHIM_H
#include <qrencode.h>

/// Error correction level M (15 % of the code words can be restored: a scratched screen).
static inline QRecLevel cqr_level_m(void) { return QR_ECLEVEL_M; }
/// Byte mode: a URL as it is.
static inline QRencodeMode cqr_mode_8bit(void) { return QR_MODE_8; }
#endif
