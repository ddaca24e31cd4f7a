"""The web app in a real headless Chromium, driven by Selenium through Debian's chromium-driver.

A real meridian-server runs on loopback with a temporary SQLite database and unreachable map tiles; each test signs
people up over the HTTP API, opens the page in the browser and checks what a person would see. Every wait has a
timeout; a failing test saves a screenshot and the browser's console log (MERIDIAN_BROWSER_ARTIFACTS, default a
temporary folder that is printed).

Run: Tests/browser/run (builds nothing; uses the meridian-server of `swift build --show-bin-path`).
"""

import functools
import itertools
import json
import os
import queue
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import struct
import urllib.error
import urllib.request
import zlib

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT_SECONDS = 15
TILE_URL = "http://127.0.0.1:9/{z}/{x}/{y}.png"  # port 9 (discard) refuses: tiles never load
ARTIFACTS = os.environ.get("MERIDIAN_BROWSER_ARTIFACTS") or tempfile.mkdtemp(prefix="meridian-browser-")
os.makedirs(ARTIFACTS, exist_ok=True)
_ids = itertools.count(1)


INTEGRATION_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "MeridianServerIntegrationTests")


class IntegrationTestService:
    """A Python service of the integration tests, run as it is there: the program in the raw string (`#\"""…\"""#`)
    of `SCRIPT` (a Swift file of Tests/MeridianServerIntegrationTests), with the `python3` on the PATH (where .ci/run
    installs its packages). Its first line of output, JSON, is kept as `started`."""

    SCRIPT = None

    def __init__(self):
        with open(os.path.join(INTEGRATION_TESTS, self.SCRIPT), encoding="utf-8") as file:
            swift = file.read()
        source = swift[swift.index('#"""\n') + 5:swift.rindex('"""#')]
        self.path = os.path.join(tempfile.mkdtemp(prefix="meridian-service-"), "service.py")
        with open(self.path, "w", encoding="utf-8") as file:
            file.write("\n".join(line[2:] for line in source.split("\n")))
        self.process = subprocess.Popen(["python3", self.path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=10)
            raise RuntimeError(f"{self.SCRIPT} did not start: " + self.process.stderr.read())
        self.started = json.loads(line)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.process.stdout.close()
        self.process.stderr.close()


class OpenIDProvider(IntegrationTestService):
    """The integration tests' OpenID provider (pyop) on 127.0.0.1."""

    SCRIPT = "OpenIDProviderScript.swift"

    def __init__(self):
        super().__init__()
        self.issuer = self.started["issuer"]

    def control(self, path, body):
        request = urllib.request.Request(self.issuer + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()


class PushService(IntegrationTestService):
    """The integration tests' Web Push service on 127.0.0.1: a browser's key pair and auth secret (`p256dh`, `auth`),
    and what it received — each push's VAPID check and its payload decrypted with `http_ece`, independent of the
    server's Swift."""

    SCRIPT = "PushServiceScript.swift"

    def __init__(self):
        super().__init__()
        self.origin = f"http://127.0.0.1:{self.started['port']}"
        self.keys = {"p256dh": self.started["p256dh"], "auth": self.started["auth"]}

    def received(self):
        with urllib.request.urlopen(self.origin + "/received", timeout=10) as answer:
            return json.loads(answer.read())


class Server:
    """meridian-server on 127.0.0.1, a port of the system's choosing, a fresh database; its log is kept."""

    def __init__(self, binary, directory=None, port=0, tile_url=TILE_URL, settings=None, database=None):
        """`database` is a PostgreSQL URL; by default a new SQLite file in `directory`."""
        self.directory = directory or tempfile.mkdtemp(prefix="meridian-webapp-")
        # Webhooks to loopback are allowed here: the alerts page's test registers one on 127.0.0.1.
        environment = dict(os.environ, MERIDIAN_TILE_URL=tile_url, MERIDIAN_LOG_LEVEL="info",
                           MERIDIAN_WEBHOOK_ALLOW_PRIVATE="true", **(settings or {}))
        self.process = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(port),
             "--database", database or os.path.join(self.directory, "db.sqlite"), "--bcrypt-cost", "4"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment)
        self.lines = queue.Queue()
        self.log = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        try:
            listening = r"meridian-server listening.*port=(\d+)|port=(\d+).*listening"
            self.port = int(self.wait_for_line(listening, seconds=90))
        except BaseException:
            self.process.kill()  # never left running after a start that failed or took too long
            self.process.wait(timeout=10)
            raise
        self.base = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for line in self.process.stderr:
            self.log.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for_line(self, pattern, seconds):
        """The first non-empty group of the first new log line matching `pattern`."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no log line matching {pattern!r} within {seconds} s")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError("meridian-server exited:\n" + "".join(self.log[-30:]))
            found = re.search(pattern, line)
            if found:
                return next(group for group in found.groups() if group)

    @classmethod
    def restarted(cls, binary, stopped):
        """A new server on `stopped`'s port and database. While the port is free, an outgoing connection of this
        machine may hold it as its local port for a moment: a refused bind is tried again for a few seconds."""
        deadline = time.monotonic() + 5
        while True:
            try:
                return cls(binary, directory=stopped.directory, port=stopped.port)
            except RuntimeError as error:
                if "address already in use" not in str(error).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.25)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.reader.join(timeout=10)
        if not self.reader.is_alive():
            self.process.stderr.close()


class Proxy:
    """A TCP relay on 127.0.0.1 in front of a server, so a test can drop the browser's connections (its socket among
    them) while the server and its state live on: `drop()` cuts every connection and refuses new ones, `restore()`
    accepts them again."""

    def __init__(self, port):
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.open = True
        self.pairs = set()
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=10)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.pairs.add((client, upstream))
            threading.Thread(target=self._relay, args=(client, upstream), daemon=True).start()

    def _relay(self, client, upstream):
        ends = {client: upstream, upstream: client}
        try:
            while True:
                readable, _, _ = select.select(list(ends), [], [], 1)
                for end in readable:
                    data = end.recv(65536)
                    if not data:
                        return
                    ends[end].sendall(data)
        except OSError:
            return
        finally:
            self._close(client, upstream)

    def _close(self, client, upstream):
        with self.lock:
            self.pairs.discard((client, upstream))
        for end in (client, upstream):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def drop(self):
        self.open = False
        with self.lock:
            pairs = list(self.pairs)
        for pair in pairs:
            self._close(*pair)

    def restore(self):
        self.open = True

    def stop(self):
        self.closed = True
        self.drop()
        self.listener.close()


class Account:
    """A person signed up over the HTTP API."""

    def __init__(self, server, name):
        self.server = server
        self.email = f"person{next(_ids)}-{os.getpid()}@example.com"
        self.password = "browser password"
        self.name = name
        answer = self.call("POST", "/v1/auth/register", {"email": self.email, "password": self.password})
        self.token = answer["token"]
        self.id = answer["userId"]
        self.call("PATCH", "/v1/me/profile", {"fullName": name})
        self.device = f"device-{self.id}"

    def call(self, method, path, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if getattr(self, "token", None):
            request.add_header("Authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
            return json.loads(text) if text else None

    def call_raw(self, method, path):
        """The body of `method path` as text (a CSV, or JSON to decode)."""
        request = urllib.request.Request(self.server.base + path, method=method,
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read().decode()

    def post_poll(self, title, colours):
        """Posts a two-option poll whose options show images of `colours`; answers its id."""
        options = []
        for index, colour in enumerate(colours):
            request = urllib.request.Request(self.server.base + "/v1/blobs", data=png(colour), method="POST", headers={
                "Content-Type": "application/octet-stream", "Authorization": f"Bearer {self.token}"})
            with urllib.request.urlopen(request, timeout=10) as response:
                options.append({"text": f"Option {'AB'[index]}", "imageUrl": json.loads(response.read())["url"]})
        return self.call("POST", "/v1/polls", {"title": title, "options": options})["poll"]["id"]

    def group(self, kind):
        return next(g for g in self.call("GET", "/v1/groups")["groups"] if g["kind"] == kind)

    def share_with(self, other, kind="friends"):
        """Puts `other` in this account's group of `kind`."""
        self.call("PUT", f"/v1/groups/{self.group(kind)['id']}/members/{other.id}")

    def upload(self, *points, seconds_ago=0):
        """Stores fixes at `points` (lat, lon), a second apart, the last `seconds_ago` seconds before now."""
        now = int(time.time() * 1000) - seconds_ago * 1000
        self.upload_at([(now - (len(points) - 1 - index) * 1000, lat, lon) for index, (lat, lon) in enumerate(points)])

    def upload_at(self, fixes):
        """Stores fixes given as (UTC milliseconds, lat, lon)."""
        fixes = [{"timestamp": timestamp, "latitude": lat, "longitude": lon, "horizontalAccuracy": 5}
                 for timestamp, lat, lon in fixes]
        receipt = self.call("POST", "/v1/fixes", {"deviceId": self.device, "fixes": fixes})
        assert receipt["accepted"] == len(fixes), receipt


def headless_chromium(downloads):
    """Debian's chromium, headless, through chromedriver (MERIDIAN_CHROMIUM, MERIDIAN_CHROMEDRIVER), in English, saving
    downloads to `downloads` and keeping the console's messages."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("MERIDIAN_CHROMIUM", "/usr/bin/chromium")
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,800", "--lang=en-US", "--no-first-run"]:
        options.add_argument(argument)
    options.add_experimental_option("prefs", {
        "intl.accept_languages": "en-US,en", "download.default_directory": downloads,
        "download.prompt_for_download": False})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ.get("MERIDIAN_CHROMEDRIVER", "/usr/bin/chromedriver"))
    browser = webdriver.Chrome(service=service, options=options)
    browser.set_page_load_timeout(30)
    browser.set_script_timeout(10)
    return browser


def png(rgb):
    """A 4×4 PNG image of one colour."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(rgb) * 4 for _ in range(4))
    header = struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def screenshot_on_failure(test):
    """Saves a screenshot and the console log of the browser when `test` fails, then fails."""

    @functools.wraps(test)
    def run(self):
        try:
            test(self)
        except BaseException:
            path = os.path.join(ARTIFACTS, f"{test.__name__}.png")
            try:
                self.browser.save_screenshot(path)
                self.console_entries()
                with open(path[:-4] + ".console.txt", "w") as file:
                    file.write("\n".join(map(str, self.console)))
                print(f"\n  screenshot: {path}")
            except Exception as error:  # the browser itself may be what failed
                print(f"\n  no screenshot: {error}")
            raise

    return run


class WebAppTests(unittest.TestCase):
    server = None
    browser = None

    @classmethod
    def setUpClass(cls):
        print(f"artifacts on failure: {ARTIFACTS}")
        binary = os.environ.get("MERIDIAN_SERVER_BIN")
        if not binary:
            bin_path = subprocess.run(
                ["swift", "build", "--show-bin-path"], capture_output=True, text=True, timeout=120, check=True)
            binary = os.path.join(bin_path.stdout.strip(), "meridian-server")
        cls.binary = binary
        cls.server = Server(binary)
        cls.downloads = tempfile.mkdtemp(prefix="meridian-downloads-")
        try:
            cls.browser = headless_chromium(cls.downloads)
        except BaseException:
            cls.server.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.browser:
            cls.browser.quit()
        if cls.server:
            cls.server.stop()

    def setUp(self):
        self.browser.get_log("browser")  # what earlier tests left
        self.console = []

    # ------------------------------------------------------------------ helpers

    def wait(self, condition, message, seconds=WAIT_SECONDS):
        try:
            return WebDriverWait(
                self.browser, seconds, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)
            ).until(lambda _: condition())
        except TimeoutException:
            self.fail(f"{message} (waited {seconds} s)")

    def click(self, selector, message):
        """Clicks the element `selector` names, found again when the page drew it anew between finding and clicking
        (a stale element was never clicked, so trying again clicks once)."""
        def clicked():
            self.browser.find_element(By.CSS_SELECTOR, selector).click()
            return True
        self.wait(clicked, message)

    def console_entries(self):
        entries = self.browser.get_log("browser")
        self.console.extend(entries)
        return entries

    def open_and_sign_in(self, account, base=None):
        self.browser.get((base or self.server.base) + "/")
        if self.browser.execute_script("return localStorage.getItem('meridian.language')"):
            self.browser.execute_script("localStorage.removeItem('meridian.language')")  # another test's choice
            self.browser.get((base or self.server.base) + "/")
        self.wait(lambda: self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "signin",
                  "the sign-in form is ready")
        self.browser.find_element(By.ID, "email").send_keys(account.email)
        self.browser.find_element(By.ID, "password").send_keys(account.password)
        self.browser.find_element(By.ID, "email-submit").click()
        self.wait(lambda: self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "app",
                  "the map is shown after signing in")

    def marker(self, account):
        found = self.browser.find_elements(By.CSS_SELECTOR, f'.leaflet-marker-pane .person[data-user-id="{account.id}"]')
        return found[0] if found else None

    def wait_for_marker_at(self, account, lat, lon):
        def at():
            element = self.marker(account)
            return (element is not None and element.get_attribute("data-lat") == str(lat)
                    and element.get_attribute("data-lon") == str(lon))
        self.wait(at, f"{account.name}'s marker at {lat}, {lon}")
        return self.marker(account)

    def assert_no_script_errors(self):
        """No uncaught exception and no Content-Security-Policy violation in the console so far."""
        errors = [entry["message"] for entry in self.console_entries() if entry["level"] == "SEVERE"
                  and ("Uncaught" in entry["message"] or "Content Security Policy" in entry["message"])]
        self.assertEqual(errors, [], "script errors or policy violations")

    def admin(self, arguments, server=None):
        """Runs meridian-admin (beside the server) on the database of `server` (the shared server's by default)."""
        admin = os.path.join(os.path.dirname(self.binary), "meridian-admin")
        database = os.path.join((server or self.server).directory, "db.sqlite")
        subprocess.run([admin, *arguments, "--database", database], check=True, timeout=60,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)

    def show(self, view):
        self.browser.find_element(By.CSS_SELECTOR, f'#nav [data-view="{view}"]').click()

    def open_share_link(self, owner, **body):
        """Makes a share link of `owner` (an hour long unless `until` is given), opens its page without an account
        and waits until its socket is subscribed; answers the link as POST /v1/share-links answered it."""
        body.setdefault("until", int(time.time() * 1000) + 3_600_000)
        link = owner.call("POST", "/v1/share-links", body)
        self.browser.get(self.server.base + link["url"])
        self.wait(lambda: self.body_data("live") == "subscribed", "the share page's socket is subscribed")
        return link

    def body_data(self, name):
        return self.browser.find_element(By.TAG_NAME, "body").get_attribute(f"data-{name}")

    def shared_marker(self):
        found = self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-marker-pane .shared-position")
        return found[0] if found else None

    def wait_for_shared_marker_at(self, lat, lon):
        def at():
            element = self.shared_marker()
            return (element is not None and element.get_attribute("data-lat") == str(lat)
                    and element.get_attribute("data-lon") == str(lon))
        self.wait(at, f"the shared position at {lat}, {lon}")

    # ------------------------------------------------------------------ tests

    @screenshot_on_failure
    def test_a_share_link_page_shows_the_position_without_an_account_moves_with_a_new_fix_and_hides_it_when_paused(
            self):
        owner = Account(self.server, "Sasha Shared")
        owner.upload((50.4501, 30.5234))
        self.open_share_link(owner, label="Walk to the station")
        self.wait_for_shared_marker_at(50.4501, 30.5234)
        self.assertEqual(self.browser.find_element(By.ID, "share-label").text, "Walk to the station")
        self.assertEqual(self.browser.find_element(By.ID, "share-state").text, "Live location")
        self.assertEqual(self.browser.find_element(By.ID, "share-seen").text, "Seen just now")
        owner.upload((50.4512, 30.5250))
        self.wait_for_shared_marker_at(50.4512, 30.5250)
        owner.call("POST", "/v1/sharing/pause")
        self.wait(lambda: self.body_data("state") == "paused", "the page says the owner paused")
        self.assertIsNone(self.shared_marker())
        self.assertEqual(self.browser.find_element(By.ID, "share-state").text, "Location sharing is paused.")
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_a_share_links_page_says_expired_at_the_links_end_without_any_event(self):
        # Paused, the page has no subscription and asks again only every 30 s: at the link's end it asks at once.
        owner = Account(self.server, "Erik Expiring")
        owner.upload((50.4501, 30.5234))
        self.open_share_link(owner, until=int(time.time() * 1000) + 8_000)
        self.wait_for_shared_marker_at(50.4501, 30.5234)
        owner.call("POST", "/v1/sharing/pause")
        self.wait(lambda: self.body_data("state") == "paused", "the page says the owner paused")
        self.wait(lambda: self.body_data("state") == "expired", "the page says the link expired", seconds=20)
        self.assertEqual(self.browser.find_element(By.ID, "share-state").text,
                         "This link has expired; it shows nothing any more.")
        self.assertIsNone(self.shared_marker())
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_a_share_link_at_about_a_kilometre_shows_the_cells_centre_and_says_when_the_owner_is_in_a_private_zone(
            self):
        owner = Account(self.server, "Ada Approximate")
        owner.upload((50.4501, 30.5234), seconds_ago=5)
        link = self.open_share_link(owner, label="Walk", precision="approximate")
        self.assertEqual(link["link"]["precision"], "approximate")
        with urllib.request.urlopen(f"{self.server.base}/v1/shared/{link['token']}", timeout=10) as response:
            shown = json.load(response)["position"]
        self.assertNotEqual((shown["latitude"], shown["longitude"]), (50.4501, 30.5234))
        self.wait_for_shared_marker_at(shown["latitude"], shown["longitude"])
        owner.call("POST", "/v1/me/privacy-zones", {"name": "Home", "latitude": 50.47, "longitude": 30.55, "radius": 500})
        owner.upload((50.4701, 30.5501))
        self.wait(lambda: self.body_data("state") == "private", "the page says the owner is in a private zone")
        self.assertEqual(self.browser.find_element(By.ID, "share-state").text,
                         "In a private zone: where isn't shown.")
        self.assertIsNone(self.shared_marker())
        owner.upload((50.4501, 30.5234))
        self.wait_for_shared_marker_at(shown["latitude"], shown["longitude"])
        self.assertEqual(self.body_data("state"), "active")
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_the_share_page_benchmark_times_opening_a_link_until_its_first_position_is_drawn(self):
        from share_link_bench import share_link_open_times  # the benchmark's own measure, kept working here
        owner = Account(self.server, "Bench Owner")
        owner.upload((50.4501, 30.5234))
        link = owner.call("POST", "/v1/share-links", {"until": int(time.time() * 1000) + 3_600_000})
        times = share_link_open_times(self.browser, self.server.base + link["url"], 3)
        self.assertEqual(len(times), 3)
        self.assertTrue(all(0 < each < WAIT_SECONDS * 1000 for each in times), times)
        self.wait_for_shared_marker_at(50.4501, 30.5234)

    def test_a_share_page_whose_address_is_no_token_says_there_is_no_such_link(self):
        self.browser.get(self.server.base + "/s/%E0%A4%A")
        self.wait(lambda: self.body_data("state") == "missing", "the page says there is no such link")
        self.assertEqual(self.body_data("ready"), "share")
        self.assertIsNone(self.shared_marker())
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_a_revoked_share_links_page_says_so_and_shows_nothing(self):
        owner = Account(self.server, "Rita Revoked")
        owner.upload((50.4501, 30.5234))
        link = self.open_share_link(owner, label="Lunch", track=True)
        self.wait_for_shared_marker_at(50.4501, 30.5234)
        owner.call("DELETE", f"/v1/share-links/{link['link']['id']}")
        self.wait(lambda: self.body_data("state") == "revoked", "the page says the link was revoked")
        text = "This link was revoked; it shows nothing any more."
        self.assertEqual(self.browser.find_element(By.ID, "share-state").text, text)
        self.assertIsNone(self.shared_marker())
        self.assertEqual(self.browser.find_element(By.ID, "share-label").text, "")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, ".shared-track"))
        self.browser.get(self.server.base + link["url"])  # opened again: the same, and no socket
        self.wait(lambda: self.body_data("state") == "revoked", "the reopened page says the link was revoked")
        self.assertIsNone(self.shared_marker())
        self.assertIsNone(self.body_data("live"))
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_map_renders_and_follows_the_viewer_without_console_errors_while_tiles_are_unreachable(self):
        viewer = Account(self.server, "Vera Viewer")
        viewer.upload((50.4501, 30.5234))
        self.open_and_sign_in(viewer)
        self.wait_for_marker_at(viewer, 50.4501, 30.5234)  # the viewer's own position
        viewer.upload((50.4507, 30.5241))  # as a tracker replaying a walk does: the own marker follows
        self.wait_for_marker_at(viewer, 50.4507, 30.5241)
        self.assertTrue(self.browser.find_elements(By.CSS_SELECTOR, "#map.leaflet-container .leaflet-map-pane"))
        attribution = self.browser.find_element(By.CSS_SELECTOR, ".leaflet-control-attribution").text
        self.assertIn("OpenStreetMap", attribution)
        # Tiles the browser could not fetch are the only errors allowed (they are unreachable on purpose).
        errors = [entry for entry in self.console_entries()
                  if entry["level"] == "SEVERE" and "127.0.0.1:9/" not in entry["message"]]
        self.assertEqual([entry["message"] for entry in errors], [], "console errors besides the unreachable tiles")
        with urllib.request.urlopen(self.server.base + "/", timeout=10) as response:
            policy = response.headers["Content-Security-Policy"]
        self.assertIn("script-src 'self'", policy)
        self.assertNotIn("unsafe-inline", policy)

    @screenshot_on_failure
    def test_friend_marker_appears_moves_and_disappears_when_sharing_pauses(self):
        viewer = Account(self.server, "Vera Viewer")
        friend = Account(self.server, "Olena Kovalenko")
        friend.share_with(viewer)
        self.open_and_sign_in(viewer)
        self.browser.execute_script("document.body.dataset.sameDocument = 'yes'")
        self.assertIsNone(self.marker(friend))
        friend.upload((50.4501, 30.5234), seconds_ago=140)  # "2 minutes ago" for the next 39 s
        marker = self.wait_for_marker_at(friend, 50.4501, 30.5234)
        self.assertEqual(marker.find_element(By.CSS_SELECTOR, ".initials").text, "OK")
        self.assertEqual(marker.find_element(By.CSS_SELECTOR, ".age").text, "2 minutes ago")
        friend.upload((50.4512, 30.5250))
        marker = self.wait_for_marker_at(friend, 50.4512, 30.5250)
        self.assertEqual(marker.find_element(By.CSS_SELECTOR, ".age").text, "just now")
        friend.call("POST", "/v1/sharing/pause")
        self.wait(lambda: self.marker(friend) is None, "the paused friend's marker disappears")
        self.assertEqual(
            self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-same-document"), "yes",
            "the page was not reloaded")

    @screenshot_on_failure
    def test_a_friend_seen_at_about_a_kilometre_moves_live_and_vanishes_into_a_private_zone(self):
        viewer = Account(self.server, "Vera Viewer")
        friend = Account(self.server, "Pia Precise")
        group = friend.call("POST", "/v1/groups", {
            "name": "Approximately", "visibility": {"location": True, "fields": ["fullName"], "precision": "approximate"}})
        friend.call("PUT", f"/v1/groups/{group['id']}/members/{viewer.id}")
        friend.upload((50.4501, 30.5234), seconds_ago=5)
        shown = viewer.call("GET", f"/v1/users/{friend.id}/location")["fix"]
        cell = (shown["latitude"], shown["longitude"])
        self.assertNotEqual(cell, (50.4501, 30.5234), "the viewer gets the cell's centre, not the fix")
        self.open_and_sign_in(viewer)
        self.wait_for_marker_at(friend, *cell)
        # Into a private zone: the marker goes, live (the page watches the channel the visible list names).
        friend.call("POST", "/v1/me/privacy-zones", {"name": "Home", "latitude": 50.47, "longitude": 30.55, "radius": 500})
        friend.upload((50.4701, 30.5501), seconds_ago=3)
        self.wait(lambda: self.marker(friend) is None, "the friend in a private zone has no marker")
        # Out again: back at a cell's centre, never at the fix.
        friend.upload((50.4501, 30.5234))
        self.wait_for_marker_at(friend, *cell)
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_a_friend_without_a_position_is_not_asked_for_and_only_markers_are_counted(self):
        viewer = Account(self.server, "Vera Viewer")
        placed = Account(self.server, "Pavlo Placed")
        unplaced = [Account(self.server, f"Nina Nowhere {index}") for index in range(3)]
        for friend in [placed, *unplaced]:
            friend.share_with(viewer)
        viewer.upload((50.4501, 30.5234))
        placed.upload((50.4510, 30.5240))
        self.open_and_sign_in(viewer)
        self.wait_for_marker_at(placed, 50.4510, 30.5240)
        count = self.browser.find_element(By.ID, "people-count")
        self.wait(lambda: count.text == "1 person on the map", "only the friend with a marker is counted")
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, "#people li")), 4, "all four are listed")
        # The first fix of a friend without a position comes live; the page never asked for their location.
        unplaced[0].upload((50.4520, 30.5250))
        self.wait_for_marker_at(unplaced[0], 50.4520, 30.5250)
        self.wait(lambda: count.text == "2 people on the map", "the new marker is counted")
        missing = [entry["message"] for entry in self.console_entries() if "404" in entry["message"]]
        self.assertEqual(missing, [], "no request for a location the visible list says is unknown")

    @screenshot_on_failure
    def test_a_newcomer_without_a_position_signs_in_without_a_404_and_appears_with_the_first_fix(self):
        viewer = Account(self.server, "Nadia Newcomer")
        self.open_and_sign_in(viewer)
        viewer.upload((50.4501, 30.5234))
        self.wait_for_marker_at(viewer, 50.4501, 30.5234)  # live, on the own channel
        missing = [entry["message"] for entry in self.console_entries() if "404" in entry["message"]]
        self.assertEqual(missing, [], "no request for the own location before there is one")

    @screenshot_on_failure
    def test_a_friend_who_resumes_sharing_reappears_at_once(self):
        viewer = Account(self.server, "Vera Viewer")
        friend = Account(self.server, "Roman Resume")
        friend.share_with(viewer)
        viewer.upload((50.4501, 30.5234))
        friend.upload((50.4510, 30.5240))
        self.open_and_sign_in(viewer)
        signed_in = time.monotonic()
        self.wait_for_marker_at(friend, 50.4510, 30.5240)
        friend.call("POST", "/v1/sharing/pause")
        self.wait(lambda: self.marker(friend) is None, "the paused friend's marker disappears")
        friend.call("POST", "/v1/sharing/resume")
        self.wait_for_marker_at(friend, 50.4510, 30.5240)
        # Brought back by the live event, not by the page's next poll of the visible list (every 20 s).
        self.assertLess(time.monotonic() - signed_in, 20, "the marker came back before the page polled again")

    @screenshot_on_failure
    def test_a_map_without_tiles_credits_no_tile_server(self):
        own = Server(self.binary, tile_url="none")
        saved = self.server
        try:
            viewer = Account(own, "Vera Viewer")
            viewer.upload((50.4501, 30.5234))
            self.server = own
            self.open_and_sign_in(viewer)
            self.wait_for_marker_at(viewer, 50.4501, 30.5234)
            self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-tile"))
            attribution = self.browser.find_element(By.CSS_SELECTOR, ".leaflet-control-attribution").text
            self.assertNotIn("OpenStreetMap", attribution)
        finally:
            self.server = saved
            own.stop()

    @screenshot_on_failure
    def test_group_strip_shows_one_groups_members(self):
        viewer = Account(self.server, "Vera Viewer")
        sister = Account(self.server, "Sofia Sister")
        colleague = Account(self.server, "Kyrylo <i>Colleague</i>")  # a name is text, never markup
        for person in (sister, colleague):
            person.share_with(viewer)
        viewer.share_with(sister, kind="family")
        sister.upload((50.40, 30.50))
        colleague.upload((50.41, 30.51))
        self.open_and_sign_in(viewer)
        self.wait_for_marker_at(sister, 50.40, 30.50)
        self.wait_for_marker_at(colleague, 50.41, 30.51)
        family = self.browser.find_element(By.CSS_SELECTOR, f'#groups [data-group="{viewer.group("family")["id"]}"]')
        family.click()
        self.wait(lambda: self.marker(colleague) is None, "only the Family group's members stay on the map")
        self.assertIsNotNone(self.marker(sister))
        self.assertEqual(self.browser.find_element(By.ID, "people-count").text, "1 person on the map")
        self.browser.find_element(By.CSS_SELECTOR, '#groups [data-group=""]').click()
        self.wait(lambda: self.marker(colleague) is not None, "everyone again")
        row = self.browser.find_element(By.CSS_SELECTOR, f'#people li[data-user-id="{colleague.id}"]')
        self.assertEqual(row.find_element(By.CSS_SELECTOR, ".name").text, "Kyrylo <i>Colleague</i>")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, "#people i, .leaflet-marker-pane i"))

    def map_centre_near(self, lat, lon):
        """Whether the map's centre is within about 10 m of (lat, lon) (a pan moves by whole pixels)."""
        centre = self.browser.find_element(By.ID, "map").get_attribute("data-centre")
        if not centre:
            return False
        at = [float(value) for value in centre.split(",")]
        return abs(at[0] - lat) < 0.0001 and abs(at[1] - lon) < 0.0001

    @screenshot_on_failure
    def test_following_a_friend_keeps_them_centred_until_the_map_is_dragged(self):
        viewer = Account(self.server, "Vera Viewer")
        friend = Account(self.server, "Fiona Follow")
        friend.share_with(viewer)
        viewer.upload((50.4501, 30.5234))
        friend.upload((50.4600, 30.5300))
        self.open_and_sign_in(viewer)
        self.wait_for_marker_at(friend, 50.46, 30.53)
        follow = f'#people li[data-user-id="{friend.id}"] button.follow'
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, follow).text, "Follow")
        self.browser.find_element(By.CSS_SELECTOR, follow).click()
        self.wait(lambda: self.map_centre_near(50.46, 30.53), "the followed friend is brought to the centre")
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, follow).text, "Stop following")
        friend.upload((50.4700, 30.5500))
        self.wait(lambda: self.map_centre_near(50.47, 30.55), "the map follows the friend's next fix")
        followed = self.browser.find_element(By.ID, "map").get_attribute("data-centre")
        self.drag_map(60, 0)  # looking elsewhere ends following
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, follow).get_attribute("data-following")
                  == "false", "following stops when the map is dragged")
        self.wait(lambda: self.browser.find_element(By.ID, "map").get_attribute("data-centre") != followed,
                  "the drag ended")
        centre = self.browser.find_element(By.ID, "map").get_attribute("data-centre")
        friend.upload((50.4800, 30.5600))
        self.wait_for_marker_at(friend, 50.48, 30.56)
        self.assertEqual(self.browser.find_element(By.ID, "map").get_attribute("data-centre"), centre,
                         "the map stays where it was dragged")

    @screenshot_on_failure
    def test_blacklisted_viewer_never_sees_the_owner(self):
        viewer = Account(self.server, "Boris Blocked")
        owner = Account(self.server, "Olha Owner")
        control = Account(self.server, "Petro Shares")
        owner.share_with(viewer)
        owner.share_with(viewer, kind="blacklist")
        control.share_with(viewer)
        self.open_and_sign_in(viewer)
        owner.upload((50.44, 30.51))
        control.upload((50.45, 30.52))  # stored after the owner's fix: its event follows the owner's
        self.wait_for_marker_at(control, 50.45, 30.52)
        self.assertIsNone(self.marker(owner))
        listed = [row.get_attribute("data-user-id") for row in self.browser.find_elements(By.CSS_SELECTOR, "#people li")]
        self.assertEqual(listed, [control.id])

    @screenshot_on_failure
    def test_history_today_draws_and_exports_the_uploaded_track_and_russian_plurals(self):
        walker = Account(self.server, "Walter Walker")
        walker.upload((50.4501, 30.5234), (50.4510, 30.5240), (50.4520, 30.5251), seconds_ago=5)
        self.open_and_sign_in(walker)
        self.show("history")
        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-count") == "3", "today's history has the 3 uploaded fixes")
        self.assertEqual(summary.get_attribute("data-preset"), "today")
        self.assertEqual(summary.text, "3 points")
        self.browser.find_element(By.CSS_SELECTOR, '[data-export="gpx"]').click()
        exported = os.path.join(self.downloads, "meridian-history-today.gpx")
        self.wait(lambda: os.path.exists(exported) and "</gpx>" in read(exported), "the GPX export is saved")
        self.assertEqual(read(exported).count("<trkpt"), 3)
        uploaded = {(50.4501, 30.5234), (50.4510, 30.5240), (50.4520, 30.5251)}
        self.browser.find_element(By.CSS_SELECTOR, '[data-export="csv"]').click()
        exported = os.path.join(self.downloads, "meridian-history-today.csv")
        self.wait(lambda: os.path.exists(exported) and read(exported).count("\n") >= 4, "the CSV export is saved")
        self.assertEqual(len([line for line in read(exported).splitlines()[1:] if line.strip()]), 3)
        self.browser.find_element(By.CSS_SELECTOR, '[data-export="geojson"]').click()
        exported = os.path.join(self.downloads, "meridian-history-today.geojson")

        def positions():  # every (lat, lon) of the GeoJSON's geometries, whatever their type
            found = set()

            def walk(value):
                if isinstance(value, list) and len(value) >= 2 and all(isinstance(n, (int, float)) for n in value):
                    found.add((round(value[1], 6), round(value[0], 6)))
                elif isinstance(value, list):
                    for item in value:
                        walk(item)
            for feature in json.loads(read(exported))["features"]:
                walk(feature["geometry"]["coordinates"])
            return found

        self.wait(lambda: os.path.exists(exported) and read(exported).rstrip().endswith("}"), "the GeoJSON is saved")
        self.assertEqual(positions(), uploaded)
        # An SVG path from the first point with a line on (redrawn when the map zooms to the track: waited for).
        self.wait(lambda: re.match(r"^M[-\d.]+ [-\d.]+L", self.browser.find_element(
            By.CSS_SELECTOR, "path.history-track").get_attribute("d") or ""), "the track is drawn as a line")
        Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
        self.wait(lambda: summary.text == "3 точки", "Russian 'few' form: 3 точки")
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, '#nav [data-view="history"]').text, "История")
        self.show("map")
        self.wait(lambda: self.browser.find_element(By.ID, "people-count").text == "0 человек на карте",
                  "Russian 'many' form: 0 человек на карте")
        Select(self.browser.find_element(By.ID, "language")).select_by_value("en")
        self.wait(lambda: self.browser.find_element(By.ID, "people-count").text == "0 people on the map",
                  "back in English")

    @screenshot_on_failure
    def test_history_page_switches_live_only_on_deleting_the_history_and_off_again(self):
        walker = Account(self.server, "Lena Live")
        walker.upload((50.4501, 30.5234), (50.4510, 30.5240), (50.4520, 30.5251), seconds_ago=5)
        self.open_and_sign_in(walker)
        self.show("history")
        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-count") == "3", "today's history has the 3 uploaded fixes")
        switch = self.browser.find_element(By.ID, "live-only")
        self.assertFalse(switch.is_selected())
        switch.click()
        self.browser.switch_to.alert.accept()  # "Also delete the history stored so far?"
        state = self.browser.find_element(By.ID, "live-only-state")
        self.wait(lambda: "were deleted" in state.text, "the page says how many points were deleted")
        self.assertTrue(walker.call("GET", "/v1/me")["settings"]["liveOnly"])
        self.wait(lambda: summary.get_attribute("data-count") == "1", "only the last position is left")
        self.assertEqual(len(walker.call("GET", "/v1/history?preset=allTime")["fixes"]), 1)
        switch.click()
        self.wait(lambda: state.text == "Your history is kept again from now on.", "turned off")
        self.assertFalse(walker.call("GET", "/v1/me")["settings"]["liveOnly"])
        self.assertFalse(switch.is_selected())
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_history_custom_range_shows_and_exports_only_the_days_chosen(self):
        walker = Account(self.server, "Rita Range")
        day = 86400000
        now = int(time.time() * 1000)
        walker.upload_at([(now - 10 * day, 50.40, 30.50), (now - 3 * day - 2000, 50.41, 30.51),
                          (now - 3 * day, 50.42, 30.52), (now - 1000, 50.45, 30.55)])
        self.open_and_sign_in(walker)
        self.show("history")
        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-preset") == "today", "today's history first")

        def local_day(milliseconds):  # the day in the browser's time zone, as a date field holds it
            return self.browser.execute_script("return new Date(arguments[0]).toLocaleDateString('sv')", milliseconds)

        def choose(first, last):
            for field, value in (("range-from", first), ("range-to", last)):
                self.browser.execute_script(
                    "arguments[0].value = arguments[1]", self.browser.find_element(By.ID, field), value)
            self.browser.find_element(By.ID, "range-apply").click()

        first, last = local_day(now - 4 * day), local_day(now - 2 * day)
        choose(first, last)
        self.wait(lambda: summary.get_attribute("data-range") == f"{first}/{last}"
                  and summary.get_attribute("data-count") == "2", "the two fixes of three days ago, not the others")
        self.assertEqual(summary.get_attribute("data-preset"), "custom")
        self.assertEqual(summary.text, "2 points")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, "#presets button.active"), "no preset is chosen")
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, "path.history-track"), "the range's track")
        self.browser.find_element(By.CSS_SELECTOR, '[data-export="gpx"]').click()
        exported = os.path.join(self.downloads, f"meridian-history-{first}_{last}.gpx")
        self.wait(lambda: os.path.exists(exported) and "</gpx>" in read(exported), "the range's GPX export is saved")
        self.assertEqual(read(exported).count("<trkpt"), 2)
        choose(last, first)  # backwards: refused with a message, the shown range stays
        error = self.browser.find_element(By.ID, "range-error")
        self.wait(lambda: error.is_displayed(), "a backwards range is refused")
        self.assertEqual(error.text, "The first day must not be after the last.")
        self.assertEqual(summary.get_attribute("data-range"), f"{first}/{last}")
        self.browser.find_element(By.CSS_SELECTOR, '#presets [data-preset="allTime"]').click()
        self.wait(lambda: summary.get_attribute("data-count") == "4", "all time again: every fix")

    @screenshot_on_failure
    def test_history_draws_a_short_history_as_its_track_and_lists_stays(self):
        traveller = Account(self.server, "Taras Traveller")
        now = int(time.time() * 1000)
        stay = [(now - minutes * 60000, 50.4501 + minutes * 0.00001, 30.5234) for minutes in range(8, 0, -1)]
        traveller.upload_at(stay + [(now - 20000, 49.8397, 24.0297)])  # a stay in Kyiv, then Lviv
        self.open_and_sign_in(traveller)
        self.show("history")
        self.browser.find_element(By.CSS_SELECTOR, '#presets [data-preset="allTime"]').click()
        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-preset") == "allTime" and summary.get_attribute("data-count") == "9",
                  "all time has the 9 fixes, the map framed to show them all")
        # Few fixes: the map endpoint answers the track (Kyiv to Lviv), not cells.
        self.assertEqual(summary.get_attribute("data-shown"), "tracks")
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, "path.history-track"), "the track is drawn")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, "path.history-cluster"))
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#visits li.visit")) == 1, "one stay listed")
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "path.history-visit")) == 1, "the stay drawn")

    @screenshot_on_failure
    def test_history_stays_are_named_merged_split_and_set_as_home_and_each_correction_undone(self):
        walker = Account(self.server, "Stas Stays")
        now = int(time.time() * 1000)
        # Two stays 1 km apart (20 and 10 minutes, a fix a minute), then a fix in Lviv that ends the second.
        first = [(now - minutes * 60000, 50.4501, 30.5234) for minutes in range(70, 49, -1)]
        second = [(now - minutes * 60000, 50.4601, 30.5234) for minutes in range(30, 19, -1)]
        walker.upload_at(first + second + [(now - 20000, 49.8397, 24.0297)])
        self.open_and_sign_in(walker)
        self.show("history")
        self.browser.find_element(By.CSS_SELECTOR, '#presets [data-preset="allTime"]').click()

        def stays():
            return self.browser.find_elements(By.CSS_SELECTOR, "#visits li.visit")

        def corrections():
            return self.browser.find_elements(By.CSS_SELECTOR, "#stay-corrections li.stay-correction")

        def edit(stay):
            details = stay.find_element(By.CSS_SELECTOR, "details.stay-edit")
            if not details.get_attribute("open"):
                details.find_element(By.TAG_NAME, "summary").click()
            return details

        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-preset") == "allTime" and summary.get_attribute("data-count") == "33",
                  "all time drawn")
        self.wait(lambda: len(stays()) == 2, "two stays listed")
        # One day of history proposes no home.
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, "#home-work .home-work-home")
                         .get_attribute("data-source"), "none")

        # Name the first stay's place.
        details = edit(stays()[0])
        name = details.find_element(By.CSS_SELECTOR, "input.stay-name-input")
        name.send_keys("Blue Cup")
        details.find_element(By.CSS_SELECTOR, "button.stay-rename-button").click()
        self.wait(lambda: [row.get_attribute("data-kind") for row in corrections()] == ["rename"], "the rename listed")
        self.wait(lambda: stays()[0].find_elements(By.CSS_SELECTOR, ".stay-name")
                  and stays()[0].find_element(By.CSS_SELECTOR, ".stay-name").text == "Blue Cup", "the stay named")

        # The second stay is home: set, marked on the stay, and kept in the account.
        edit(stays()[1]).find_element(By.CSS_SELECTOR, "button.stay-set-home").click()
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, "#home-work .home-work-home")
                  .get_attribute("data-source") == "set", "home set")
        self.wait(lambda: stays()[1].find_elements(By.CSS_SELECTOR, '.stay-mark[data-mark="home"]'), "the stay marked")
        stored = walker.call("GET", "/v1/me/home-work")["home"]
        self.assertAlmostEqual(stored["lat"], 50.4601, places=6)
        self.assertAlmostEqual(stored["lon"], 30.5234, places=6)

        # Merge the two: one stay; undo the merge: two again.
        edit(stays()[0]).find_element(By.CSS_SELECTOR, "button.stay-merge-next").click()
        self.wait(lambda: len(stays()) == 1 and len(corrections()) == 2, "the stays merged, the merge listed")
        merge = [row for row in corrections() if row.get_attribute("data-kind") == "merge"][0]
        merge.find_element(By.CSS_SELECTOR, "button.undo-correction").click()
        self.wait(lambda: len(stays()) == 2 and len(corrections()) == 1, "the merge undone")

        # Split the first stay at its middle (the time field's default): three stays.
        details = edit(stays()[0])
        details.find_element(By.CSS_SELECTOR, "button.stay-split-button").click()
        self.wait(lambda: len(stays()) == 3 and [row.get_attribute("data-kind") for row in corrections()]
                  == ["rename", "split"], "the stay split, the split listed")
        self.assertEqual(len(walker.call("GET", "/v1/history/visits?preset=allTime")["visits"]), 3)

        # Clear home: proposed from nothing again.
        self.browser.find_element(By.CSS_SELECTOR, "#home-work button.clear-home").click()
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, "#home-work .home-work-home")
                  .get_attribute("data-source") == "none", "home cleared")
        self.assertNotIn("home", walker.call("GET", "/v1/me/home-work"))

    def import_job(self, account, body, seconds=120):
        """Starts an import of `body` (bytes) over the API; answers the job once it ended (within `seconds`)."""
        request = urllib.request.Request(self.server.base + "/v1/history/imports", data=body, method="POST", headers={
            "Content-Type": "application/octet-stream", "Authorization": f"Bearer {account.token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            job = json.loads(response.read())
        if job["state"] not in ("checking", "storing"):
            return job
        # The suite's one wait (WebDriverWait's polling): the job's state is asked until it ends.
        return self.wait(lambda: (lambda answer: answer if answer["state"] not in ("checking", "storing") else None)(
            account.call("GET", f"/v1/history/imports/{job['id']}")), "the import ended", seconds=seconds)

    @staticmethod
    def gpx(points):
        """A GPX 1.1 track of `points` (UTC milliseconds, lat, lon)."""
        def when(milliseconds):
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(milliseconds // 1000)) + f".{milliseconds % 1000:03d}Z"
        rows = "".join(f'<trkpt lat="{lat}" lon="{lon}"><time>{when(at)}</time></trkpt>\n' for at, lat, lon in points)
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<gpx version="1.1" creator="browser test" '
                'xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>\n' + rows + "</trkseg></trk></gpx>\n")

    @screenshot_on_failure
    def test_history_imports_a_chosen_file_with_its_progress_draws_it_and_says_why_a_broken_file_failed(self):
        importer = Account(self.server, "Ivan Importer")
        now = int(time.time() * 1000)
        walk = [(now - 3600000 + index * 5000, round(50.40 + index * 0.0001, 6), round(30.50 + index * 0.0001, 6))
                for index in range(300)]
        folder = tempfile.mkdtemp(prefix="meridian-import-")
        good = os.path.join(folder, "walk.gpx")
        with open(good, "w", encoding="utf-8") as file:
            file.write(self.gpx(walk))
        self.open_and_sign_in(importer)
        self.show("history")
        self.browser.find_element(By.CSS_SELECTOR, '#presets [data-preset="allTime"]').click()
        jobs = self.browser.find_element(By.ID, "import-jobs")
        self.wait(lambda: jobs.text == "No imports yet.", "no imports listed yet")
        self.browser.find_element(By.ID, "import-file").send_keys(good)
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, '#import-jobs li.import-job[data-state="done"]'),
                  "the import is listed and followed until done")
        row = self.browser.find_element(By.CSS_SELECTOR, "#import-jobs li.import-job")
        self.assertIn("Imported", row.text)
        self.assertIn("300 points read · 300 new points stored", row.text)
        job = importer.call("GET", "/v1/history/imports")["items"][0]
        self.assertEqual((job["state"], job["stored"], job["format"]), ("done", 300, "gpx"))
        self.assertEqual(row.get_attribute("data-id"), job["id"])
        # The history is shown again when the import ends: the walk appears as its track.
        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-count") == "300", "all time now holds the 300 imported fixes")
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, "path.history-track"), "the walk is drawn")

        # A file with a broken point: the job fails, the row says why (the server's message), nothing more stored.
        broken_walk = self.gpx([(now - 7200000 + index * 5000, 50.30, 30.40) for index in range(5)])
        broken_walk = broken_walk.replace('lat="50.3"', 'lat="north"', 1)
        broken = os.path.join(folder, "broken.gpx")
        with open(broken, "w", encoding="utf-8") as file:
            file.write(broken_walk)
        self.browser.find_element(By.ID, "import-file").send_keys(broken)
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, '#import-jobs li.import-job[data-state="failed"]'),
                  "the broken file's import fails")
        failed = importer.call("GET", "/v1/history/imports")["items"][0]
        self.assertEqual(failed["state"], "failed")
        error = self.browser.find_element(By.CSS_SELECTOR, '#import-jobs li.import-job[data-state="failed"] .import-error')
        self.assertEqual(error.text, failed["error"]["message"])
        self.assertIn("not valid", error.text)
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, "#import-jobs li.import-job")), 2)
        self.assertEqual(len(importer.call("GET", "/v1/history?preset=allTime&limit=1000")["fixes"]), 300)
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_history_all_time_of_5000000_points_shows_cells_within_2_seconds(self):
        # Issue 38's size: 5,000,000 points (MERIDIAN_BROWSER_HISTORY_POINTS for a quicker run by hand).
        points = int(os.environ.get("MERIDIAN_BROWSER_HISTORY_POINTS", "5000000"))
        heavy = Account(self.server, "Hanna Heavy")
        start = int(time.time() * 1000) - points * 10000
        # Sweeps north and back from Kyiv eastwards, a fix every 10 s: more fixes than a screen shows at any zoom.
        lines = ["timestamp,latitude,longitude,horizontalAccuracy"]
        for index in range(points):
            step = index % 2000
            lines.append(f"{start + index * 10000},{50 + step * 0.0002:.5f},{30 + (index // 2000) * 0.01:.5f},5")
        begun = time.monotonic()
        job = self.import_job(heavy, ("\n".join(lines) + "\n").encode(), seconds=900)
        imported = time.monotonic() - begun
        self.assertEqual((job["state"], job["stored"]), ("done", points), job)
        self.open_and_sign_in(heavy)
        self.show("history")
        summary = self.browser.find_element(By.ID, "history-summary")
        self.wait(lambda: summary.get_attribute("data-preset") == "today", "today's history first")
        # Timed in the page (from the click to the cells on the map), not through the driver's round trips.
        elapsed = self.browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const summary = document.getElementById('history-summary');
            const start = performance.now();
            document.querySelector('#presets [data-preset="allTime"]').click();
            (function check() {
              if (summary.dataset.preset === 'allTime' && summary.dataset.shown === 'cells'
                  && document.querySelector('path.history-cluster')) done((performance.now() - start) / 1000);
              else setTimeout(check, 10);
            })();
            """)
        print(f"\n  {points:,} points imported in {imported:.1f} s; all time drawn {elapsed:.2f} s after choosing it",
              file=sys.stderr)
        self.assertLess(elapsed, 2.0, f"all time drawn {elapsed:.2f} s after choosing it")
        self.assertGreater(int(summary.get_attribute("data-count")), points // 2)
        # Zoomed in: the map endpoint answers each view again, and up close the few sweeps in it are tracks.
        zoom_in = self.browser.find_element(By.CSS_SELECTOR, ".leaflet-control-zoom-in")
        for _ in range(12):
            if summary.get_attribute("data-shown") == "tracks":
                break
            zoom = int(summary.get_attribute("data-zoom"))
            zoom_in.click()
            self.wait(lambda: summary.get_attribute("data-zoom") == str(zoom + 1), "the zoomed view is drawn again")
        self.wait(lambda: summary.get_attribute("data-shown") == "tracks"
                  and self.browser.find_elements(By.CSS_SELECTOR, "path.history-track"), "the sweeps' tracks up close")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, "path.history-cluster"))
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_where_ive_been_groups_two_towns_by_country_and_region_in_the_pages_language_with_statistics(self):
        self.admin(["geo", "import", "Tools/geonames/extract"])  # the shipped extract; again is an update
        traveller = Account(self.server, "Gennady Geo")
        now = int(time.time() * 1000)
        tomsk = [(now - minutes * 60000, 56.4977 + minutes * 0.00001, 84.9744) for minutes in range(40, 32, -1)]
        seversk = [(now - minutes * 60000, 56.6031 + minutes * 0.00001, 84.8809) for minutes in range(10, 2, -1)]
        traveller.upload_at(tomsk + seversk)  # a stay in Tomsk, then one in Seversk (Tomsk Oblast, Russia)
        self.open_and_sign_in(traveller)
        self.show("history")
        self.browser.find_element(By.CSS_SELECTOR, '#presets [data-preset="allTime"]').click()
        where = self.browser.find_element(By.ID, "where")

        def names(level, under=""):
            return sorted(element.text for element in self.browser.find_elements(
                By.CSS_SELECTOR, f'#where-places {under} li[data-level="{level}"] > .name'))

        def shown(language):
            return where.get_attribute("data-language") == language and "preset=allTime" in (
                where.get_attribute("data-query") or "")

        self.wait(lambda: shown("en") and len(names("locality")) == 2, "both towns of all time, in English")
        self.assertEqual(names("country"), ["Russia"])
        self.assertEqual(names("admin1", 'li[data-level="country"]'), ["Tomsk"])
        self.assertEqual(names("locality", 'li[data-level="country"] li[data-level="admin1"]'), ["Seversk", "Tomsk"])
        country = self.browser.find_element(By.CSS_SELECTOR, '#where-places li[data-level="country"]')
        self.assertIn("2 stays", country.text)
        stats = self.browser.find_element(By.ID, "where-stats")
        self.assertEqual((stats.get_attribute("data-countries"), stats.get_attribute("data-towns")), ("1", "2"))
        total = stats.find_element(By.CSS_SELECTOR, ".where-total").text
        self.assertIn("1 country", total)
        self.assertIn("2 towns", total)
        self.assertGreater(int(stats.get_attribute("data-distance")), 10000)  # Tomsk → Seversk is about 13 km
        # Drawn: each town a circle where its stay was, and a bar per month of the distance.
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-overlay-pane path.where-marker"))
                  == 2, "both towns on the map")
        months = traveller.call("GET", "/v1/history/stats?preset=allTime")["months"]
        bars = stats.find_elements(By.CSS_SELECTOR, "svg.where-chart rect")
        self.assertEqual([bar.get_attribute("data-period") for bar in bars], [month["period"] for month in months])
        self.browser.execute_script("arguments[0].scrollIntoView()", stats)
        self.screenshot("where")
        Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
        self.wait(lambda: shown("ru") and names("locality") == ["Северск", "Томск"], "the towns' Russian names")
        self.assertEqual(names("country"), ["Российская Федерация"])
        self.assertEqual(names("locality", 'li[data-level="country"] li[data-level="admin1"]'), ["Северск", "Томск"])
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, '#where h2').text, "Где я был")
        total = self.browser.find_element(By.CSS_SELECTOR, "#where-stats .where-total").text
        self.assertIn("1 страна", total)
        self.assertIn("2 города", total)
        Select(self.browser.find_element(By.ID, "language")).select_by_value("en")
        self.wait(lambda: shown("en") and names("locality") == ["Seversk", "Tomsk"], "back in English")
        self.show("map")
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-overlay-pane path.where-marker"), [])
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_sharing_page_pauses_resumes_and_sets_field_audiences(self):
        person = Account(self.server, "Sasha Sharer")
        self.open_and_sign_in(person)
        self.show("sharing")
        state = self.browser.find_element(By.ID, "sharing-state")
        self.wait(lambda: state.get_attribute("data-paused") == "false", "sharing is on")
        self.browser.find_element(By.ID, "pause").click()
        self.wait(lambda: state.get_attribute("data-paused") == "true", "sharing is paused on the page")
        self.assertTrue(person.call("GET", "/v1/me")["sharing"]["paused"])
        self.browser.find_element(By.ID, "resume").click()
        self.wait(lambda: state.get_attribute("data-paused") == "false", "sharing resumed on the page")
        self.assertFalse(person.call("GET", "/v1/me")["sharing"].get("paused", False))
        friend = Account(self.server, "Fedir Friend")
        person.share_with(friend)
        friend.share_with(person)  # so the friend's name is visible to the person
        self.show("map")
        self.show("sharing")  # the groups are read again
        friends = person.group("friends")["id"]
        member = f'#group-list li[data-group="{friends}"] li[data-user-id="{friend.id}"] .member-name'
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, member).text == "Fedir Friend",
                  "the Friends group lists its member by name")
        phone = Select(self.browser.find_element(By.CSS_SELECTOR, '#visibility select[data-field="phone"]'))
        phone.select_by_value("nobody")
        self.wait(lambda: person.call("GET", "/v1/me")["profile"]["audience"].get("phone") == "nobody",
                  "the phone number's audience is nobody")
        self.show("map")
        self.show("sharing")
        self.wait(lambda: Select(self.browser.find_element(
            By.CSS_SELECTOR, '#visibility select[data-field="phone"]')).first_selected_option.get_attribute("value")
            == "nobody", "the page shows the stored audience")

    @screenshot_on_failure
    def test_sharing_page_makes_copies_lists_and_revokes_share_links(self):
        person = Account(self.server, "Lina Linker")
        person.upload((50.4501, 30.5234))
        self.open_and_sign_in(person)
        self.show("sharing")
        links = self.browser.find_element(By.ID, "share-links")
        self.wait(lambda: links.text == "No share links yet.", "no links yet")
        self.browser.find_element(By.ID, "share-link-label").send_keys("Walk home")
        Select(self.browser.find_element(By.ID, "share-link-duration")).select_by_value("hours8")
        self.browser.find_element(By.ID, "share-link-track").click()
        self.browser.find_element(By.ID, "share-link-create").click()
        address = self.browser.find_element(By.ID, "share-link-address")
        self.wait(lambda: address.get_attribute("value").startswith(self.server.base + "/s/"), "the new link's address")
        stored = person.call("GET", "/v1/share-links")["items"]
        self.assertEqual([(link["label"], link["state"], link["track"]) for link in stored],
                         [("Walk home", "active", True)])
        hours = (stored[0]["until"] - stored[0]["createdAt"]) / 3_600_000
        self.assertAlmostEqual(hours, 8, delta=0.1)
        row = f'#share-links li[data-id="{stored[0]["id"]}"]'
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, row).get_attribute("data-state") == "active",
                  "the list shows the active link")
        self.assertIn("Walk home", self.browser.find_element(By.CSS_SELECTOR, row).text)
        self.screenshot("share-links")
        # The address works without an account.
        token = address.get_attribute("value").rsplit("/", 1)[1]
        with urllib.request.urlopen(f"{self.server.base}/v1/shared/{token}", timeout=10) as response:
            self.assertEqual(json.loads(response.read())["label"], "Walk home")
        # Who is looking: the link's page open in another tab is counted on the owner's list.
        owner_tab = self.browser.current_window_handle
        page = address.get_attribute("value")
        self.browser.switch_to.new_window("tab")
        self.browser.get(page)
        self.wait(lambda: person.call("GET", "/v1/share-links")["items"][0].get("viewers") == 1, "the page counted")
        self.browser.switch_to.window(owner_tab)
        self.show("map")
        self.show("sharing")
        self.wait(lambda: "1 viewer now" in self.browser.find_element(By.CSS_SELECTOR, row).text,
                  "the list shows one page open")
        for handle in self.browser.window_handles:
            if handle != owner_tab:
                self.browser.switch_to.window(handle)
                self.browser.close()
        self.browser.switch_to.window(owner_tab)
        self.wait(lambda: person.call("GET", "/v1/share-links")["items"][0].get("viewers") == 0, "the page closed")
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button").click()
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, row).get_attribute("data-state") == "revoked",
                  "the list shows the link revoked")
        self.assertEqual(person.call("GET", "/v1/share-links")["items"][0]["state"], "revoked")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, f"{row} button"))  # nothing left to revoke
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_each_group_sees_the_profile_fields_chosen_for_it(self):
        person = Account(self.server, "Stas Status")
        person.call("PATCH", "/v1/me/profile", {"status": "At the gym", "birthday": "1990-04-12"})
        friend = Account(self.server, "Fedir Friend")
        person.share_with(friend)
        friends = person.group("friends")["id"]

        def friend_sees():
            profile = friend.call("GET", f"/v1/users/{person.id}/profile")
            return {field for field in ("fullName", "status", "birthday") if field in profile}

        self.assertEqual(friend_sees(), {"fullName", "status"})  # Friends' standard fields
        self.open_and_sign_in(person)
        self.show("sharing")

        def box(field, group=friends):
            return self.browser.find_element(
                By.CSS_SELECTOR, f'#visibility input.group-field[data-group="{group}"][data-field="{field}"]')

        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, "#visibility input.group-field"),
                  "a switch per group and field")
        self.assertEqual(self.browser.find_element(
            By.CSS_SELECTOR, f'#visibility th[data-group="{friends}"]').text, "Friends")
        self.assertTrue(box("status").is_selected())
        self.assertFalse(box("birthday").is_selected())
        self.assertTrue(box("birthday", person.group("family")["id"]).is_selected())
        box("status").click()
        self.wait(lambda: "status" not in person.group("friends")["visibility"]["fields"], "Friends lose the status")
        self.assertEqual(friend_sees(), {"fullName"})
        self.wait(lambda: not box("status").is_selected(), "the page shows what is stored")
        box("birthday").click()
        self.wait(lambda: "birthday" in person.group("friends")["visibility"]["fields"], "Friends see the birthday")
        self.assertEqual(friend_sees(), {"fullName", "birthday"})
        self.assertTrue(person.group("friends")["visibility"]["location"], "the location switch is kept")
        Select(self.browser.find_element(By.CSS_SELECTOR, '#visibility select[data-field="birthday"]')) \
            .select_by_value("nobody")
        self.wait(lambda: not box("birthday").is_enabled(), "groups don't choose a field nobody sees")
        self.assertEqual(friend_sees(), {"fullName"})
        Select(self.browser.find_element(By.ID, "language")).select_by_value("uk")
        try:
            self.wait(lambda: self.browser.find_element(
                By.CSS_SELECTOR, f'#visibility th[data-group="{friends}"]').text == "Друзі", "Ukrainian")
        finally:
            Select(self.browser.find_element(By.ID, "language")).select_by_value("en")
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_sharing_until_a_chosen_time_and_members_found_by_name(self):
        person = Account(self.server, "Ulyana Until")
        newcomer = Account(self.server, "Mykola Newcomer")
        newcomer.call("PATCH", "/v1/me/profile", {"audience": {"fullName": "everyone"}})  # found by name
        self.open_and_sign_in(person)
        self.show("sharing")
        state = self.browser.find_element(By.ID, "sharing-state")
        self.wait(lambda: state.get_attribute("data-paused") == "false", "sharing is on")
        local = "return d.toLocaleString('sv').slice(0, 16).replace(' ', 'T')"  # as a datetime-local field holds it
        past = self.browser.execute_script(f"const d = new Date(Date.now() - 3600000); {local}")
        until, tomorrow = self.browser.execute_script(
            "const d = new Date(); d.setDate(d.getDate() + 1); d.setHours(18, 30, 0, 0); "
            f"return [d.getTime(), (() => {{ {local} }})()]")
        field = self.browser.find_element(By.ID, "until-at")
        self.browser.execute_script("arguments[0].value = arguments[1]", field, past)
        self.browser.find_element(By.ID, "until-apply").click()
        error = self.browser.find_element(By.ID, "until-error")
        self.wait(lambda: error.is_displayed(), "a time already past is refused")
        self.assertEqual(error.text, "Choose a time in the future.")
        self.assertIsNone(person.call("GET", "/v1/me")["sharing"].get("until"))
        self.browser.execute_script("arguments[0].value = arguments[1]", field, tomorrow)
        self.browser.find_element(By.ID, "until-apply").click()
        self.wait(lambda: state.get_attribute("data-until") == str(until), "sharing until tomorrow 18:30")
        self.assertFalse(error.is_displayed())
        self.assertEqual(person.call("GET", "/v1/me")["sharing"]["until"], until)
        self.assertTrue(state.text.startswith("Shared until "), state.text)

        self.browser.find_element(By.ID, "people-query").send_keys("Mykola")
        self.browser.find_element(By.ID, "people-search").click()
        found = f'#found li[data-user-id="{newcomer.id}"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, found), "the newcomer is found by name")
        self.assertEqual(self.browser.find_element(By.ID, "found-count").text, "1 person found")
        family = person.group("family")["id"]
        Select(self.browser.find_element(By.CSS_SELECTOR, f"{found} select")).select_by_value(family)
        self.browser.find_element(By.CSS_SELECTOR, f"{found} button.add-member").click()
        member = f'#group-list li[data-group="{family}"] li[data-user-id="{newcomer.id}"]'
        self.wait(lambda: [element.text for element in self.browser.find_elements(
            By.CSS_SELECTOR, f"{member} .member-name")] == ["Mykola Newcomer"], "the Family group lists the newcomer")
        self.assertIn(newcomer.id, person.group("family")["members"])
        self.browser.find_element(By.CSS_SELECTOR, f"{member} button.remove-member").click()
        self.wait(lambda: not self.browser.find_elements(By.CSS_SELECTOR, member), "the newcomer leaves Family")
        self.assertNotIn(newcomer.id, person.group("family")["members"])

    @screenshot_on_failure
    def test_one_groups_sharing_deadline_set_shown_expired_and_lifted(self):
        person = Account(self.server, "Galyna Deadline")
        family, friends, blacklist = (person.group(kind)["id"] for kind in ("family", "friends", "blacklist"))
        self.open_and_sign_in(person)
        self.show("sharing")
        row = '#group-list li[data-group="{}"]'.format
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, f"{row(family)} .group-until"),
                  "Family's deadline form is shown")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, f"{row(blacklist)} .group-until"),
                         "the Blacklist takes no deadline")

        def deadline(group):
            return self.browser.find_element(By.CSS_SELECTOR, f"{row(group)} .group-until")

        def submit(group, value):
            field = self.browser.find_element(By.CSS_SELECTOR, f"{row(group)} input.group-until-at")
            self.browser.execute_script("arguments[0].value = arguments[1]", field, value)
            self.browser.find_element(By.CSS_SELECTOR, f"{row(group)} button.group-until-apply").click()

        local = "return d.toLocaleString('sv').slice(0, 16).replace(' ', 'T')"  # as a datetime-local field holds it
        past = self.browser.execute_script(f"const d = new Date(Date.now() - 3600000); {local}")
        until, tomorrow = self.browser.execute_script(
            "const d = new Date(); d.setDate(d.getDate() + 1); d.setHours(18, 30, 0, 0); "
            f"return [d.getTime(), (() => {{ {local} }})()]")
        submit(family, past)
        error = f"{row(family)} .group-until-error"
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, error).is_displayed(), "a past time is refused")
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, error).text, "Choose a time in the future.")
        self.assertFalse(person.call("GET", "/v1/me")["sharing"].get("groupUntil"))

        submit(family, tomorrow)
        self.wait(lambda: deadline(family).get_attribute("data-until") == str(until), "Family sees until tomorrow")
        sharing = person.call("GET", "/v1/me")["sharing"]
        self.assertEqual(sharing.get("groupUntil"), {family: until}, "the deadline is Family's only")
        self.assertIsNone(sharing.get("until"), "sharing with everyone has no deadline")
        self.assertEqual(deadline(family).get_attribute("data-expired"), "false")
        state = self.browser.find_element(By.CSS_SELECTOR, f"{row(family)} .group-until-state").text
        self.assertTrue(state.startswith("sees my location until "), state)
        self.assertNotIn("expired", state)
        self.assertEqual(deadline(friends).get_attribute("data-until"), "")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, f"{row(friends)} .group-until-clear"))

        soon = int(time.time() * 1000) + 1500  # Friends' deadline set elsewhere; it passes while the page is open
        person.call("POST", "/v1/sharing/until", {"until": soon, "groupId": friends})

        def friends_expired():
            self.show("map")
            self.show("sharing")  # the sharing state is read again
            return deadline(friends).get_attribute("data-expired") == "true"

        self.wait(friends_expired, "Friends' deadline shown as expired once past")
        state = self.browser.find_element(By.CSS_SELECTOR, f"{row(friends)} .group-until-state").text
        self.assertTrue(state.startswith("saw my location until ") and state.endswith("(expired)"), state)
        self.assertEqual(deadline(family).get_attribute("data-until"), str(until))

        self.browser.find_element(By.CSS_SELECTOR, f"{row(family)} button.group-until-clear").click()
        self.wait(lambda: deadline(family).get_attribute("data-until") == "", "Family's deadline is lifted")
        self.assertEqual(person.call("GET", "/v1/me")["sharing"].get("groupUntil"), {friends: soon})
        self.browser.find_element(By.CSS_SELECTOR, f"{row(friends)} button.group-until-clear").click()
        self.wait(lambda: deadline(friends).get_attribute("data-until") == "", "Friends' deadline is lifted")
        self.assertFalse(person.call("GET", "/v1/me")["sharing"].get("groupUntil"))
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_sharing_page_sets_a_groups_precision_and_draws_lists_and_deletes_a_privacy_zone(self):
        person = Account(self.server, "Zoya Zones")
        person.upload((50.4501, 30.5234))
        self.open_and_sign_in(person)
        self.wait_for_marker_at(person, 50.4501, 30.5234)
        self.show("sharing")
        friends = person.group("friends")["id"]
        select = f'#group-list li[data-group="{friends}"] select.group-precision'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, select), "the precision of Friends")
        Select(self.browser.find_element(By.CSS_SELECTOR, select)).select_by_value("town")
        self.wait(lambda: person.group("friends")["visibility"].get("precision") == "town", "Friends see the town")
        self.wait(lambda: Select(self.browser.find_element(By.CSS_SELECTOR, select))
                  .first_selected_option.get_attribute("value") == "town", "the choice is shown")
        # A zone: no centre yet is said so; a click on the map chooses it, and the zone is stored and listed.
        zones = self.browser.find_element(By.ID, "zone-list")
        self.wait(lambda: zones.text == "No privacy zones yet.", "the empty list")
        self.browser.find_element(By.ID, "zone-name").send_keys("Home")
        self.browser.find_element(By.ID, "zone-create").click()
        error = self.browser.find_element(By.ID, "zone-error")
        self.wait(lambda: error.is_displayed() and error.text == "Click the map where the zone's centre is.",
                  "a zone needs a centre")
        self.assertEqual(person.call("GET", "/v1/me/privacy-zones")["items"], [])
        self.click_map(0, 0)
        radius = self.browser.find_element(By.ID, "zone-radius")
        radius.clear()
        radius.send_keys("300")
        Select(self.browser.find_element(By.ID, "zone-display")).select_by_value("hidden")
        self.browser.find_element(By.ID, "zone-no-store").click()
        self.browser.find_element(By.ID, "zone-create").click()
        self.wait(lambda: len(person.call("GET", "/v1/me/privacy-zones")["items"]) == 1, "the zone is stored")
        zone = person.call("GET", "/v1/me/privacy-zones")["items"][0]
        self.assertEqual((zone["name"], zone["radius"], zone["display"], zone["store"]), ("Home", 300, "hidden", False))
        self.assertLess(abs(zone["latitude"] - 50.4501) + abs(zone["longitude"] - 30.5234), 0.001, "where clicked")
        row = f'#zone-list li[data-zone-id="{zone["id"]}"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, row), "the zone is listed")
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{row} .muted").text,
                         "300 m · others see nothing · not stored")
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.delete").click()
        self.wait(lambda: zones.text == "No privacy zones yet.", "the zone is gone from the list")
        self.assertEqual(person.call("GET", "/v1/me/privacy-zones")["items"], [])
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_custom_group_created_renamed_sharing_location_switched_and_deleted(self):
        person = Account(self.server, "Gleb Groups")
        climber = Account(self.server, "Kira Climber")
        person.upload((50.4501, 30.5234))
        self.open_and_sign_in(person)
        self.show("sharing")
        self.browser.find_element(By.ID, "new-group-name").send_keys("Climbing")
        self.browser.find_element(By.ID, "new-group-create").click()

        def custom():
            return [g for g in person.call("GET", "/v1/groups")["groups"] if g["kind"] == "custom"]

        self.wait(lambda: [g["name"] for g in custom()] == ["Climbing"], "the group is created")
        group = custom()[0]["id"]
        row = f'#group-list li[data-group="{group}"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, f"{row} .group-title"), "the group is listed")
        title = self.browser.find_element(By.CSS_SELECTOR, f"{row} .group-title")
        self.assertEqual(title.text, "Climbing — 0 members")
        strip = f'#groups [data-group="{group}"]'
        self.assertTrue(self.browser.find_elements(By.CSS_SELECTOR, strip), "on the map's group strip")
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.rename-group").click()
        name = self.browser.find_element(By.CSS_SELECTOR, f"{row} input.group-name")
        name.clear()
        name.send_keys("Climbing club")
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.save-group").click()
        self.wait(lambda: [g["name"] for g in custom()] == ["Climbing club"], "the group is renamed")
        person.call("PUT", f"/v1/groups/{group}/members/{climber.id}")

        def climber_sees():
            try:
                return climber.call("GET", f"/v1/users/{person.id}/location")["fix"]["latitude"] == 50.4501
            except urllib.error.HTTPError as error:
                if error.code != 404:
                    raise
                return False

        self.assertFalse(climber_sees(), "a new custom group sees nothing")
        self.show("map")
        self.show("sharing")  # the groups are read again
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, f"{row} .group-title").text
                  == "Climbing club — 1 member", "the renamed group with its member")
        box = self.browser.find_element(By.CSS_SELECTOR, f"{row} input.group-location")
        self.assertFalse(box.is_selected())
        box.click()
        self.wait(lambda: custom()[0]["visibility"]["location"] is True, "the group sees the location")
        self.assertTrue(climber_sees())
        # The page draws the group again once its change is answered: each control is found in the row drawn last.
        location = f"{row} input.group-location"
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, location).is_selected(),
                  "the page draws the group seeing the location")
        self.click(location, "the group's location box")
        self.wait(lambda: custom()[0]["visibility"]["location"] is False, "the group no longer sees the location")
        self.assertFalse(climber_sees())
        self.wait(lambda: not self.browser.find_element(By.CSS_SELECTOR, location).is_selected(),
                  "the page draws the group not seeing the location")
        self.click(f"{row} button.delete-group", "the group's delete button")
        self.wait(lambda: not custom(), "the group is deleted")
        self.wait(lambda: not self.browser.find_elements(By.CSS_SELECTOR, row), "and leaves the page")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, strip))

    @screenshot_on_failure
    def test_poll_posted_from_the_page_with_two_uploaded_images(self):
        author = Account(self.server, "Petra Poster")
        folder = tempfile.mkdtemp(prefix="meridian-images-")
        files = {}
        for name, content in (("sea.png", png((0, 90, 200))), ("hills.png", png((40, 140, 40))),
                              ("fake.png", b"not an image at all")):
            files[name] = os.path.join(folder, name)
            with open(files[name], "wb") as file:
                file.write(content)
        self.open_and_sign_in(author)
        self.show("polls")
        self.browser.find_element(By.ID, "poll-new").click()
        title = f"Where next {os.getpid()}"
        for field, value in (("poll-title-field", title), ("poll-option-0", "Sea"), ("poll-image-0", files["fake.png"]),
                             ("poll-option-1", "Hills"), ("poll-image-1", files["hills.png"])):
            self.browser.find_element(By.ID, field).send_keys(value)
        self.browser.find_element(By.ID, "poll-post").click()
        error = self.browser.find_element(By.ID, "poll-form-error")
        self.wait(lambda: error.is_displayed(), "a file that is no image is refused")
        self.assertTrue(error.text.startswith("Not posted: "), error.text)
        self.assertEqual(author.call("GET", "/v1/polls?author=me")["items"], [], "nothing was posted")
        self.browser.find_element(By.ID, "poll-image-0").send_keys(files["sea.png"])
        self.browser.find_element(By.ID, "poll-post").click()
        poll = self.browser.find_element(By.ID, "poll")
        self.wait(lambda: poll.is_displayed() and self.browser.find_element(By.ID, "poll-title").text == title,
                  "the posted poll opens")
        loaded = "return arguments[0].complete && arguments[0].naturalWidth"
        self.wait(lambda: [self.browser.execute_script(loaded, image)
                           for image in self.browser.find_elements(By.CSS_SELECTOR, "#poll-options img")] == [4, 4],
                  "both uploaded images are shown")
        mine = author.call("GET", "/v1/polls?author=me")["items"]
        posted = [(item["poll"]["id"], [option["text"] for option in item["poll"]["options"]]) for item in mine]
        self.assertEqual(posted, [(poll.get_attribute("data-poll-id"), ["Sea", "Hills"])])
        self.assertFalse(self.browser.find_element(By.ID, "poll-form").is_displayed())
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_polls_feed_results_votes_changed_and_comments(self):
        author, first, second = (Account(self.server, name) for name in ("Polina Pollster", "Vasyl", "Vira"))
        viewer = Account(self.server, "Viktor Viewer")
        for person in (author, viewer):  # named on polls and comments; the voters stay "Someone"
            person.call("PATCH", "/v1/me/profile", {"audience": {"fullName": "everyone"}})
        popular = author.post_poll(f"Tea or coffee {os.getpid()}", [(200, 30, 30), (30, 30, 200)])
        fresh = author.post_poll(f"Sea or mountains {os.getpid()}", [(30, 160, 30), (120, 120, 120)])
        first.call("POST", f"/v1/polls/{popular}/vote", {"choice": 1})
        second.call("POST", f"/v1/polls/{popular}/vote", {"choice": 0})
        first.call("POST", f"/v1/polls/{fresh}/vote", {"choice": 0})
        self.open_and_sign_in(viewer)
        self.show("polls")

        def feed(order):
            def listed():
                rows = self.browser.find_elements(By.CSS_SELECTOR, f'#polls[data-order="{order}"] li.poll-row')
                ids = [row.get_attribute("data-poll-id") for row in rows]
                return [poll for poll in ids if poll in (popular, fresh)]
            self.wait(lambda: len(listed()) == 2, f"both polls in the {order} feed")
            return listed()

        self.assertEqual(feed("newest"), [fresh, popular])
        self.browser.find_element(By.CSS_SELECTOR, '#poll-orders [data-order="most_voted"]').click()
        self.assertEqual(feed("most_voted"), [popular, fresh])
        row = self.browser.find_element(By.CSS_SELECTOR, f'#polls li[data-poll-id="{popular}"] .muted')
        self.assertEqual(row.text, "Polina Pollster · 2 votes · 0 comments")
        self.browser.find_element(By.CSS_SELECTOR, f'#polls li[data-poll-id="{fresh}"] button').click()
        poll = self.browser.find_element(By.ID, "poll")
        self.wait(lambda: poll.is_displayed() and poll.get_attribute("data-poll-id") == fresh, "the poll opens")
        loaded = "return arguments[0].complete && arguments[0].naturalWidth"
        self.wait(lambda: [self.browser.execute_script(loaded, image)
                           for image in self.browser.find_elements(By.CSS_SELECTOR, "#poll-options img")] == [4, 4],
                  "both option images are loaded")

        def percentages():
            return [element.text for element in self.browser.find_elements(By.CSS_SELECTOR, "#poll-options .percent")]

        self.assertEqual(percentages(), ["100%", "0%"])
        self.assertEqual(poll.get_attribute("data-my-choice"), "")
        self.browser.find_element(By.CSS_SELECTOR, '#poll-options [data-choice="1"] button.vote').click()
        self.wait(lambda: percentages() == ["50%", "50%"], "the viewer's vote for B counted")
        self.assertEqual(poll.get_attribute("data-my-choice"), "1")
        self.assertEqual(viewer.call("GET", f"/v1/polls/{fresh}")["myChoice"], 1)
        self.browser.find_element(By.CSS_SELECTOR, '#poll-options [data-choice="0"] button.vote').click()
        self.wait(lambda: percentages() == ["100%", "0%"], "the vote changed to A")
        self.assertEqual(self.browser.find_element(By.ID, "poll-total").text, "2 votes")
        summary = viewer.call("GET", f"/v1/polls/{fresh}")
        self.assertEqual((summary["myChoice"], summary["results"]["counts"]), (0, [2, 0]))
        self.browser.find_element(By.ID, "comment-text").send_keys("Mountains, <b>always</b>")
        self.browser.find_element(By.ID, "comment-submit").click()
        self.wait(lambda: [c.text for c in self.browser.find_elements(By.CSS_SELECTOR, "#poll-comments li.comment")]
                  == ["Viktor Viewer Mountains, <b>always</b>"], "the comment is listed with its author, as text")
        self.assertEqual(self.browser.find_element(By.ID, "poll-comments-title").text, "1 comment")
        self.assertEqual(len(viewer.call("GET", f"/v1/polls/{fresh}/comments")["items"]), 1)
        self.assert_no_script_errors()
        Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
        try:
            self.wait(lambda: self.browser.find_element(By.ID, "poll-total").text == "2 голоса",
                      "Russian 'few': 2 голоса")
            self.assertEqual(self.browser.find_element(By.ID, "poll-comments-title").text, "1 комментарий")
        finally:
            Select(self.browser.find_element(By.ID, "language")).select_by_value("en")

    @screenshot_on_failure
    def test_rewards_balance_ledger_coupon_bought_with_points_and_not_enough_points(self):
        cheap, dear = f"coffee-{os.getpid()}-{next(_ids)}", f"cinema-{os.getpid()}-{next(_ids)}"
        self.admin(["coupons", "create", "--id", cheap, "--shop", "Blue Cup", "--title=-20 % on coffee",
                    "--price", "15", "--stock", "2", "--discount", "20"])
        self.admin(["coupons", "create", "--id", dear, "--shop", "Kino", "--title", "Free ticket", "--price", "100",
                    "--stock", "5"])
        person = Account(self.server, "Polina Points")
        author = Account(self.server, "Andriy Author")
        for title in ("Tea or coffee?", "Sea or mountains?"):
            person.post_poll(title, [(200, 40, 40), (40, 40, 200)])  # 10 points each
        person.call("POST", f"/v1/polls/{author.post_poll('Cats or dogs?', [(9, 9, 9), (99, 99, 99)])}/vote",
                    {"choice": 0})  # 1 point
        self.open_and_sign_in(person)
        self.show("rewards")
        balance = self.browser.find_element(By.ID, "points-balance")
        self.wait(lambda: balance.text == "You have 21 points", "the balance")
        self.assertEqual([(entry.get_attribute("data-reason"), entry.get_attribute("data-amount")) for entry in
                          self.browser.find_elements(By.CSS_SELECTOR, "#ledger li.entry")],
                         [("voted", "1"), ("pollPosted", "10"), ("pollPosted", "10")])
        self.assertTrue(self.browser.find_element(By.CSS_SELECTOR, "#ledger li.entry").text.startswith(
            "+1 point for a vote"))
        offer = '#offers li[data-offer-id="{}"]'
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(cheap)} .price").text,
                         "15 points")
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(cheap)} .remaining").text,
                         "2 coupons left")
        self.assertEqual(self.browser.find_element(By.ID, "my-coupons").text, "No coupons yet.")
        self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(dear)} button.buy").click()
        error = self.browser.find_element(By.ID, "rewards-error")
        self.wait(lambda: error.is_displayed(), "not enough points is said")
        self.assertEqual(error.text, "Not enough points for this coupon.")
        self.assertEqual(person.call("GET", "/v1/me/points")["balance"], 21, "nothing spent")
        self.assertEqual(person.call("GET", "/v1/me/coupons")["items"], [])
        self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(cheap)} button.buy").click()
        self.wait(lambda: balance.text == "You have 6 points", "15 points spent")
        self.assertFalse(error.is_displayed())
        bought = person.call("GET", "/v1/me/coupons")["items"]
        self.assertEqual([coupon["offerId"] for coupon in bought], [cheap])
        coupon = self.browser.find_element(By.CSS_SELECTOR, f'#my-coupons li.coupon[data-offer-id="{cheap}"]')
        self.assertEqual(coupon.find_element(By.CSS_SELECTOR, ".code").text, bought[0]["code"])
        self.assertIn("-20 % on coffee · Blue Cup", coupon.text)
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(cheap)} .remaining").text,
                         "1 coupon left")
        first = self.browser.find_element(By.CSS_SELECTOR, "#ledger li.entry")
        self.assertEqual((first.get_attribute("data-reason"), first.get_attribute("data-amount")),
                         ("couponPurchase", "-15"))
        self.assertTrue(first.text.startswith("−15 points for a coupon"), first.text)
        Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
        try:
            self.wait(lambda: balance.text == "У вас 6 баллов", "Russian 'many': 6 баллов")
            self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(cheap)} .remaining").text,
                             "остался 1 купон")
            self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{offer.format(dear)} .remaining").text,
                             "осталось 5 купонов")
            entries = self.browser.find_elements(By.CSS_SELECTOR, "#ledger li.entry .earned")
            self.assertEqual([entry.text for entry in entries], ["+1 балл", "+10 баллов", "+10 баллов"])
        finally:
            Select(self.browser.find_element(By.ID, "language")).select_by_value("en")
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_directory_browses_searches_reviews_and_keeps_favourites(self):
        self.admin(["places", "import", "Tools/examples/tomsk-universities.json"])
        for grade, text in ((5, "Great labs"), (4, None)):
            reviewer = Account(self.server, f"Reviewer {grade}")
            review = {"grade": grade, **({"text": text} if text else {})}
            reviewer.call("PUT", "/v1/places/tsu-phys-b/reviews/me", review)
        viewer = Account(self.server, "Darya Directory")
        self.open_and_sign_in(viewer)
        self.show("directory")
        page = self.browser.find_element(By.ID, "view-directory")

        def listed():
            return [row.get_attribute("data-place-id") for row in self.browser.find_elements(
                By.CSS_SELECTOR, "#directory li.directory-place")]

        def row(place):
            return f'#directory li[data-place-id="{place}"]'

        def text(selector):
            return self.browser.find_element(By.CSS_SELECTOR, selector).text

        def open_place(place):
            self.browser.find_element(By.CSS_SELECTOR, f"{row(place)} button").click()
            self.wait(lambda: page.get_attribute("data-place-id") == place and self.browser.find_element(
                By.ID, "place").is_displayed(), f"{place} is open")

        self.wait(lambda: set(listed()) == {"tsu", "tpu", "ssmu", "tusur"}, "the top-level places")
        self.assertEqual(text(f'{row("tsu")} .rating'), "★ 4.5 · 2 reviews")  # the subtree's reviews
        self.assertEqual(text(f'{row("tpu")} .rating'), "No reviews yet")
        open_place("tsu")
        self.assertEqual(text("#crumbs"), "Directory › Tomsk State University")
        self.wait(lambda: "tsu-phys" in listed(), "the university's faculties")
        open_place("tsu-phys")
        self.wait(lambda: listed() == ["tsu-phys-b"], "the faculty's programme")
        open_place("tsu-phys-b")
        self.assertEqual(text("#crumbs"), "Directory › Tomsk State University › Faculty of Physics › Physics")
        self.assertEqual(text("#place-rating"), "★ 4.5 · 2 reviews")
        self.assertEqual(text("#reviews-title"), "2 reviews")
        self.assertIn("Great labs", [review.text.split("\n")[-1] for review in self.browser.find_elements(
            By.CSS_SELECTOR, "#reviews li.review")])
        star = self.browser.find_element(By.ID, "favourite")
        self.assertEqual(star.get_attribute("data-favourite"), "false")
        star.click()
        self.wait(lambda: star.get_attribute("data-favourite") == "true", "kept among the favourites")
        self.assertEqual([item["place"]["id"] for item in viewer.call("GET", "/v1/me/favourites")["items"]],
                         ["tsu-phys-b"])
        Select(self.browser.find_element(By.ID, "review-grade")).select_by_value("3")
        self.browser.find_element(By.ID, "review-text").send_keys("Hard but fair")
        self.browser.find_element(By.ID, "review-submit").click()
        self.wait(lambda: text("#place-rating") == "★ 4.0 · 3 reviews", "the viewer's review counts")
        self.browser.find_element(By.CSS_SELECTOR, '#crumbs button[data-place-id="tsu-phys"]').click()
        self.wait(lambda: page.get_attribute("data-place-id") == "tsu-phys", "back to the faculty by its breadcrumb")
        self.browser.find_element(By.ID, "directory-query").send_keys("физ")
        self.browser.find_element(By.ID, "directory-find").click()
        self.wait(lambda: page.get_attribute("data-mode") == "search" and {"tsu-phys", "tsu-phys-b"} <= set(listed()),
                  "'физ' finds the faculty and the programme")
        self.assertNotIn("tpu", listed())
        self.assertEqual(text(f'{row("tsu-phys")} button'), "Faculty of Physics")
        self.browser.find_element(By.ID, "directory-favourites").click()
        self.wait(lambda: page.get_attribute("data-mode") == "favourites" and listed() == ["tsu-phys-b"],
                  "the favourites list")
        self.assert_no_script_errors()
        Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
        try:
            self.wait(lambda: text(f'{row("tsu-phys-b")} button') == "Физика", "the place's Russian name")
            self.assertEqual(text(f'{row("tsu-phys-b")} .rating'), "★ 4,0 · 3 отзыва")
        finally:
            Select(self.browser.find_element(By.ID, "language")).select_by_value("en")

    def screenshot(self, name):
        """Saves the window as docs/screenshots/`name`.png when MERIDIAN_SCREENSHOTS names that folder (the README's
        pictures are made so: `MERIDIAN_SCREENSHOTS=docs/screenshots Tests/browser/run -k alerts`)."""
        folder = os.environ.get("MERIDIAN_SCREENSHOTS")
        if folder:
            os.makedirs(folder, exist_ok=True)
            self.browser.save_screenshot(os.path.join(folder, f"{name}.png"))

    def click_map(self, x, y):
        """Clicks the map `x`, `y` pixels from its centre (the viewer's own marker sits at the centre)."""
        ActionChains(self.browser).move_to_element_with_offset(
            self.browser.find_element(By.ID, "map"), x, y).click().perform()

    @screenshot_on_failure
    def test_alerts_draw_a_circle_and_a_polygon_hear_an_arrival_live_and_manage_webhooks(self):
        person = Account(self.server, "Greta Geofence")
        person.upload((50.4501, 30.5234))
        self.open_and_sign_in(person)
        self.wait_for_marker_at(person, 50.4501, 30.5234)
        self.show("alerts")
        self.wait(lambda: self.browser.find_element(By.ID, "fences").text == "No geofences yet: draw one on the map.",
                  "the empty list")
        # A circle around the point clicked, shared with the Family group.
        hint = self.browser.find_element(By.ID, "fence-hint")
        self.click_map(60, 0)
        self.wait(lambda: hint.get_attribute("data-points") == "1", "the centre is chosen")
        self.browser.find_element(By.ID, "fence-name").send_keys("Home")
        radius = self.browser.find_element(By.ID, "fence-radius")
        radius.clear()
        radius.send_keys("100")
        family = person.group("family")
        Select(self.browser.find_element(By.ID, "fence-sharing")).select_by_value(f"group:{family['id']}")
        self.browser.find_element(By.ID, "fence-create").click()
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#fences li.fence")) == 1, "Home listed")
        home = person.call("GET", "/v1/geofences")["items"][0]
        self.assertEqual((home["name"], home["shape"]["type"], home["shape"]["radius"], home["sharing"],
                          home["groupId"]), ("Home", "circle", 100, "group", family["id"]))
        centre = home["shape"]["center"]
        self.assertAlmostEqual(centre["lat"], 50.4501, delta=0.002)
        self.assertGreater(centre["lon"], 30.5234, "the circle is where the map was clicked: east of the marker")
        row = self.browser.find_element(By.CSS_SELECTOR, "#fences li.fence")
        self.assertIn("circle, 100 m · Family", row.text)
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-overlay-pane path")), 1)

        # A polygon of three corners clicked.
        self.browser.find_element(By.CSS_SELECTOR, 'input[name="fence-shape"][value="polygon"]').click()
        for x, y in [(-80, -60), (-20, -60), (-50, -10)]:
            self.click_map(x, y)
        self.wait(lambda: hint.get_attribute("data-points") == "3", "three corners")
        self.assertEqual(hint.text, "3 corners clicked; click the map for each corner (at least three).")
        self.browser.find_element(By.ID, "fence-name").send_keys("Park")
        Select(self.browser.find_element(By.ID, "fence-sharing")).select_by_value("nobody")
        self.browser.find_element(By.ID, "fence-create").click()
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#fences li.fence")) == 2, "Park listed")
        park = next(fence for fence in person.call("GET", "/v1/geofences")["items"] if fence["name"] == "Park")
        self.assertEqual((park["shape"]["type"], len(park["shape"]["vertices"]), park["sharing"]),
                         ("polygon", 3, "nobody"))
        self.assertIn("3 corners · only me", self.browser.find_element(
            By.CSS_SELECTOR, f'#fences li.fence[data-fence-id="{park["id"]}"]').text)

        # Walking into Home: the arrival appears live.
        person.upload((centre["lat"], centre["lon"] + 0.03), (centre["lat"], centre["lon"]))
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, '#fence-events li.fence-event[data-kind="enter"]'),
                  "the arrival is listed live")
        arrival = self.browser.find_element(By.CSS_SELECTOR, '#fence-events li.fence-event[data-kind="enter"]')
        self.assertTrue(arrival.text.startswith("Me arrived at Home"), arrival.text)
        self.screenshot("alerts")

        # A webhook: refused without a usable address, then registered with its secret shown once, then deleted.
        self.browser.find_element(By.ID, "webhook-url").send_keys("http://169.254.169.254/latest")
        self.browser.find_element(By.ID, "webhook-create").click()
        error = self.browser.find_element(By.ID, "fence-error")
        self.wait(lambda: error.is_displayed(), "the refusal is said")
        self.assertEqual(error.get_attribute("data-code"), "webhook_address_forbidden")
        url = self.browser.find_element(By.ID, "webhook-url")
        url.clear()
        url.send_keys("http://127.0.0.1:9/meridian")
        self.browser.find_element(By.ID, "webhook-create").click()
        secret = self.browser.find_element(By.ID, "webhook-secret")
        self.wait(lambda: secret.is_displayed(), "the secret is shown")
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#webhooks li.webhook")) == 1,
                  "the webhook listed")
        self.assertTrue(secret.get_attribute("data-secret"))
        self.assertEqual([hook["url"] for hook in person.call("GET", "/v1/webhooks")["items"]],
                         ["http://127.0.0.1:9/meridian"])
        self.browser.find_element(By.CSS_SELECTOR, "#webhooks li.webhook button.delete").click()
        self.wait(lambda: self.browser.find_element(By.ID, "webhooks").text == "No webhooks.", "the webhook deleted")

        # Deleting Home removes it from the list and the map.
        self.browser.find_element(By.CSS_SELECTOR, f'#fences li.fence[data-fence-id="{home["id"]}"] button.delete').click()
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#fences li.fence")) == 1, "Home deleted")
        self.assertEqual([fence["name"] for fence in person.call("GET", "/v1/geofences")["items"]], ["Park"])
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-overlay-pane path")), 1)
        # The drawings go with the page.
        self.show("map")
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, ".leaflet-overlay-pane path")), 0)
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_alerts_notify_this_browser_through_web_push(self):
        push = PushService()
        try:
            person = Account(self.server, "Nina Notified")
            person.upload((50.4501, 30.5234))
            self.open_and_sign_in(person)
            self.wait_for_marker_at(person, 50.4501, 30.5234)
            self.browser.execute_cdp_cmd("Browser.grantPermissions", {
                "origin": self.server.base, "permissions": ["notifications"]})
            # Chromium's own push service (Google's) is out of reach here, so the browser's subscription is the test
            # push service's address and keys; the permission, the page's service worker, the server's VAPID key,
            # its encryption and its delivery are all real, and the push service decrypts on its own.
            self.browser.execute_script("""
                const [endpoint, keys] = arguments;
                let current = null;
                PushManager.prototype.subscribe = async function (options) {
                  window.subscribedWithKey = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey)))
                    .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
                  current = { endpoint, expirationTime: null, toJSON: () => ({ endpoint, expirationTime: null, keys }),
                              unsubscribe: async () => { current = null; return true; } };
                  return current;
                };
                PushManager.prototype.getSubscription = async function () { return current; };
            """, push.origin + "/push/browser", push.keys)
            self.show("alerts")
            state = self.browser.find_element(By.ID, "push-state")
            toggle = self.browser.find_element(By.ID, "push-toggle")
            self.wait(lambda: state.get_attribute("data-state") == "off", "not notified yet")
            self.assertEqual(toggle.text, "Notify me on this browser")
            toggle.click()
            self.wait(lambda: state.get_attribute("data-state") == "on", "this browser is notified")
            self.assertEqual(toggle.text, "Stop notifying this browser")
            self.assertEqual(self.browser.execute_script("return window.subscribedWithKey"),
                             person.call("GET", "/v1/push/vapid-public-key")["publicKey"])
            self.assertEqual([item["url"] for item in person.call("GET", "/v1/push/subscriptions")["items"]],
                             [push.origin + "/push/browser"])
            self.assertEqual(self.browser.find_element(By.ID, "webhooks").text, "No webhooks.",
                             "the browser's registration is not listed as a webhook")
            worker = self.browser.execute_async_script("""
                const done = arguments[arguments.length - 1];
                navigator.serviceWorker.getRegistration('/app/push-worker.js')
                  .then((registration) => done(registration && registration.active ? registration.active.scriptURL : null));
            """)
            self.assertEqual(worker, self.server.base + "/app/push-worker.js")

            # An arrival at a fence of the person's own reaches the push service, encrypted for this browser.
            person.call("POST", "/v1/geofences", {"name": "Library", "shape": {
                "type": "circle", "center": {"lat": 50.4501, "lon": 30.5234}, "radius": 100}})
            person.upload((50.4601, 30.5234), (50.4501, 30.5234))
            self.wait(lambda: any("payload" in entry for entry in push.received()), "the arrival is pushed",
                      seconds=30)
            entry = next(entry for entry in push.received() if "payload" in entry)
            self.assertNotIn("error", entry)
            self.assertEqual(entry["payload"]["title"], "Library")
            self.assertIn("Nina Notified arrived at Library", entry["payload"]["body"])

            # The worker shows what the push service would hand it, as a notification of its own.
            shown = self.browser.execute_async_script("""
                const [payload, done] = arguments;
                (async () => {
                  const registration = await navigator.serviceWorker.getRegistration('/app/push-worker.js');
                  await registration.showNotification(payload.title, { body: payload.body, tag: payload.id });
                  const notifications = await registration.getNotifications({ tag: payload.id });
                  done(notifications.map((notification) => [notification.title, notification.body]));
                })().catch((error) => done(String(error)));
            """, entry["payload"])
            self.assertEqual(shown, [["Library", entry["payload"]["body"]]])

            # Stopping removes the registration from the server.
            toggle.click()
            self.wait(lambda: state.get_attribute("data-state") == "off", "no longer notified")
            self.assertEqual(person.call("GET", "/v1/push/subscriptions")["items"], [])
            self.assert_no_script_errors()
        finally:
            push.stop()

    @screenshot_on_failure
    def test_alerts_people_near_me_refuse_one_way_sharing_and_hear_a_friend_come_near_live(self):
        person = Account(self.server, "Nina Near")
        friend = Account(self.server, "Paul Pal")
        stranger = Account(self.server, "Olga Oneway")
        friend.share_with(person)
        person.share_with(friend)
        stranger.share_with(person)  # one way only
        person.upload((50.4501, 30.5234))
        friend.upload((50.4700, 30.5234), seconds_ago=30)
        self.open_and_sign_in(person)
        self.wait_for_marker_at(person, 50.4501, 30.5234)
        self.show("alerts")
        rules = self.browser.find_element(By.ID, "proximity-rules")
        self.wait(lambda: rules.text.startswith("No one yet"), "the empty list")
        who = Select(self.browser.find_element(By.ID, "proximity-person"))
        self.wait(lambda: {option.get_attribute("value") for option in who.options} == {friend.id, stranger.id},
                  "the people who share are offered")
        # Olga shares with Nina, Nina not with her: refused, with its code.
        who.select_by_value(stranger.id)
        self.browser.find_element(By.ID, "proximity-create").click()
        error = self.browser.find_element(By.ID, "proximity-error")
        self.wait(lambda: error.is_displayed(), "the refusal is said")
        self.assertEqual(error.get_attribute("data-code"), "invalid_proximity_rule")
        # Paul, within 300 m.
        who.select_by_value(friend.id)
        radius = self.browser.find_element(By.ID, "proximity-radius")
        radius.clear()
        radius.send_keys("300")
        self.browser.find_element(By.ID, "proximity-create").click()
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#proximity-rules li.proximity-rule")) == 1,
                  "Paul listed")
        self.assertIn("Paul Pal within 300 m", self.browser.find_element(By.CSS_SELECTOR, "#proximity-rules li").text)
        self.assertEqual([(rule["userId"], rule["radius"]) for rule in person.call("GET", "/v1/proximity-rules")["items"]],
                         [(friend.id, 300)])
        # Paul walks up to Nina: "near" appears live among her events.
        friend.upload((50.4503, 30.5234))
        near = '#fence-events li.fence-event[data-kind="near"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, near), "near is listed live")
        text = self.browser.find_element(By.CSS_SELECTOR, near).text
        self.assertTrue(text.startswith("Paul Pal is near you (300 m)"), text)
        # Deleting the rule.
        self.browser.find_element(By.CSS_SELECTOR, "#proximity-rules li.proximity-rule button.delete").click()
        self.wait(lambda: rules.text.startswith("No one yet"), "the rule deleted")
        self.assertEqual(person.call("GET", "/v1/proximity-rules")["items"], [])
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_alerts_limit_a_fence_to_directions_days_hours_and_people(self):
        person = Account(self.server, "Rita Rules")
        friend = Account(self.server, "Felix Friend")
        friend.share_with(person)
        person.upload((50.4501, 30.5234))
        self.open_and_sign_in(person)
        self.wait_for_marker_at(person, 50.4501, 30.5234)
        self.show("alerts")
        people = self.browser.find_element(By.ID, "fence-people")
        self.wait(lambda: people.find_elements(By.CSS_SELECTOR, f'input[value="{friend.id}"]'),
                  "the friend who shares is offered")
        self.browser.find_element(By.CSS_SELECTOR, "#fence-rule summary").click()
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, 'input[name="fence-day"]:checked')), 7)
        # Departures only, on Saturdays and Sundays, 22:00–06:00, for Felix alone.
        for kind in ("enter", "dwell"):
            self.browser.find_element(By.CSS_SELECTOR, f'input[name="fence-kind"][value="{kind}"]').click()
        for day in ("mon", "tue", "wed", "thu", "fri"):
            self.browser.find_element(By.CSS_SELECTOR, f'input[name="fence-day"][value="{day}"]').click()
        for field, value in (("fence-from", "22:00"), ("fence-until", "06:00")):
            self.browser.execute_script("arguments[0].value = arguments[1];",
                                        self.browser.find_element(By.ID, field), value)
        people.find_element(By.CSS_SELECTOR, f'input[value="{friend.id}"]').click()
        self.assertIn("Felix Friend", people.text)
        zone = self.browser.execute_script("return Intl.DateTimeFormat().resolvedOptions().timeZone")
        self.assertIn(zone, self.browser.find_element(By.ID, "fence-zone").text)
        self.click_map(60, 0)
        self.browser.find_element(By.ID, "fence-name").send_keys("Club")
        self.browser.find_element(By.ID, "fence-create").click()
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, "#fences li.fence")) == 1, "Club listed")
        club = person.call("GET", "/v1/geofences")["items"][0]
        self.assertEqual(club["alerts"], {"kinds": ["exit"], "days": ["sat", "sun"],
                                          "hours": {"from": "22:00", "until": "06:00"}, "timeZone": zone,
                                          "people": [friend.id]})
        self.assertIn("alerts limited", self.browser.find_element(By.CSS_SELECTOR, "#fences li.fence").text)

        # No direction ticked: the server's refusal is said, with its code.
        self.browser.find_element(By.CSS_SELECTOR, 'input[name="fence-kind"][value="exit"]').click()
        self.click_map(-60, 0)
        self.browser.find_element(By.ID, "fence-name").send_keys("Nothing")
        self.browser.find_element(By.ID, "fence-create").click()
        error = self.browser.find_element(By.ID, "fence-error")
        self.wait(lambda: error.is_displayed(), "the refusal is said")
        self.assertEqual(error.get_attribute("data-code"), "invalid_alert_rule")
        self.assertEqual(len(person.call("GET", "/v1/geofences")["items"]), 1)
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_advertiser_claims_a_venue_runs_promotions_and_charts_their_statistics_with_hidden_counts(self):
        # On a server of its own: the venues it imports would join the directory's top level that another test lists.
        own = Server(self.binary)
        saved = self.server
        self.server = own
        try:
            self.check_the_advertiser_screen()
        finally:
            self.server = saved
            own.stop()

    def check_the_advertiser_screen(self):
        self.admin(["venues", "import", "Tools/examples/kyiv-venues.csv"])
        owner = Account(self.server, "Oksana Owner")
        owner.upload((50.4470, 30.5219))
        self.open_and_sign_in(owner)
        self.show("advertiser")
        no_venue = self.browser.find_element(By.ID, "advertiser-no-venue")
        self.wait(lambda: no_venue.is_displayed(), "no venue yet: the claim comes first")

        # Claiming Lviv Croissants, found by name; the claim waits for an operator, who approves it.
        self.browser.find_element(By.ID, "claim-query").send_keys("Lviv")
        self.browser.find_element(By.ID, "claim-note").send_keys("I run the bakery.")
        self.browser.find_element(By.ID, "claim-find").click()
        found = '#claim-results li[data-venue-id="lviv-croissants"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, f"{found} button.claim"), "the venue is found")
        self.browser.find_element(By.CSS_SELECTOR, f"{found} button.claim").click()
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, '#claims li.claim[data-state="pending"]'),
                  "the claim is listed as waiting")
        claim = owner.call("GET", "/v1/advertiser/claims")["claims"][0]
        self.assertEqual((claim["venueId"], claim["state"], claim["note"]),
                         ("lviv-croissants", "pending", "I run the bakery."))
        row = self.browser.find_element(By.CSS_SELECTOR, "#claims li.claim")
        self.assertIn("Lviv Croissants · waiting for an operator", row.text)
        self.assertIn("waiting for an operator", self.browser.find_element(By.CSS_SELECTOR, found).text)
        self.admin(["advertisers", "approve", claim["id"]])
        self.show("advertiser")  # shown again: read again
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, '#claims li.claim[data-state="approved"]'),
                  "the claim is approved")
        self.wait(lambda: self.browser.find_element(By.ID, "advertiser-venue-part").is_displayed(), "the venue's part")
        self.assertEqual(Select(self.browser.find_element(By.ID, "advertiser-venue")).first_selected_option.text,
                         "Lviv Croissants")
        self.assertIn("yours", self.browser.find_element(By.CSS_SELECTOR, found).text)
        # A claim the operator rejects shows the operator's reason.
        other = owner.call("POST", "/v1/advertiser/claims", {"venueId": "golden-gate-books"})
        self.admin(["advertisers", "reject", other["id"], "--reason", "Not the owner's email."])
        self.show("advertiser")
        rejected = f'#claims li.claim[data-claim-id="{other["id"]}"][data-state="rejected"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, rejected), "the rejection is listed")
        text = self.browser.find_element(By.CSS_SELECTOR, rejected).text
        self.assertIn("Golden Gate Books · rejected", text)
        self.assertIn("Not the owner's email.", text)

        # A general promotion created in the form, then a special one with its audience rule.
        def fill(field, text):
            node = self.browser.find_element(By.ID, field)
            node.clear()
            node.send_keys(text)

        fill("promotion-name", "Croissant morning")
        fill("promotion-code", "CROISSANT")
        fill("promotion-old-price", "60")
        fill("promotion-new-price", "45")
        picture = os.path.join(self.server.directory, "croissant.png")
        with open(picture, "wb") as file:
            file.write(png((230, 180, 90)))
        self.browser.find_element(By.ID, "promotion-image").send_keys(picture)
        self.browser.find_element(By.ID, "promotion-save").click()
        listed = "#advertiser-promotions li.advertised"
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, listed)) == 1, "the promotion is listed")
        morning = owner.call("GET", "/v1/advertiser/venues/lviv-croissants/promotions")["promotions"][0]
        self.assertEqual((morning["promotion"]["name"], morning["promotion"]["promoCode"], morning["state"],
                          morning["promotion"]["audience"], morning["promotion"]["newPrice"]),
                         ("Croissant morning", "CROISSANT", "running", "general", {"amount": 4500, "currency": "UAH"}))
        pid = morning["promotion"]["id"]

        def advertised():  # the promotion as the API answers its advertiser now
            return next(item for item in owner.call("GET", "/v1/advertiser/venues/lviv-croissants/promotions")[
                "promotions"] if item["promotion"]["id"] == pid)

        row = f'{listed}[data-promotion-id="{pid}"]'
        self.assertIn("running", self.browser.find_element(By.CSS_SELECTOR, row).text)
        qr = self.browser.find_element(By.CSS_SELECTOR, f"{row} img.qr")
        self.wait(lambda: qr.is_displayed() and qr.get_property("naturalWidth") > 0, "the code as a QR image")
        self.assertRegex(morning["promotion"]["imageUrl"], r"^/v1/blobs/[0-9a-f]+")
        image = self.browser.find_element(By.CSS_SELECTOR, f"{row} img.promotion-image")
        self.wait(lambda: image.get_property("naturalWidth") == 4, "the uploaded picture is shown")

        # The server's refusal is said under the form, which keeps what was typed.
        fill("promotion-name", "Backwards")
        fill("promotion-code", "BACK")
        for field, value in [("promotion-valid-from", "2030-01-02T10:00"), ("promotion-valid-until", "2030-01-01T10:00")]:
            self.browser.execute_script("arguments[0].value = arguments[1]", self.browser.find_element(By.ID, field),
                                        value)
        self.browser.find_element(By.ID, "promotion-save").click()
        error = self.browser.find_element(By.ID, "advertiser-error")
        self.wait(lambda: error.is_displayed(), "the refusal is said")
        self.assertEqual((error.get_attribute("data-code"), error.text),
                         ("invalid_request", "'validUntil' must come after 'validFrom'."))
        self.assertEqual(self.browser.find_element(By.ID, "promotion-name").get_attribute("value"), "Backwards")
        for field in ("promotion-valid-from", "promotion-valid-until"):
            self.browser.find_element(By.ID, field).clear()
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, listed)), 1)

        fill("promotion-name", "Regulars")
        fill("promotion-code", "REGULAR")
        Select(self.browser.find_element(By.ID, "promotion-audience")).select_by_value("special")
        fill("promotion-radius", "200")
        fill("promotion-minimum-days", "2")
        fill("promotion-lookback-days", "7")
        for field, value in [("promotion-window-start", "07:00"), ("promotion-window-end", "11:00")]:
            # Typed, a time field wants the locale's AM/PM too: its value is set as a picker would.
            self.browser.execute_script("arguments[0].value = arguments[1]", self.browser.find_element(By.ID, field),
                                        value)
        self.browser.find_element(By.ID, "promotion-save").click()
        self.wait(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, listed)) == 2, "the special one is listed")
        regulars = next(item for item in owner.call("GET", "/v1/advertiser/venues/lviv-croissants/promotions")[
            "promotions"] if item["promotion"]["name"] == "Regulars")
        self.assertEqual((regulars["promotion"]["audience"], regulars["eligibility"], regulars["promotion"]["window"]),
                         ("special", {"radius": 200, "minimumDays": 2, "lookbackDays": 7}, {"start": 420, "end": 660}))
        special_row = self.browser.find_element(
            By.CSS_SELECTOR, f'{listed}[data-promotion-id="{regulars["promotion"]["id"]}"]')
        self.assertIn("Passed within 200 m on 2 days of the last 7, without coming in", special_row.text)
        self.wait(lambda: "fewer than 5 people qualify now" in special_row.text, "its audience now: < 5")

        # Edited: the new name is saved, the state kept.
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.edit").click()
        self.assertEqual(self.browser.find_element(By.ID, "promotion-name").get_attribute("value"), "Croissant morning")
        fill("promotion-name", "Croissant breakfast")
        self.browser.find_element(By.ID, "promotion-save").click()
        self.wait(lambda: "Croissant breakfast" in self.browser.find_element(By.CSS_SELECTOR, row).text, "renamed")
        self.assertEqual((advertised()["promotion"]["name"], advertised()["promotion"]["imageUrl"]),
                         ("Croissant breakfast", morning["promotion"]["imageUrl"]), "renamed, the picture kept")

        # Today: six people are offered it (one twice), five redeem it; every other day is "< 5" (nobody).
        for index in range(6):
            visitor = Account(self.server, f"Visitor {index}")
            visitor.call("GET", "/v1/venues/lviv-croissants/promotions")
            if index == 0:
                visitor.call("GET", "/v1/venues/lviv-croissants/promotions")
            if index < 5:
                visitor.call("POST", f"/v1/promotions/{pid}/redeem", {"code": "croissant"})
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.stats").click()
        stats = self.browser.find_element(By.ID, "stats")
        self.wait(lambda: stats.is_displayed() and stats.get_attribute("data-bucket") == "day", "the daily charts")

        def bars(series):
            return self.browser.find_elements(By.CSS_SELECTOR, f'#stats-charts [data-series="{series}"] rect.bar')

        api = json.loads(owner.call_raw("GET", f"/v1/advertiser/promotions/{pid}/stats?bucket=day"))
        self.assertEqual(len(bars("people")), len(api["rows"]))
        today = api["rows"][-1]
        self.assertEqual((today["offered"], today["people"], today["redeemed"]), (7, 6, 5))
        for series, value in [("offered", "7"), ("people", "6"), ("redeemed", "5")]:
            last = bars(series)[-1]
            self.assertEqual((last.get_attribute("data-value"), last.get_attribute("class")), (value, "bar exact"))
            self.assertGreater(float(last.get_attribute("height")), 0)
            hidden = bars(series)[0]  # 29 days ago: nobody, shown as the API says — "< 5", neither 0 nor 5
            self.assertEqual((hidden.get_attribute("data-value"), hidden.get_attribute("class")), ("< 5", "bar few"))
            self.assertLess(float(hidden.get_attribute("height")), float(last.get_attribute("height")))
        values = {bar.get_attribute("data-value") for series in ("offered", "people", "redeemed") for bar in bars(series)}
        self.assertEqual(values, {"< 5", "7", "6", "5"}, "no count drawn as 0")
        conversion = self.browser.find_elements(By.CSS_SELECTOR, '#stats-charts [data-series="conversion"] rect.bar')
        self.assertAlmostEqual(float(conversion[-1].get_attribute("data-value")), 5 / 6, places=4)
        cells = self.browser.find_elements(By.CSS_SELECTOR, f'#stats-table tr[data-start="{api["rows"][0]["start"]}"] td')
        self.assertEqual([cell.get_attribute("textContent") for cell in cells][1:], ["< 5", "< 5", "< 5", "—"])
        self.browser.execute_script("document.getElementById('stats').scrollIntoView()")
        self.screenshot("advertiser")

        # The week: the same figures in one bar (its other days had nobody, so nothing is withheld).
        self.browser.find_element(By.CSS_SELECTOR, '#stats-buckets [data-bucket="week"]').click()
        self.wait(lambda: stats.get_attribute("data-bucket") == "week", "the weekly charts")
        self.assertEqual(bars("people")[-1].get_attribute("data-value"), "6")
        weeks = json.loads(owner.call_raw("GET", f"/v1/advertiser/promotions/{pid}/stats?bucket=week"))
        self.assertEqual(len(bars("people")), len(weeks["rows"]))

        # The CSV link saves the API's CSV of the bucket shown.
        self.browser.find_element(By.ID, "stats-csv").click()
        saved = os.path.join(self.downloads, f"promotion-{pid}-week.csv")
        self.wait(lambda: os.path.exists(saved) and read(saved).count("\n") == len(weeks["rows"]) + 1,
                  "the CSV is saved")
        with open(saved, newline="") as file:
            self.assertEqual(file.read(), owner.call_raw("GET", f"/v1/advertiser/promotions/{pid}/stats?bucket=week&format=csv"))

        # Paused, resumed, then ended (after a confirmation): the state follows, and an ended one can't be edited.
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.pause").click()
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, row).get_attribute("data-state") == "paused",
                  "paused")
        self.assertIn("paused", self.browser.find_element(By.CSS_SELECTOR, row).text)
        self.assertEqual(advertised()["state"], "paused")
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.resume").click()
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, row).get_attribute("data-state") == "running",
                  "running again")
        self.assertEqual(advertised()["state"], "running")
        self.browser.find_element(By.CSS_SELECTOR, f"{row} button.end").click()
        self.browser.switch_to.alert.accept()
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, row).get_attribute("data-state") == "ended",
                  "ended")
        self.assertEqual(advertised()["state"], "ended")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, f"{row} button.edit"))
        Select(self.browser.find_element(By.ID, "language")).select_by_value("uk")
        self.wait(lambda: "завершена" in self.browser.find_element(By.CSS_SELECTOR, row).text, "in Ukrainian")
        Select(self.browser.find_element(By.ID, "language")).select_by_value("en")
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_sign_in_with_phone_code_and_sign_out(self):
        phone = f"+38050{next(_ids):03d}{os.getpid() % 10000:04d}"
        self.browser.get(self.server.base + "/")
        self.wait(lambda: self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "signin",
                  "the sign-in form is ready")
        self.browser.find_element(By.ID, "phone").send_keys(phone)
        self.browser.find_element(By.ID, "phone-submit").click()
        code = self.server.wait_for_line(r"OTP \S+ (\d{6})", seconds=WAIT_SECONDS)
        self.wait(lambda: self.browser.find_element(By.ID, "code").is_displayed(), "the code field appears")
        self.browser.find_element(By.ID, "code").send_keys(code)
        self.browser.find_element(By.ID, "code-submit").click()
        body = self.browser.find_element(By.TAG_NAME, "body")
        self.wait(lambda: body.get_attribute("data-ready") == "app", "signed in with the code")
        self.browser.find_element(By.ID, "signout").click()
        self.wait(lambda: body.get_attribute("data-ready") == "signin", "signed out")
        self.assertFalse(self.browser.find_element(By.ID, "app").is_displayed())

    def sign_in_at_provider(self, server, provider, user):
        """Opens `server`'s page, clicks the provider's button and signs in at the provider's form as `user`."""
        self.browser.get(server.base + "/")
        body = self.browser.find_element(By.TAG_NAME, "body")
        self.wait(lambda: body.get_attribute("data-ready") == "signin", "the sign-in form is ready")
        button = self.browser.find_element(By.ID, "sso-start")
        self.wait(lambda: button.is_displayed() and button.text == "Sign in with Example ID", "the provider's button")
        button.click()
        # The provider's own sign-in form.
        self.wait(lambda: self.browser.current_url.startswith(provider.issuer + "/authorize"), "at the provider")
        self.browser.find_element(By.NAME, "user").send_keys(user)
        self.browser.find_element(By.TAG_NAME, "button").click()
        # Back at the server's page: an element looked up before the redirect lands is the provider's, stale for good.
        self.wait(lambda: self.browser.current_url.split("#")[0] == server.base + "/"
                  and self.browser.execute_script("return document.readyState") == "complete", "back at the server")

    @screenshot_on_failure
    def test_sign_in_with_the_operators_openid_provider_when_password_sign_in_is_off(self):
        provider = OpenIDProvider()
        servers = []
        try:
            ports = []
            for _ in range(2):  # the redirect URL names the server's port, so it is chosen first
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    ports.append(probe.getsockname()[1])
            callbacks = [f"http://127.0.0.1:{port}/v1/auth/oidc/callback" for port in ports]
            provider.control("/test/client", {
                "client_id": "meridian", "client_secret": "s3cret", "redirect_uris": callbacks,
                "response_types": ["code"], "token_endpoint_auth_method": "client_secret_basic"})
            provider.control("/test/user", {"user": "olena", "sub": "sub-olena",
                                            "claims": {"email": "olena@example.com", "email_verified": True}})
            for port, callback, registration in zip(ports, callbacks, ["open", "closed"]):
                servers.append(Server(self.binary, port=port, settings={
                    "MERIDIAN_OIDC_ISSUER": provider.issuer, "MERIDIAN_OIDC_CLIENT_ID": "meridian",
                    "MERIDIAN_OIDC_CLIENT_SECRET": "s3cret", "MERIDIAN_OIDC_REDIRECT_URL": callback,
                    "MERIDIAN_OIDC_NAME": "Example ID", "MERIDIAN_PASSWORD_SIGN_IN": "off",
                    "MERIDIAN_REGISTRATION": registration}))
            own, closed = servers

            self.sign_in_at_provider(own, provider, "olena")
            body = self.browser.find_element(By.TAG_NAME, "body")
            self.wait(lambda: body.get_attribute("data-ready") == "app", "signed in through the provider")
            self.assertEqual(self.browser.current_url, own.base + "/")  # the one-time code left the address
            self.browser.find_element(By.ID, "signout").click()
            self.wait(lambda: body.get_attribute("data-ready") == "signin", "signed out")
            self.assertFalse(self.browser.find_element(By.ID, "email-form").is_displayed())
            self.assertTrue(self.browser.find_element(By.ID, "phone-form").is_displayed())
            # The Ukrainian button.
            Select(self.browser.find_element(By.ID, "language")).select_by_value("uk")
            self.wait(lambda: self.browser.find_element(By.ID, "sso-start").text == "Увійти через Example ID",
                      "the button in Ukrainian")
            self.browser.execute_script("localStorage.removeItem('meridian.language')")

            # Where registration is closed, the person the server does not know is told so on the page.
            self.sign_in_at_provider(closed, provider, "olena")
            error = self.browser.find_element(By.ID, "signin-error")
            self.wait(lambda: error.is_displayed() and "makes no new accounts" in error.text, "the refusal is shown")
            self.assertEqual(self.browser.current_url, closed.base + "/")
            self.assertEqual(self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready"), "signin")
        finally:
            self.browser.execute_script("localStorage.removeItem('meridian.language')")
            for server in servers:
                server.stop()
            provider.stop()

    @screenshot_on_failure
    def test_live_map_resumes_after_the_server_restarts(self):
        own = Server(self.binary)
        try:
            viewer = Account(own, "Vera Viewer")
            friend = Account(own, "Olena Kovalenko")
            friend.share_with(viewer)
            friend.upload((50.4501, 30.5234))
            self.server, saved = own, self.server
            try:
                self.open_and_sign_in(viewer)
                self.wait_for_marker_at(friend, 50.4501, 30.5234)
                badge = self.browser.find_element(By.ID, "live-state")
                own.stop()  # sockets closed with 4004: the page reconnects with backoff
                self.wait(lambda: "on" not in badge.get_attribute("class").split(), "the page notices the lost socket")
                own = Server.restarted(self.binary, own)
                self.server = own
                self.wait(lambda: "on" in badge.get_attribute("class").split(), "the page reconnects", seconds=40)
                friend.server = own
                friend.upload((50.4530, 30.5260))
                self.wait_for_marker_at(friend, 50.4530, 30.5260)
            finally:
                self.server = saved
        finally:
            own.stop()

    def drag_map(self, right, down):
        """Drags the map by (right, down) pixels and lets go without a throw (no inertia moves it further)."""
        ActionChains(self.browser).move_to_element(self.browser.find_element(By.ID, "map")).click_and_hold() \
            .move_by_offset(right // 2, down // 2).move_by_offset(right - right // 2, down - down // 2).pause(0.3) \
            .release().perform()

    @screenshot_on_failure
    def test_directory_places_near_the_centre_reloaded_after_100_m_and_their_news(self):
        self.admin(["places", "import", "Tools/examples/tomsk-universities.json"])  # again is an update
        self.admin(["news", "add", "--place", "tsu", "--title", "en=Open day", "--title", "ru=День открытых дверей",
                    "--body", "en=Saturday at <b>noon</b>."])
        visitor = Account(self.server, "Tomas Tomsk")
        visitor.upload((56.4694, 84.9476))  # the map centres on the visitor at Tomsk State University (zoom 15)
        self.open_and_sign_in(visitor)
        self.wait(lambda: self.marker(visitor) is not None, "the visitor's position")
        self.wait(lambda: self.map_centre_near(56.4694, 84.9476), "the map centred on the visitor (its zoom ended)")
        self.show("places")
        page = self.browser.find_element(By.ID, "view-places")
        tsu = '#nearby li[data-place-id="tsu"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, tsu), "the university is listed near the centre")
        self.assertRegex(self.browser.find_element(By.CSS_SELECTOR, f"{tsu} .muted").text, r"^· \d m$")  # < 10 m
        self.assertTrue(self.browser.find_elements(By.CSS_SELECTOR, "path.place-marker"))
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, '#nearby li[data-place-id="tsu-phys"]'),
                         "a place without a position is not on the map")
        requests = page.get_attribute("data-requests")
        centre = page.get_attribute("data-map-centre")
        self.drag_map(15, 0)  # about 40 m at zoom 15 in Tomsk: not reloaded
        self.wait(lambda: page.get_attribute("data-map-centre") != centre, "the map moved a little")
        self.assertEqual(page.get_attribute("data-requests"), requests, "reloaded after less than 100 m")
        centre = page.get_attribute("data-map-centre")
        self.drag_map(-150, 0)  # about 350 m further east: reloaded
        self.wait(lambda: page.get_attribute("data-map-centre") != centre, "the map moved")
        self.assertEqual(int(page.get_attribute("data-requests")), int(requests) + 1, "reloaded once")
        self.wait(lambda: page.get_attribute("data-centre") == page.get_attribute("data-map-centre"),
                  "loaded for the new centre")
        distance = self.browser.find_element(By.CSS_SELECTOR, f"{tsu} .muted").text
        self.assertRegex(distance, r"^· [1-9]\d* m$")
        self.assertGreater(int(distance[2:-2]), 100)
        self.browser.find_element(By.CSS_SELECTOR, f"{tsu} button").click()
        directory = self.browser.find_element(By.ID, "view-directory")
        self.wait(lambda: directory.is_displayed() and directory.get_attribute("data-place-id") == "tsu",
                  "the place opens in the directory")
        news = '#news li.news'
        self.wait(lambda: [item.find_element(By.CSS_SELECTOR, ".title").text for item in self.browser.find_elements(
            By.CSS_SELECTOR, news)] == ["Open day"], "the university's news")
        self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, f"{news} .text").text, "Saturday at <b>noon</b>.")
        self.assertFalse(self.browser.find_elements(By.CSS_SELECTOR, "#news b"))
        self.browser.find_element(By.CSS_SELECTOR, '#crumbs button[data-place-id=""]').click()
        self.wait(lambda: directory.get_attribute("data-mode") == "top", "the top level")
        self.wait(lambda: "Open day" in [item.text for item in self.browser.find_elements(
            By.CSS_SELECTOR, f"{news} .title")], "all news on the top level")
        Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
        try:
            self.wait(lambda: "День открытых дверей" in [item.text for item in self.browser.find_elements(
                By.CSS_SELECTOR, f"{news} .title")], "the news in Russian")
            self.assertEqual(self.browser.find_element(By.ID, "news-title").text, "Новости")
        finally:
            Select(self.browser.find_element(By.ID, "language")).select_by_value("en")
        self.assert_no_script_errors()

    @screenshot_on_failure
    def test_every_paged_list_shows_more_until_its_last_page(self):
        """The polls feed (10 a page), the directory's places (20) and its news (5): More adds the next page, no row
        twice, and goes away on the last page; the history reads every page of its track (1,000 a page). A server of
        its own, so that the other tests' lists keep their sizes."""
        server = Server(self.binary)
        try:
            folder = tempfile.mkdtemp(prefix="meridian-pager-")
            with open(os.path.join(folder, "places.json"), "w") as file:
                json.dump([{"id": f"pager-{index:02d}", "kind": "hall", "title": {"en": f"Hall {index:02d}"}}
                           for index in range(23)], file)
            self.admin(["places", "import", os.path.join(folder, "places.json")], server=server)
            for index in range(7):
                self.admin(["news", "add", "--title", f"en=News {index}"], server=server)
            author = Account(server, "Paula Pager")
            polls = [author.post_poll(f"Question {index}", [(0, 90, 200), (40, 140, 40)]) for index in range(11)]
            news = [item["id"] for item in author.call("GET", "/v1/news?limit=50")["items"]]
            self.assertEqual(len(news), 7)
            now = int(time.time() * 1000)
            track = [(now - 1_010_000 + index * 1000, 50.45 + index * 1e-5, 30.52) for index in range(1005)]
            for start in range(0, len(track), 335):
                author.upload_at(track[start:start + 335])
            self.open_and_sign_in(author, base=server.base)

            def pages(rows, more, first, every):
                def listed():
                    return [row.get_attribute(f"data-{rows[1]}") for row in self.browser.find_elements(
                        By.CSS_SELECTOR, f"{rows[0]}[data-{rows[1]}]")]
                self.wait(lambda: len(listed()) == first, f"the first page of {rows[0]}")
                button = self.browser.find_element(By.ID, more)
                self.assertTrue(button.is_displayed(), f"{more} is shown while there is a next page")
                button.click()
                self.wait(lambda: not button.is_displayed(), f"{more} goes away on the last page")
                self.assertEqual(sorted(listed()), sorted(every), f"{rows[0]}: every row once")

            self.show("polls")
            pages(("#polls li", "poll-id"), "polls-more", 10, polls)
            self.assertEqual(self.browser.find_element(By.CSS_SELECTOR, "#polls li:last-child button").text,
                             "Question 0", "the oldest poll last")
            self.show("directory")
            pages(("#news li", "news-id"), "news-more", 5, news)
            pages(("#directory li", "place-id"), "directory-more", 20, [f"pager-{index:02d}" for index in range(23)])
            self.show("history")  # the track: every page of 1,000 fixes
            self.browser.find_element(By.CSS_SELECTOR, '#presets button[data-preset="allTime"]').click()
            summary = self.browser.find_element(By.ID, "history-summary")
            self.wait(lambda: summary.get_attribute("data-preset") == "allTime"
                      and summary.get_attribute("data-count") == "1005", "the track's two pages")
            self.assert_no_script_errors()
        finally:
            self.browser.get("about:blank")  # the page's socket goes before its server
            server.stop()

    @screenshot_on_failure
    def test_live_map_resumes_after_a_dropped_connection_with_what_it_missed(self):
        viewer = Account(self.server, "Vera Viewer")
        friend = Account(self.server, "Olena Kovalenko")
        friend.share_with(viewer)
        friend.upload((50.4501, 30.5234))
        proxy = Proxy(self.server.port)  # the page's connections go through it; the server keeps its state
        try:
            self.open_and_sign_in(viewer, base=proxy.base)
            self.browser.execute_script("document.body.dataset.sameDocument = 'yes'")
            self.wait_for_marker_at(friend, 50.4501, 30.5234)
            badge = self.browser.find_element(By.ID, "live-state")
            self.wait(lambda: "on" in badge.get_attribute("class").split(), "connected")
            proxy.drop()
            self.wait(lambda: "on" not in badge.get_attribute("class").split(), "the page notices the dropped socket")
            friend.upload((50.4530, 30.5260))  # while the page is away: it must catch up when back
            proxy.restore()
            self.wait(lambda: "on" in badge.get_attribute("class").split(), "the page reconnects", seconds=40)
            self.wait_for_marker_at(friend, 50.4530, 30.5260)
            self.assertEqual(
                self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-same-document"), "yes",
                "resumed, not reloaded")
        finally:
            proxy.stop()

    @screenshot_on_failure
    def test_places_lists_venues_near_the_centre_with_their_promotions(self):
        self.admin(["venues", "import", "Tools/examples/kyiv-venues.csv"])
        self.admin(["promotions", "create", "--venue", "blue-cup", "--id", f"coffee-{os.getpid()}", "--name",
                    "Morning coffee", "--code", "COFFEE", "--old-price", "6000", "--new-price", "4500", "--currency",
                    "UAH"])
        visitor = Account(self.server, "Vika Visitor")
        visitor.upload((50.4501, 30.5234))  # the map centres on the visitor, beside Blue Cup
        self.open_and_sign_in(visitor)
        self.wait(lambda: self.marker(visitor) is not None, "the visitor's position")
        self.show("places")
        blue_cup = '#venues li[data-venue-id="blue-cup"]'
        self.wait(lambda: self.browser.find_elements(By.CSS_SELECTOR, blue_cup), "Blue Cup is listed")
        self.assertTrue(self.browser.find_elements(By.CSS_SELECTOR, "path.venue-marker"))
        self.browser.find_element(By.CSS_SELECTOR, f"{blue_cup} button").click()
        self.wait(lambda: "COFFEE" in self.browser.find_element(By.CSS_SELECTOR, f"{blue_cup} .promotions").text,
                  "Blue Cup's promotion with its code")
        qr = self.browser.find_element(By.CSS_SELECTOR, f"{blue_cup} img.qr")
        self.wait(lambda: qr.is_displayed() and qr.get_property("naturalWidth") > 0, "the code as a QR image")
        request = urllib.request.Request(
            f"{self.server.base}/v1/promotions/coffee-{os.getpid()}/qr?format=png&scale=4",
            headers={"Authorization": f"Bearer {visitor.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            width = struct.unpack(">I", response.read()[16:20])[0]  # the PNG's IHDR width
        self.assertEqual(qr.get_property("naturalWidth"), width)
        self.assertEqual(qr.get_attribute("alt"), "QR code of COFFEE")
        Select(self.browser.find_element(By.ID, "language")).select_by_value("uk")
        self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, f"{blue_cup} button").text == "Синя чашка",
                  "the venue's Ukrainian name")

    @screenshot_on_failure
    def test_page_speaks_the_browsers_language_until_another_is_chosen(self):
        agent = self.browser.execute_script("return navigator.userAgent")
        person = Account(self.server, "Ulas Ukrainian")

        def heading():
            return self.browser.find_element(By.CSS_SELECTOR, "#signin h1").text

        def ready():
            return self.browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "signin"

        self.browser.execute_cdp_cmd("Emulation.setUserAgentOverride", {
            "userAgent": agent, "acceptLanguage": "uk-UA,uk;q=0.9,en;q=0.5"})
        try:
            self.browser.get(self.server.base + "/")
            self.browser.execute_script("localStorage.removeItem('meridian.language')")
            self.browser.get(self.server.base + "/")
            self.wait(lambda: ready() and heading() == "Вхід", "the sign-in page in Ukrainian, as the browser asks")
            self.assertEqual(Select(self.browser.find_element(By.ID, "language")).first_selected_option.text,
                             "Українська")
            self.assertEqual(self.browser.find_element(By.TAG_NAME, "html").get_attribute("lang"), "uk")
            Select(self.browser.find_element(By.ID, "language")).select_by_value("ru")
            self.wait(lambda: heading() == "Вход", "switched to Russian")
            self.browser.get(self.server.base + "/")
            self.wait(lambda: ready() and heading() == "Вход", "the choice outlives a reload")
            self.browser.find_element(By.ID, "email").send_keys(person.email)
            self.browser.find_element(By.ID, "password").send_keys(person.password)
            self.browser.find_element(By.ID, "email-submit").click()
            self.wait(lambda: self.browser.find_element(By.CSS_SELECTOR, '#nav [data-view="rewards"]').text
                      == "Награды", "signed in, in Russian")
        finally:
            self.browser.execute_script("localStorage.removeItem('meridian.language')")
            self.browser.execute_cdp_cmd("Emulation.setUserAgentOverride", {
                "userAgent": agent, "acceptLanguage": "en-US,en"})
        self.assert_no_script_errors()

    def test_accept_language_chooses_the_texts(self):
        def language(header):
            request = urllib.request.Request(self.server.base + "/app/strings.json", headers={"Accept-Language": header})
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())["language"]
        self.assertEqual(language("uk-UA,uk;q=0.9,en;q=0.5"), "uk")
        self.assertEqual(language("de-DE,ru;q=0.8,en;q=0.7"), "ru")
        self.assertEqual(language("fr"), "en")
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(self.server.base + "/app/..%2Fstrings.xcstrings", timeout=10)
        self.assertEqual(refused.exception.code, 404)


if __name__ == "__main__":
    unittest.main(verbosity=2)
