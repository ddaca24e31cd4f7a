// The same algorithm as GeoKit, in plain C: each axis's 32-bit index from the fraction bits of x / range + 1.5
// (computed with a small upward bias, then corrected by one comparison with the candidate cell's exact lower edge),
// interleaved by bit spreading, then spelled one character per 5 bits from the alphabet.
#include "CGeohash.h"

#include <string.h>

static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";

static uint64_t axis_index(double x, double half) {
  double biased = x * (0.5 / half) + (1.5 + 0x1p-51);
  if (biased > 0x1.fffffffffffffp0) biased = 0x1.fffffffffffffp0;
  uint64_t bits;
  memcpy(&bits, &biased, sizeof bits);
  uint64_t edge_bits = bits & ~(uint64_t)0xFFFFF;
  double edge;
  memcpy(&edge, &edge_bits, sizeof edge);
  double lower = (edge - 1.5) * (2 * half);
  uint32_t candidate = (uint32_t)(bits >> 20);
  return (uint32_t)(candidate - (x < lower));
}

static uint64_t spread(uint64_t x) {
  x = (x | x << 16) & 0x0000FFFF0000FFFFull;
  x = (x | x << 8) & 0x00FF00FF00FF00FFull;
  x = (x | x << 4) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | x << 2) & 0x3333333333333333ull;
  x = (x | x << 1) & 0x5555555555555555ull;
  return x;
}

uint64_t cgeohash_encode_uint64(double latitude, double longitude) {
  return spread(axis_index(longitude, 180)) << 1 | spread(axis_index(latitude, 90));
}

void cgeohash_encode(double latitude, double longitude, int precision, char *out) {
  uint64_t bits = cgeohash_encode_uint64(latitude, longitude);
  for (int i = 0; i < precision; i++) {
    out[i] = alphabet[bits >> (59 - 5 * i) & 31];
  }
  out[precision] = '\0';
}
