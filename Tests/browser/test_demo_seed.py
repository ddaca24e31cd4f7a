"""Tools/demo-seed (issue 41 §1) against a real meridian-server on loopback: every product line has data afterwards,
seen through the API as the web app sees it, and a second run changes nothing.

The server is test_webapp.py's (MERIDIAN_SERVER_BIN, a fresh SQLite database); the meridian-admin beside it loads the
venues and places Tools/run loads, and is the one the seed runs. No browser is needed.

Run: Tests/browser/run -k demo_seed
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from test_webapp import Server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = os.path.join(ROOT, "Tools", "demo-seed")


def call(base, method, path, token=None, body=None):
    request = urllib.request.Request(base + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = response.read()
        return json.loads(payload) if payload and response.headers.get_content_type() == "application/json" else payload


class DemoSeedTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = os.environ["MERIDIAN_SERVER_BIN"]
        cls.admin = os.path.join(os.path.dirname(binary), "meridian-admin")
        cls.server = Server(binary)
        cls.base = cls.server.base
        cls.database = os.path.join(cls.server.directory, "db.sqlite")
        cls.state = tempfile.mkdtemp(prefix="meridian-demo-seed-")
        for arguments in (["venues", "import", "Tools/examples/kyiv-venues.csv"],
                          ["places", "import", "Tools/examples/tomsk-universities.json"]):
            subprocess.run([cls.admin, *arguments, "--database", cls.database], cwd=ROOT, check=True,
                           capture_output=True)
        cls.first = cls.seed()
        accounts = (("demo@example.com", "demo password"), ("bistro@example.com", "bistro password"))
        cls.tokens = {email: call(cls.base, "POST", "/v1/auth/login",
                                  body={"email": email, "password": password})["token"]
                      for email, password in accounts}

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.state, ignore_errors=True)
        shutil.rmtree(cls.server.directory, ignore_errors=True)

    @classmethod
    def seed(cls):
        # --speed 200: the friend's 33-minute walk in 10 s, a batch a second (Tools/run paces it with the demo walk).
        return subprocess.run([sys.executable, SEED, "--server", cls.base, "--admin", cls.admin, "--database",
                               cls.database, "--state", cls.state, "--speed", "200"],
                              cwd=ROOT, capture_output=True, text=True, timeout=240)

    def demo(self, path):
        return call(self.base, "GET", path, self.tokens["demo@example.com"])

    def test_first_run_succeeds_and_says_what_it_made(self):
        self.assertEqual(self.first.returncode, 0, self.first.stdout + self.first.stderr)
        self.assertIn("demo data ready", self.first.stdout)

    def test_the_friend_is_visible_to_demo_with_a_position(self):
        visible = {user["userId"]: user for user in self.demo("/v1/sharing/visible")["users"]}
        friend = next(user for user in visible.values() if user.get("fullName") == "Fedir Friend")
        # Stamped when posted: the friend's last fix is from the last minute, not from the track's recorded day.
        self.assertLess(abs(time.time() * 1000 - friend["lastFixAt"]), 60_000)
        # The friend's walk ends where the demo walk starts (reversed), 100 m east of it.
        fix = self.demo(f"/v1/users/{friend['userId']}/location")["fix"]
        self.assertAlmostEqual(fix["latitude"], 50.4501, delta=0.0005)
        self.assertAlmostEqual(fix["longitude"], 30.5248, delta=0.0005)

    def test_polls_have_pictures_votes_and_comments(self):
        polls = self.demo("/v1/polls?limit=100")["items"]
        self.assertEqual(len(polls), 3)
        for item in polls:
            self.assertGreaterEqual(item["results"]["total"], 3, item["poll"]["title"])
            self.assertGreaterEqual(item["comments"], 1, item["poll"]["title"])
            for option in item["poll"]["options"]:
                image = call(self.base, "GET", option["imageUrl"])
                self.assertTrue(image.startswith(b"\x89PNG"))
                self.assertLessEqual(len(image), 50_000)

    def test_demo_has_points_a_coupon_and_offers_it_can_buy(self):
        balance = self.demo("/v1/me/points")["balance"]
        self.assertGreater(balance, 0)
        self.assertEqual(len(self.demo("/v1/me/coupons")["items"]), 1)
        offers = json.dumps(self.demo("/v1/coupons"))
        self.assertIn("Golden Gate Books", offers)
        self.assertIn("Puzata Hata", offers)

    def test_places_have_reviews_ratings_and_news(self):
        place = self.demo("/v1/places/tsu")
        self.assertIn("Beautiful campus", json.dumps(self.demo("/v1/places/tsu/reviews")))
        self.assertGreaterEqual(len(self.demo("/v1/places/tsu/reviews")["items"]), 2)
        self.assertIn("rating", json.dumps(place))
        news = json.dumps(self.demo("/v1/news?limit=100"), ensure_ascii=False)
        for title in ("Open day on Saturday", "Poetry evening on Friday", "Welcome to the Meridian demo"):
            self.assertIn(title, news)

    def test_a_geofence_on_the_walk_with_the_friends_enter_and_exit(self):
        fences = self.demo("/v1/geofences")["items"]
        self.assertEqual([fence["name"] for fence in fences], ["Golden Gate Books"])
        # The friend (demo's Family, with whom the fence is shared) walks through it: demo sees both events.
        friend = next(user["userId"] for user in self.demo("/v1/sharing/visible")["users"])
        events = self.demo(f"/v1/geofences/events?limit=100&user={friend}")["items"]
        self.assertEqual(sorted(event["kind"] for event in events), ["enter", "exit"])

    def test_where_ive_been_names_countries_and_towns(self):
        countries = {place["area"]["name"] for place in self.demo("/v1/history/places?level=country")["places"]}
        self.assertEqual(countries, {"Ukraine", "Estonia"})
        towns = {place["area"]["name"] for place in self.demo("/v1/history/places?level=locality")["places"]}
        self.assertLessEqual({"Kyiv", "Lviv", "Odesa", "Tallinn", "Tartu"}, towns)
        # A stay of the last few hours (coffee before the walk): the history's default view, today, has a town.
        now = int(time.time() * 1000)
        recent = self.demo(f"/v1/history/places?level=locality&from={now - 3 * 3_600_000}&to={now}")["places"]
        self.assertEqual([place["area"]["name"] for place in recent], ["Kyiv"])

    def test_the_advertiser_has_a_venue_a_promotion_and_todays_figures(self):
        token = self.tokens["bistro@example.com"]
        venues = call(self.base, "GET", "/v1/advertiser/venues", token)["venues"]
        self.assertEqual([venue["id"] for venue in venues], ["sofia-bistro"])
        promotions = call(self.base, "GET", "/v1/advertiser/venues/sofia-bistro/promotions", token)["promotions"]
        self.assertEqual([item["promotion"]["name"] for item in promotions], ["Dinner for two"])
        self.assertTrue(promotions[0]["promotion"]["imageUrl"].startswith("/v1/blobs/"))
        report = call(self.base, "GET", f"/v1/advertiser/promotions/{promotions[0]['promotion']['id']}/stats", token)
        self.assertIn({"people": 5, "offered": 5, "redeemed": "< 5"},
                      [{key: row[key] for key in ("people", "offered", "redeemed")} for row in report["rows"]])
        # And a month before today: most days have figures above the "< 5" threshold.
        shown = [row for row in report["rows"][:-1] if isinstance(row["people"], int) and row["people"] >= 5]
        self.assertGreaterEqual(len(shown), 25, report["rows"])

    def test_a_share_link_of_the_walk_opens_without_an_account(self):
        lines = [line for line in self.first.stdout.splitlines() if "share link of demo's walk" in line]
        self.assertEqual(len(lines), 1, self.first.stdout)
        address = lines[0].rsplit(" ", 1)[1]
        self.assertTrue(address.startswith(self.base + "/s/"), address)
        token = address.rsplit("/", 1)[1]
        view = call(self.base, "GET", f"/v1/shared/{token}")
        self.assertEqual(view["label"], "Dana's walk")
        self.assertFalse(view["paused"])
        links = self.demo("/v1/share-links")["items"]
        self.assertEqual([(link["label"], link["state"], link["track"]) for link in links],
                         [("Dana's walk", "active", True)])

    def test_a_second_run_changes_nothing(self):
        before = self.snapshot()
        second = self.seed()
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        self.assertIn("(998 were stored already)", second.stdout)
        after = self.snapshot()
        self.assertEqual([key for key in before if before[key] != after[key]], [])

    def snapshot(self):
        """Everything the seed makes, as the API and the operator see it (times and counts included)."""
        token = self.tokens["bistro@example.com"]
        promotions = call(self.base, "GET", "/v1/advertiser/venues/sofia-bistro/promotions", token)["promotions"]
        polls = self.demo("/v1/polls?limit=100")["items"]
        admin = [self.admin, "--database", self.database, "--json"]
        return {
            "visible": self.demo("/v1/sharing/visible"),
            # A group's visible fields are a set, which the server lists in any order.
            "groups": [dict(group, visibility=dict(group["visibility"], fields=sorted(group["visibility"]["fields"])))
                       for group in self.demo("/v1/groups")["groups"]],
            "polls": polls,
            "comments": [self.demo(f"/v1/polls/{item['poll']['id']}/comments?limit=100") for item in polls],
            "points": self.demo("/v1/me/points"),
            "coupons": self.demo("/v1/coupons"),
            "my coupons": self.demo("/v1/me/coupons"),
            "reviews": [self.demo(f"/v1/places/{place}/reviews") for place in ("tsu", "tpu", "golden-gate-books")],
            "news": self.demo("/v1/news?limit=100"),
            "favourites": self.demo("/v1/me/favourites"),
            "fences": self.demo("/v1/geofences"),
            "share links": self.demo("/v1/share-links"),
            "events": self.demo("/v1/geofences/events?limit=100"),
            "places": self.demo("/v1/history/places?level=locality"),
            "promotions": promotions,
            "figures": subprocess.run([admin[0], "promotions", "stats", "--venue", "sofia-bistro", *admin[1:]],
                                      capture_output=True, text=True, check=True).stdout,
            "users": subprocess.run([admin[0], "users", "list", *admin[1:]], capture_output=True, text=True,
                                    check=True).stdout,
        }


if __name__ == "__main__":
    unittest.main()
