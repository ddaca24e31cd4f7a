#!/usr/bin/python3
"""The share page's benchmark: how long a person without an account waits, from opening a share link to its first
position drawn on the map, in headless Chromium against a meridian-server.

    Tests/browser/share_link_bench.py [--server BIN] [--database POSTGRES_URL] [--opens 100]

Run with Debian's /usr/bin/python3 and python3-selenium, as Tests/browser/run does. It prints
`sharelink.open_ms.p50`, `.p99` and `.max` (ms, in the format of meridian-server-bench's lines). The server is the
one given (default: the release build's meridian-server, else the debug one), on a new SQLite file or on the
PostgreSQL database given (empty or migrated; the server migrates it). Each open is a new navigation with the
browser's cache off, as for someone opening a link they were sent. The time is the page's own: from the start of the
navigation (`performance.now()`) to the moment the position's marker is in the map's marker pane, as recorded by a
script installed before the page's own. Run a release server for figures; a debug one shows the page's share of the
time.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_webapp import Account, Server, headless_chromium  # noqa: E402  (the tests' own harness)

# Installed before each page's scripts: records when the first shared position is drawn, in the page's time.
FIRST_POSITION_OBSERVER = """
new MutationObserver((changes, observer) => {
  if (document.querySelector('.leaflet-marker-pane .shared-position')) {
    window.meridianFirstPositionAt = performance.now();
    observer.disconnect();
    if (window.meridianOnFirstPosition) window.meridianOnFirstPosition(window.meridianFirstPositionAt);
  }
}).observe(document, {childList: true, subtree: true});
"""

# Answers the time recorded above as soon as there is one: at once, or when the observer calls it back.
AWAIT_FIRST_POSITION = """
const done = arguments[arguments.length - 1];
if (window.meridianFirstPositionAt !== undefined) done(window.meridianFirstPositionAt);
else window.meridianOnFirstPosition = done;
"""


def share_link_open_times(browser, page_url, opens):
    """Opens `page_url` (a share page) `opens` times, each a new navigation without the cache; answers the
    milliseconds from each navigation's start to its first position drawn."""
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    script = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_POSITION_OBSERVER})
    times = []
    try:
        for _ in range(opens):
            browser.get(page_url)
            # The page says when it drew the position (the browser's script timeout if it never does).
            times.append(float(browser.execute_async_script(AWAIT_FIRST_POSITION)))
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        browser.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": False})
    return times


def quantile(sorted_values, q):
    """The value below which a share `q` of `sorted_values` lies (nearest rank)."""
    return sorted_values[min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))]


def default_server():
    for configuration in ["release", "debug"]:
        path = subprocess.run(["swift", "build", "-c", configuration, "--show-bin-path"], capture_output=True,
                              text=True, timeout=120, check=True).stdout.strip()
        binary = os.path.join(path, "meridian-server")
        if os.access(binary, os.X_OK):
            return binary
    sys.exit("no meridian-server built; run swift build -c release --product meridian-server, or give --server")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", help="the meridian-server to run (default: the release build's, else debug's)")
    parser.add_argument("--database", help="a PostgreSQL URL (default: a new SQLite file)")
    parser.add_argument("--opens", type=int, default=100, help="how many times the page is opened (default 100)")
    arguments = parser.parse_args()
    binary = arguments.server or default_server()
    # One browser opening the link again and again: not the per-link and per-address read limits' business.
    unlimited = {"MERIDIAN_LIMIT_SHARED_VIEWS_PER_LINK_PER_MINUTE": "1000000",
                 "MERIDIAN_LIMIT_SHARED_VIEWS_PER_ADDRESS_PER_MINUTE": "1000000"}
    server = Server(binary, database=arguments.database, settings=unlimited)
    browser = None
    try:
        owner = Account(server, "Bench Owner")
        owner.upload((50.4501, 30.5234))
        link = owner.call("POST", "/v1/share-links", {"until": int(time.time() * 1000) + 3_600_000, "label": "Bench"})
        browser = headless_chromium(tempfile.mkdtemp(prefix="meridian-bench-downloads-"))
        share_link_open_times(browser, server.base + link["url"], 3)  # Chromium's own start, not the page's
        times = sorted(share_link_open_times(browser, server.base + link["url"], arguments.opens))
        print(f"sharelink.opens {len(times)} opens")
        print(f"sharelink.open_ms.p50 {quantile(times, 0.50):.1f} ms")
        print(f"sharelink.open_ms.p99 {quantile(times, 0.99):.1f} ms")
        print(f"sharelink.open_ms.max {times[-1]:.1f} ms")
    finally:
        if browser:
            browser.quit()
        server.stop()


if __name__ == "__main__":
    main()
