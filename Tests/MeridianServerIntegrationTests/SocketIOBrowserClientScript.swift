/// The official JavaScript Socket.IO client (`socket.io-client`'s browser build, ``SocketIOClientKind/javascript``) as a
/// person's live map in headless Chromium, driven through chromedriver by Selenium (Debian's `python3-selenium`, in
/// `/usr/bin/python3`). It behaves as ``socketIOClientScript`` does and says the same lines: it opens a page of the
/// server's own origin (`/health`, so that the client's requests are the page's own), loads the library into it,
/// connects, signs in with a token (`listen user`, or the `CONNECT` auth object) and reconnects on its own. The page
/// keeps what the client's callbacks saw; this script takes it every 20 ms and prints each as a JSON line, also to
/// the named pipe. The browser's console goes to standard error. Ends the browser on SIGTERM.
/// Arguments: the server's URL, the token, `polling` (polling, then the upgrade), `polling-only` or `websocket`,
/// `listen` or `auth`, the pipe's path, the library's path.
let socketIOBrowserClientScript = #"""
  import json, os, signal, sys, time

  url, token, transport, mode, pipe, library = sys.argv[1:7]
  # The pipe first: if what follows fails, its end ends the test's wait at once.
  acknowledgements = open(pipe, "w", buffering=1)
  # A plain flag: a handler that takes a lock (threading.Event.set) can deadlock with the waiting it interrupts.
  stopping = [False]
  signal.signal(signal.SIGTERM, lambda *_: stopping.__setitem__(0, True))

  from selenium import webdriver
  from selenium.webdriver.chrome.service import Service

  def say(line):
      print(json.dumps(line), flush=True)
      acknowledgements.write(json.dumps(line) + "\n")

  # "connected" names the transport the connection runs on: with polling first it is said once the upgrade is done
  # (which may finish before or after the server's CONNECT), as python-socketio's line does in these tests, or after
  # 10 s without one (then naming polling, which the test refuses).
  CLIENT = """
  const [url, token, transport, mode] = arguments;
  const lines = window.meridianLines = [];
  const say = (line) => lines.push(line);
  const transports = {"polling": ["polling", "websocket"], "polling-only": ["polling"]}[transport] || ["websocket"];
  const socket = io(url, {transports, auth: mode === "auth" ? {token} : undefined, timeout: 20000,
                          reconnectionDelay: 200, reconnectionDelayMax: 1000});
  socket.on("connect", () => {
    const engine = socket.io.engine;
    let said = false;
    const ready = () => {
      if (said) return;
      said = true;
      say({event: "connected", transport: engine.transport.name});
      if (mode === "listen") socket.emit("listen user", token, (answer) => say({event: "listening", answer}));
      else say({event: "listening", answer: {ok: true}});
    };
    if (transports.length > 1 && engine.transport.name !== "websocket") {
      engine.once("upgrade", ready);
      setTimeout(ready, 10000);
    } else {
      ready();
    }
  });
  socket.on("message", (data) => say({event: "message", data}));
  socket.on("unauthorized", (data) => say({event: "unauthorized", data}));
  socket.on("connect_error", (error) => {
    // CONNECT_ERROR's data is the error's message, and any other fields its `data`.
    const data = error.data === undefined ? {} : {data: error.data};
    say({event: "refused", data: Object.assign({message: error.message}, data)});
    if (!socket.active) say({event: "connect_error", message: error.message});
  });
  socket.on("disconnect", (reason) => say({event: "disconnected", reason}));
  """

  options = webdriver.ChromeOptions()
  options.binary_location = os.environ.get("MERIDIAN_CHROMIUM", "/usr/bin/chromium")
  for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]:
      options.add_argument(argument)
  options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
  browser = webdriver.Chrome(
      service=Service(os.environ.get("MERIDIAN_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
  try:
      browser.set_script_timeout(10)
      browser.get(url + "/health")
      with open(library, encoding="utf-8") as file:
          browser.execute_script(file.read())
      say({"event": "started"})
      browser.execute_script(CLIENT, url, token, transport, mode)
      while not stopping[0]:
          time.sleep(0.02)
          for line in browser.execute_script("return window.meridianLines.splice(0)"):
              say(line)
          for entry in browser.get_log("browser"):
              print("console:", entry.get("message"), file=sys.stderr, flush=True)
  except Exception:
      if not stopping[0]:
          raise
  finally:
      browser.quit()
  """#
