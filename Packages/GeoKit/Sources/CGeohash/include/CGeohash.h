// A portable C geohash encoder for geokit-bench to measure GeoKit against (not part of the GeoKit library).
#ifndef CGEOHASH_H
#define CGEOHASH_H

#include <stdint.h>

/// The 64-bit integer geohash of (latitude, longitude): 32 exact bisections per axis, longitude first.
uint64_t cgeohash_encode_uint64(double latitude, double longitude);

/// Writes the first `precision` (1...12) characters of the geohash of (latitude, longitude) to `out`, then a NUL.
void cgeohash_encode(double latitude, double longitude, int precision, char *out);

#endif
