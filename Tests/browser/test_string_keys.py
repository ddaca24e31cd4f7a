"""Every text the web app can ask for is in its String Catalog, in every language, in the form it is asked in.

The page shows a text with `t(key)` or `plural(key, count)` (Site/i18n.js) and fills `[data-i18n]` elements of
index.html; a key the catalog lacks shows as the raw key. This test reads the page's own files, no browser:

- `t('a.b')`, `plural('a.b', n)`, both branches of `t(x ? 'a' : 'b')`, `t(TABLE[x])` (the string values of the object
  literal `TABLE` in the same file) and `data-i18n="a.b"`;
- keys built from a server value, `` t(`groups.${group.kind}`) ``: their values are the API's enum in
  docs/api/openapi.yaml (DYNAMIC below), and the spec's enum is checked against the Swift enum the server encodes, so
  a new server value without its texts fails here. A template whose prefix is not in DYNAMIC fails too: say where its
  values come from.

A `t()` key must be a plain text and a `plural()` key a plural text (`t` of a plural text shows the key), with a
non-empty value in every language of the catalog. Run with the browser tests (Tests/browser/run) or alone:
`python3 -m unittest discover -s Tests/browser -p test_string_keys.py`.
"""

import glob
import json
import os
import re
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SITE = os.path.join(ROOT, "Apps", "Server", "MeridianServer", "WebApp", "Site")
SPEC = os.path.join(ROOT, "docs", "api", "openapi.yaml")

# A template key's prefix → where its values come from: the spec's enum (a block of openapi.yaml by its keys, then a
# pattern whose group is the enum's list), the Swift enum the server encodes (its type, or container.type), and the
# values the page never asks a text for.
DYNAMIC = {
    "groups.": {"spec": (["components:", "schemas:", "Group:"], r"\bkind: \{[^}]*enum: \[([^\]]*)\]"),
                "swift": "GroupKind", "except": {"custom"}},  # a custom group shows its own name
    "history.": {"spec": (["components:", "parameters:", "Preset:"], r"enum: \[([^\]]*)\]"), "swift": "DatePreset"},
    "field.": {"spec": (["components:", "schemas:", "GroupVisibility:"], r"\bfields: \{.*enum: \[([^\]]*)\]"),
               "swift": "ProfileField"},
    "audience.": {"spec": (["components:", "schemas:"], r"\bFieldAudience: \{[^}]*enum: \[([^\]]*)\]"),
                  "swift": "FieldAudience"},
    "polls.": {"spec": (["paths:", "/v1/polls:", "get:"], r"name: order,.*enum: \[([^\]]*)\]"),
               "swift": "PollFeedQuery.Order"},
    "rewards.reason.": {"spec": (["components:", "schemas:", "PointsStatement:"], r"\breason: \{.*enum: \[([^\]]*)\]"),
                        "swift": "PointsReason"},
    "precision.": {"spec": (["components:", "schemas:", "LocationPrecision:"], r"enum: \[([^\]]*)\]"),
                   "swift": "LocationPrecision"},
    "zones.display.": {"spec": (["components:", "schemas:", "PrivacyZone:"], r"\bdisplay: \{[^}]*enum: \[([^\]]*)\]"),
                       "swift": "ZoneDisplay"},
    "zones.shown.": {"spec": (["components:", "schemas:", "PrivacyZone:"], r"\bdisplay: \{[^}]*enum: \[([^\]]*)\]"),
                     "swift": "ZoneDisplay"},
}

# Arguments of t() that are not keys of the page's code: `apply()` reads the pages' data-i18n attributes.
INDIRECT = {"element.dataset.i18n"}


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


# ---------------------------------------------------------------------- the keys the page asks for

def skip_quoted(text, index):
    """The index after the string or template literal that starts at `index` (templates' `${…}` included)."""
    quote = text[index]
    index += 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return index + 1
        if quote == "`" and text.startswith("${", index):
            index = skip_balanced(text, index + 1)
            continue
        index += 1
    raise ValueError(f"unterminated {quote} literal")


def skip_balanced(text, index):
    """The index after the bracket that closes the one at `index`."""
    depth = 0
    while index < len(text):
        char = text[index]
        if char in "'\"`":
            index = skip_quoted(text, index)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise ValueError("unbalanced brackets")


def top_level(text, stops):
    """The index of the first of `stops` outside brackets and literals in `text`, else len(text)."""
    index = 0
    while index < len(text):
        char = text[index]
        if char in stops:
            return index
        if char in "'\"`":
            index = skip_quoted(text, index)
        elif char in "([{":
            index = skip_balanced(text, index)
        else:
            index += 1
    return len(text)


def calls(source):
    """(function, first argument) of every `t(…)` and `plural(…)` call in `source` (not their definitions)."""
    for match in re.finditer(r"(?<![\w$.])(t|plural)\(", source):
        if re.search(r"function\s+$", source[:match.start()]):
            continue
        start = match.end()
        end = start + top_level(source[start:], ",)")
        yield match.group(1), source[start:end].strip()


def object_values(source, name):
    """The string values of the object literal assigned to `name` in `source`, or None when there is none."""
    found = re.search(rf"\b{re.escape(name)}\s*=\s*\{{", source)
    if not found:
        return None
    body = source[found.end() - 1:skip_balanced(source, found.end() - 1)]
    return re.findall(r":\s*'([^']*)'", body)


def keys_of(argument, source, dynamic):
    """The keys `argument` (a first argument of t or plural) can be, and the problems that stop saying which."""
    argument = argument.strip()
    question = top_level(argument, "?")
    if question < len(argument):
        rest = argument[question + 1:]
        colon = top_level(rest, ":")
        keys, problems = keys_of(rest[:colon], source, dynamic)
        more, more_problems = keys_of(rest[colon + 1:], source, dynamic)
        return keys + more, problems + more_problems
    if re.fullmatch(r"'[^'\\]*'|\"[^\"\\]*\"", argument):
        return [argument[1:-1]], []
    template = re.fullmatch(r"`([^`$]*)\$\{[^}]*\}`", argument)
    if template:
        prefix = template.group(1)
        if prefix not in dynamic:
            return [], [f"`{argument}`: the values after {prefix!r} come from nowhere this test knows (add it to "
                        f"DYNAMIC with the API enum they come from)"]
        return [prefix + value for value in sorted(dynamic[prefix])], []
    lookup = re.fullmatch(r"([A-Za-z_$][\w$]*)\[[^\]]*\]", argument)
    if lookup:
        values = object_values(source, lookup.group(1))
        if values:
            return values, []
    if argument in INDIRECT:
        return [], []
    return [], [f"t/plural({argument}): the test can't tell which keys this asks for (use literals, a template with "
                f"a DYNAMIC prefix, or a table of literals)"]


def page_keys(sources, html, dynamic):
    """{key: {'text' | 'plural'}} the page can ask for, and the problems found, from the scripts `sources`
    ({file name: text}), the page `html` and the values of `dynamic` ({prefix: values})."""
    keys = {}
    problems = []
    for name, source in sorted(sources.items()):
        for function, argument in calls(source):
            found, trouble = keys_of(argument, source, dynamic)
            problems += [f"{name}: {problem}" for problem in trouble]
            for key in found:
                keys.setdefault(key, set()).add("plural" if function == "plural" else "text")
    for key in re.findall(r'\bdata-i18n="([^"]+)"', html):
        keys.setdefault(key, set()).add("text")
    return keys, problems


# ---------------------------------------------------------------------- the catalog

def catalog_languages(catalog):
    """Every language of the catalog, the source language first (as the server's StringCatalog.languages)."""
    others = {language for entry in catalog["strings"].values() for language in entry.get("localizations", {})}
    others.discard(catalog["sourceLanguage"])
    return [catalog["sourceLanguage"]] + sorted(others)


def catalog_problems(catalog, keys):
    """What a key of `keys` lacks in `catalog`: an entry, a language, a value, or the form it is asked in."""
    problems = []
    languages = catalog_languages(catalog)
    for key, kinds in sorted(keys.items()):
        entry = catalog["strings"].get(key)
        if entry is None:
            problems.append(f"{key}: not in the catalog")
            continue
        for language in languages:
            localization = entry.get("localizations", {}).get(language)
            if localization is None:
                problems.append(f"{key}: no {language} text")
                continue
            unit = localization.get("stringUnit")
            forms = localization.get("variations", {}).get("plural")
            if "text" in kinds and not (unit and unit.get("value")):
                problems.append(f"{key}: asked with t() but {language} has no plain text")
            if "plural" in kinds and not (forms and forms.get("other", {}).get("stringUnit", {}).get("value")
                                          and all(form.get("stringUnit", {}).get("value") for form in forms.values())):
                problems.append(f"{key}: asked with plural() but {language} has no plural forms")
    return problems


# ---------------------------------------------------------------------- the API's enums

def spec_block(lines, anchors):
    """The lines of openapi.yaml under the nested keys `anchors` (each found deeper inside the previous one)."""
    start, end, indent = 0, len(lines), -1
    for anchor in anchors:
        for index in range(start, end):
            line = lines[index]
            depth = len(line) - len(line.lstrip())
            if depth > indent and line.strip().startswith(anchor):
                start, indent = index + 1, depth
                break
        else:
            raise LookupError(f"openapi.yaml has no {' › '.join(anchors)}")
        end = next((index for index in range(start, end)
                    if lines[index].strip() and len(lines[index]) - len(lines[index].lstrip()) <= indent), end)
    return "\n".join(lines[start - 1:end])


def spec_enum(spec, anchors, pattern):
    """The values of the enum `pattern` finds (its group: the list) in the block `anchors` of the spec's text."""
    found = re.search(pattern, spec_block(spec.splitlines(), anchors))
    if not found:
        raise LookupError(f"openapi.yaml: no enum {pattern!r} under {' › '.join(anchors)}")
    return {value.strip().strip("'\"") for value in found.group(1).split(",") if value.strip()}


def swift_sources():
    """{path: text} of the Swift sources of the apps and kits (not tests, not build folders)."""
    paths = glob.glob(os.path.join(ROOT, "Apps", "**", "*.swift"), recursive=True)
    paths += glob.glob(os.path.join(ROOT, "Packages", "*", "Sources", "**", "*.swift"), recursive=True)
    return {path: read(path) for path in paths if "/.build" not in path}


def swift_wire_names(sources, qualified):
    """The wire names of the Swift enum `qualified` (`Type` or `Container.Type`): a String enum's raw values, else
    the names its `case "name":` labels parse (DatePreset's `init?(name:)`)."""
    *containers, name = qualified.split(".")
    bodies = []
    for source in sources.values():
        text = re.sub(r"//[^\n]*", "", source)  # comments (apostrophes, braces) out; enum bodies hold no braces in text
        offset = 0
        for container in containers:
            found = re.search(rf"\b(struct|enum|class|extension)\s+{container}\b[^{{]*\{{", text[offset:])
            if not found:
                break
            offset += found.end()
        else:
            found = re.search(rf"\benum\s+{name}\b([^{{]*)\{{", text[offset:])
            if found:
                opening = offset + found.end() - 1
                depth, index = 0, opening
                for index in range(opening, len(text)):
                    depth += {"{": 1, "}": -1}.get(text[index], 0)
                    if depth == 0:
                        break
                bodies.append((found.group(1), text[opening:index + 1]))
    if len(bodies) != 1:
        raise LookupError(f"{len(bodies)} Swift enums named {qualified}; expected one")
    header, body = bodies[0]
    if re.search(r":\s*String\b", header):
        names = set()
        for declared in re.findall(r"^\s*case\s+([^\n(:]+?)\s*$", body, re.MULTILINE):
            for case in declared.split(","):
                raw = re.fullmatch(r'\s*(\w+)\s*(?:=\s*"([^"]*)")?\s*', case)
                names.add(raw.group(2) if raw.group(2) is not None else raw.group(1))
        return names
    return set(re.findall(r'case\s+"(\w+)"\s*:', body))


def dynamic_values(spec):
    """{prefix: values the page may build a key with} from the spec's enums (the ones it never asks for left out)."""
    return {prefix: spec_enum(spec, *source["spec"]) - source.get("except", set())
            for prefix, source in DYNAMIC.items()}


# ---------------------------------------------------------------------- tests

def site_sources():
    return {os.path.basename(path): read(path) for path in sorted(glob.glob(os.path.join(SITE, "*.js")))}


class StringKeyTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.catalog = json.loads(read(os.path.join(SITE, "strings.xcstrings")))
        cls.html = "\n".join(read(path) for path in sorted(glob.glob(os.path.join(SITE, "*.html"))))
        cls.sources = site_sources()
        cls.spec = read(SPEC)

    def test_every_key_the_page_can_ask_for_is_in_every_language(self):
        keys, problems = page_keys(self.sources, self.html, dynamic_values(self.spec))
        self.assertEqual(problems, [])
        self.assertEqual(catalog_problems(self.catalog, keys), [])
        self.assertEqual(catalog_languages(self.catalog), ["en", "ru", "uk"])
        self.assertGreater(len(keys), 150, "the scan found the page's keys")  # 166 texts in the catalog today
        for key in ("rewards.reason.couponPurchase", "groups.blacklist", "history.allTime", "polls.most_voted",
                    "field.birthday", "audience.nobody", "rewards.notEnough", "directory.favourites",
                    "live.offline", "age.days", "signin.title"):
            self.assertIn(key, keys)  # each way of asking: enums, REFUSALS, headings, ternaries, i18n.js, the page

    def test_the_specs_enums_are_the_servers(self):
        """The spec's enum each DYNAMIC prefix reads is the Swift enum's wire names, so a value the server gained
        without the spec still needs its texts here."""
        sources = swift_sources()
        for prefix, source in DYNAMIC.items():
            with self.subTest(prefix=prefix):
                self.assertEqual(spec_enum(self.spec, *source["spec"]), swift_wire_names(sources, source["swift"]))

    def test_a_new_server_value_without_its_text_fails(self):
        sources = swift_sources()
        path = next(path for path, text in sources.items() if "enum PointsReason:" in text)
        sources[path] = sources[path].replace("  case adjustment\n", "  case adjustment\n  case referral\n")
        self.assertIn("referral", swift_wire_names(sources, "PointsReason"), "the server gained a value …")
        self.assertNotIn("referral", spec_enum(self.spec, *DYNAMIC["rewards.reason."]["spec"]), "… the spec did not")
        spec = self.spec.replace("enum: [pollPosted,", "enum: [referral, pollPosted,")
        self.assertNotEqual(spec, self.spec)
        keys, _ = page_keys(self.sources, self.html, dynamic_values(spec))
        self.assertEqual(catalog_problems(self.catalog, keys), ["rewards.reason.referral: not in the catalog"])

    def test_a_text_missing_in_one_language_or_asked_in_the_wrong_form_fails(self):
        catalog = json.loads(json.dumps(self.catalog))
        del catalog["strings"]["groups.family"]["localizations"]["uk"]
        catalog["strings"]["history.fixes"]["localizations"]["ru"] = {"stringUnit": {"state": "translated",
                                                                                      "value": "точки"}}
        keys, _ = page_keys(self.sources, self.html, dynamic_values(self.spec))
        self.assertEqual(catalog_problems(catalog, keys), [
            "groups.family: no uk text", "history.fixes: asked with plural() but ru has no plural forms"])

    def test_a_key_the_test_cannot_resolve_fails(self):
        sources = {"x.js": "const a = t(`kinds.${kind}`); const b = t(name); const c = plural(ORDERS[i], 2);"
                           "const ORDERS = { a: 'x.one' };"}
        keys, problems = page_keys(sources, "", dynamic_values(self.spec))
        self.assertEqual(keys, {"x.one": {"plural"}})
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("`kinds.${kind}`", problems[0])
        self.assertIn("t/plural(name)", problems[1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
