/// The official JavaScript Socket.IO client (`socket.io-client`'s browser build, ``SocketIOClientKind/javascript``) as a
/// person's live map in headless Chromium, driven through chromedriver by Selenium (Debian's `python3-selenium`, in
/// `/usr/bin/python3`). It behaves as ``socketIOClientScript`` does and says the same lines: it opens a page of the
/// server's own origin (`/health`, so that the client's requests are the page's own), loads the library into it,
/// connects, signs in with a token (`listen user`, or the `CONNECT` auth object) and reconnects on its own. The page
/// keeps what the client's callbacks saw and wakes this script, waiting in the page for it, which prints each as a
/// JSON line, also to the named pipe. The browser's console goes to standard error. Ends the browser on SIGTERM.
/// Arguments: the server's URL, the token, `polling` (polling, then the upgrade), `polling-only` or `websocket`,
/// `listen` or `auth`, the pipe's path, the library's path.
let socketIOBrowserClientScript = #"""
  import json, os, signal, sys

  url, token, transport, mode, pipe, library = sys.argv[1:7]
  # The pipe first: if what follows fails, its end ends the test's wait at once.
  acknowledgements = open(pipe, "w", buffering=1)

  def stop(*_):
      # Ends whatever this script waits in (taking no lock a handler could deadlock on), once: the browser then quits.
      signal.signal(signal.SIGTERM, signal.SIG_IGN)
      raise SystemExit(0)

  signal.signal(signal.SIGTERM, stop)

  from selenium import webdriver
  from selenium.common.exceptions import TimeoutException
  from selenium.webdriver.chrome.service import Service

  def say(line):
      print(json.dumps(line), flush=True)
      acknowledgements.write(json.dumps(line) + "\n")

  # "connected" names the transport the connection runs on: with polling first it is said once the upgrade is done
  # (which may finish before or after the server's CONNECT), as python-socketio's line does in these tests. Each line
  # the page keeps wakes this script's wait for one (`WAIT`).
  CLIENT = """
  const [url, token, transport, mode] = arguments;
  const lines = window.meridianLines = [];
  const say = (line) => {
    lines.push(line);
    if (window.meridianWake) window.meridianWake();
  };
  const transports = {"polling": ["polling", "websocket"], "polling-only": ["polling"]}[transport] || ["websocket"];
  const socket = io(url, {transports, auth: mode === "auth" ? {token} : undefined, timeout: 20000,
                          reconnectionDelay: 200, reconnectionDelayMax: 1000});
  socket.on("connect", () => {
    const engine = socket.io.engine;
    const ready = () => {
      say({event: "connected", transport: engine.transport.name});
      if (mode === "listen") socket.emit("listen user", token, (answer) => say({event: "listening", answer}));
      else say({event: "listening", answer: {ok: true}});
    };
    if (transports.length > 1 && engine.transport.name !== "websocket") engine.once("upgrade", ready);
    else ready();
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

  # Returns once the page keeps a line (at once if it does): a wake carries no line, so one that comes after its wait
  # gave up (the script timeout) loses nothing.
  WAIT = """
  const done = arguments[arguments.length - 1];
  if (window.meridianLines.length > 0) {
    done(true);
  } else {
    window.meridianWake = () => {
      window.meridianWake = null;
      done(true);
    };
  }
  """

  options = webdriver.ChromeOptions()
  options.binary_location = os.environ.get("MERIDIAN_CHROMIUM", "/usr/bin/chromium")
  for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]:
      options.add_argument(argument)
  options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
  browser = webdriver.Chrome(
      service=Service(os.environ.get("MERIDIAN_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
  try:
      browser.set_script_timeout(60)
      browser.get(url + "/health")
      with open(library, encoding="utf-8") as file:
          browser.execute_script(file.read())
      say({"event": "started"})
      browser.execute_script(CLIENT, url, token, transport, mode)
      while True:
          try:
              browser.execute_async_script(WAIT)
          except TimeoutException:
              pass  # a minute without a line: wait again
          for line in browser.execute_script("return window.meridianLines.splice(0)"):
              say(line)
          for entry in browser.get_log("browser"):
              print("console:", entry.get("message"), file=sys.stderr, flush=True)
  finally:
      signal.signal(signal.SIGTERM, signal.SIG_IGN)
      browser.quit()
  """#
