#!/usr/bin/env python3
"""Writes GeoKit's exact geohash reference: Packages/GeoKit/Tests/GeoKitTests/Fixtures/geohash-exact.txt.

Geohash is defined by bisection: latitude starts as [-90, 90], longitude as [-180, 180]; at each step a value v goes
to the upper half iff v >= mid. This script bisects in exact rational arithmetic (`fractions.Fraction`, which holds
every float exactly), so its answers carry no rounding at all, and writes them for points where floating-point
encoders go wrong:

  * every cell edge at every axis precision 1...32 bits (which covers strings of 1...12 characters and the 64-bit
    integer form), each exactly on the edge, one ulp below and one ulp above, on either axis and at corners;
  * 0, -0, +-1e-300, the smallest subnormals, +-90, +-180, and longitudes outside [-180, 180) (normalized exactly:
    the kit's `Coordinate` wraps them into [-180, 180) before encoding);
  * random points, random at the bit level and uniform in degrees.

Needs only the standard library. Run from the repository root (deterministic: a fixed seed):

    python3 Tools/geo-fixtures/geohash_exact.py

Each line is `lat lon normalized_lon uint64 hash`: the input as given to `Coordinate(latitude:longitude:)` (floats
printed with repr(), so they round-trip exactly), the longitude wrapped into [-180, 180), the 64-bit integer geohash
(32 bisections per axis, longitude first), and the 12-character string; shorter strings and integers of fewer bits
are prefixes of these, since bisection refines a cell without moving its edges.
"""
import math
import os
import random
from fractions import Fraction

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Packages", "GeoKit", "Tests",
                   "GeoKitTests", "Fixtures", "geohash-exact.txt")
ALPHABET = "0123456789bcdefghjkmnpqrstuvwxyz"
rng = random.Random(20261201)


def normalized_longitude(lon):
    """`lon` wrapped into [-180, 180), exactly."""
    wrapped = (Fraction(lon) + 180) % 360 - 180
    result = float(wrapped)
    assert Fraction(result) == wrapped, f"{lon!r} does not wrap to a float"
    return result


def bisect(value, low, high, steps):
    """The `steps` bits of bisecting [low, high] down to `value`, most significant first."""
    value = Fraction(value)
    low, high = Fraction(low), Fraction(high)
    bits = []
    for _ in range(steps):
        middle = (low + high) / 2
        if value >= middle:
            bits.append(1)
            low = middle
        else:
            bits.append(0)
            high = middle
    return bits


def encode(lat, lon):
    """The 64-bit integer geohash and the 12-character string of (lat, lon), lon already in [-180, 180)."""
    lat_bits = bisect(lat, -90, 90, 32)
    lon_bits = bisect(lon, -180, 180, 32)
    bits = [bit for pair in zip(lon_bits, lat_bits) for bit in pair]
    value = 0
    for bit in bits:
        value = value << 1 | bit
    text = "".join(ALPHABET[value >> (59 - 5 * i) & 31] for i in range(12))
    return value, text


def edge(axis_half, bits, index):
    """The `index`-th of the 2^bits + 1 cell edges of an axis [-axis_half, axis_half]: exact in a float."""
    value = Fraction(-axis_half) + Fraction(2 * axis_half * index, 2 ** bits)
    assert Fraction(float(value)) == value
    return float(value)


def around(value):
    """The value, one ulp below it and one ulp above it."""
    return [value, math.nextafter(value, -math.inf), math.nextafter(value, math.inf)]


def random_latitude():
    return rng.uniform(-90, 90)


def random_longitude():
    return rng.uniform(-180, 180)


def points():
    pts = []
    for bits in range(1, 33):
        for index in {0, 1, 2 ** bits - 1, 2 ** bits, 2 ** (bits - 1), rng.randrange(2 ** bits + 1),
                      rng.randrange(2 ** bits + 1)}:
            for lat in around(edge(90, bits, index)):
                if -90 <= lat <= 90:
                    pts.append((lat, random_longitude()))
            for lon in around(edge(180, bits, index)):
                pts.append((random_latitude(), lon))
        for _ in range(3):  # corners
            lat_edge = edge(90, bits, rng.randrange(2 ** bits + 1))
            lon_edge = edge(180, bits, rng.randrange(2 ** bits + 1))
            for lat in around(lat_edge):
                for lon in around(lon_edge):
                    if -90 <= lat <= 90:
                        pts.append((lat, lon))
    special_lat = [0.0, -0.0, 1e-300, -1e-300, 5e-324, -5e-324, 90.0, -90.0, math.nextafter(90.0, 0),
                   math.nextafter(-90.0, 0), -0.04394531250000001, 0.04394531250000001, 45.0, -45.0]
    special_lon = [0.0, -0.0, 1e-300, -1e-300, 5e-324, -5e-324, 180.0, -180.0, math.nextafter(180.0, 0),
                   math.nextafter(180.0, math.inf), math.nextafter(-180.0, 0), math.nextafter(-180.0, -math.inf),
                   -0.04394531250000001, 0.04394531250000001, 90.0, -90.0, 360.0, -360.0, 540.0, -540.0,
                   720.0 - 1e-12, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308]
    for lat in special_lat:
        for lon in special_lon:
            pts.append((lat, lon))
    for _ in range(500):  # random at the bit level: any exponent
        lat = rng.choice([-1, 1]) * 90 * 2.0 ** -rng.randint(0, 1100) * rng.random()
        lon = rng.choice([-1, 1]) * 180 * 2.0 ** -rng.randint(0, 1100) * rng.random()
        pts.append((lat, lon))
    for _ in range(1000):  # uniform in degrees
        pts.append((random_latitude(), random_longitude()))
    return pts


def main():
    rows = []
    seen = set()
    for lat, lon in points():
        key = (repr(lat), repr(lon))
        if key in seen:
            continue
        seen.add(key)
        wrapped = normalized_longitude(lon)
        value, text = encode(lat, wrapped)
        rows.append(f"{lat!r} {lon!r} {wrapped!r} {value} {text}")
    with open(OUT, "w") as f:
        f.write("# lat lon normalized_lon uint64 hash (exact rational bisection, Tools/geo-fixtures/geohash_exact.py)\n")
        f.write("\n".join(rows) + "\n")
    print(f"geohash-exact.txt: {len(rows)} cases")


if __name__ == "__main__":
    main()
