/// A Web Push service for the tests, in Python, independent of the server's Swift: it makes a browser's key pair and
/// auth secret (printed as its first line, with its port, to the file its standard output goes to), verifies each push's VAPID JWT (ES256 over the header's
/// `k` key, `aud` its own origin, `exp` ahead, a `sub`) with `cryptography`, decrypts the `aes128gcm` payload with
/// `http_ece`, and keeps what it got for `GET /received`. `POST /push/<name>`: `gone` answers 410; `flaky` 500 to its
/// first push, then 201; any other 201. It runs until SIGTERM.
let pushServiceScript = #"""
  import base64, json, time, threading
  from http.server import HTTPServer, BaseHTTPRequestHandler
  import http_ece
  from cryptography.hazmat.primitives.asymmetric import ec
  from cryptography.hazmat.primitives import hashes, serialization
  from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

  def b64d(text):
      return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

  def b64e(data):
      return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

  browser = ec.generate_private_key(ec.SECP256R1())
  auth = bytes(range(16))
  p256dh = browser.public_key().public_bytes(
      serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
  received = []
  counts = {}
  lock = threading.Lock()

  def check_vapid(header, origin):
      scheme, _, params = header.partition(" ")
      assert scheme == "vapid", "scheme " + scheme
      fields = dict(part.strip().split("=", 1) for part in params.split(","))
      token, key = fields["t"], fields["k"]
      head, claims, signature = token.split(".")
      assert json.loads(b64d(head)) == {"typ": "JWT", "alg": "ES256"}
      public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(key))
      raw = b64d(signature)
      der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
      public.verify(der, (head + "." + claims).encode(), ec.ECDSA(hashes.SHA256()))
      body = json.loads(b64d(claims))
      assert body["aud"] == origin, "aud " + body["aud"]
      assert body["exp"] > time.time() and body["exp"] <= time.time() + 24 * 3600 + 60, "exp"
      assert body["sub"].startswith("mailto:") or body["sub"].startswith("https:"), "sub"
      return key

  class Handler(BaseHTTPRequestHandler):
      def log_message(self, *args):
          pass

      def do_GET(self):
          with lock:
              data = json.dumps(received).encode()
          self.send_response(200)
          self.send_header("Content-Length", str(len(data)))
          self.end_headers()
          self.wfile.write(data)

      def do_POST(self):
          name = self.path.rsplit("/", 1)[-1]
          body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
          with lock:
              counts[name] = counts.get(name, 0) + 1
              attempt = counts[name]
          entry = {"name": name, "attempt": attempt}
          try:
              origin = "http://127.0.0.1:%d" % self.server.server_port
              entry["vapidKey"] = check_vapid(self.headers.get("Authorization", ""), origin)
              assert self.headers.get("Content-Encoding") == "aes128gcm", "encoding"
              assert int(self.headers.get("TTL", "-1")) >= 0, "TTL"
              entry["payload"] = json.loads(
                  http_ece.decrypt(body, private_key=browser, auth_secret=auth, version="aes128gcm"))
          except Exception as error:
              entry["error"] = repr(error)
          status = 410 if name == "gone" else 500 if name == "flaky" and attempt == 1 else 201
          entry["status"] = status
          with lock:
              received.append(entry)
          self.send_response(status)
          self.send_header("Content-Length", "0")
          self.end_headers()

  server = HTTPServer(("127.0.0.1", 0), Handler)
  print(json.dumps({"port": server.server_port, "p256dh": b64e(p256dh), "auth": b64e(auth)}), flush=True)
  server.serve_forever()
  """#
