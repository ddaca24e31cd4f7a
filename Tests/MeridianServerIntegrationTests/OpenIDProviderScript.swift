/// A real OpenID provider for the tests: pyop's `Provider` (PyPI `pyop`, on `oic` and `pyjwkest`) behind Python's
/// HTTP server on 127.0.0.1 — its own discovery document, key set, authorization and token endpoints (code flow,
/// PKCE S256, client authentication), ID tokens signed with keys it generates. The sign-in form at `/authorize` is
/// answered by posting `request` (the authorization request) and `user` to `/login`, as a person would.
///
/// Prints `{"port": …, "issuer": …}` as its first line. The test's controls, on the same port:
/// - `POST /test/client` `{"client_id", "client_secret"?, "redirect_uris", "response_types",
///   "token_endpoint_auth_method"}` registers a client;
/// - `POST /test/user` `{"user", "sub", "claims": {"email", "email_verified", …}}` adds a person (the claims go into
///   the ID token, as providers do for the `email` scope);
/// - `POST /test/rotate` `{"alg": "RS256" | "ES256"}` replaces the signing key (the old one is no longer published);
/// - `POST /test/settings` `{"id_token_lifetime": s, "nonce_override": "…", "unpublished_key": true,
///   "issuer_override": "…", "hang": true}` makes expired tokens, wrong nonces, tokens signed by a key the key set
///   lacks, a discovery document naming another issuer, or a provider that takes requests and never answers.
/// It runs until SIGTERM.
let openIDProviderScript = #"""
  import json, sys, threading, time
  from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
  from urllib.parse import parse_qs, urlencode, urlparse

  from Cryptodome.PublicKey import RSA
  from jwkest.ecc import P256
  from jwkest.jwk import ECKey, RSAKey
  from pyop.authz_state import AuthorizationState
  from pyop.exceptions import InvalidAuthenticationRequest, InvalidClientAuthentication, OAuthError
  from pyop.provider import Provider
  from pyop.subject_identifier import HashBasedSubjectIdentifierFactory
  from pyop.userinfo import Userinfo

  server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
  issuer = "http://127.0.0.1:%d" % server.server_address[1]
  lock = threading.Lock()
  generation = [0]


  def new_key(alg):
      generation[0] += 1
      kid = "%s-%d" % (alg.lower(), generation[0])
      if alg == "ES256":
          private, public = P256.key_pair()
          return ECKey(x=public[0], y=public[1], d=private, crv="P-256", kid=kid, use="sig", alg=alg)
      return RSAKey(key=RSA.generate(2048), kid=kid, use="sig", alg=alg)


  class TestProvider(Provider):
      """pyop's provider; the test chooses the keys it publishes apart from the one it signs with."""

      published = []
      nonce_override = None

      @property
      def jwks(self):
          return {"keys": [key.serialize() for key in self.published]}

      def _create_signed_id_token(self, client_id, sub, user_claims=None, nonce=None, *args, **kwargs):
          return super()._create_signed_id_token(
              client_id, sub, user_claims, self.nonce_override or nonce, *args, **kwargs)


  users = {}
  clients = {}
  first_key = new_key("RS256")
  # oic checks that the issuer is https; the test's provider is on loopback over http, so it is built under an https
  # name and then given its own.
  provider = TestProvider(
      first_key,
      {
          "issuer": "https://placeholder.invalid",
          "authorization_endpoint": issuer + "/authorize",
          "token_endpoint": issuer + "/token",
          "jwks_uri": issuer + "/jwks",
          "userinfo_endpoint": issuer + "/userinfo",
          "response_types_supported": ["code"],
          "subject_types_supported": ["public"],
          "id_token_signing_alg_values_supported": ["RS256", "ES256"],
          "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
          "code_challenge_methods_supported": ["S256"],
          "scopes_supported": ["openid", "email", "profile"],
      },
      AuthorizationState(HashBasedSubjectIdentifierFactory("salt")),
      clients,
      Userinfo(users),
  )
  provider.configuration_information["issuer"] = issuer
  provider.published = [first_key]
  settings = {"issuer_override": None, "hang": False}


  def id_token_claims(user_id, client_id):
      claims = users[user_id]
      return {name: claims[name] for name in ("email", "email_verified", "name") if name in claims}


  class Handler(BaseHTTPRequestHandler):
      protocol_version = "HTTP/1.1"

      def log_message(self, *args):
          pass

      def answer(self, status, body=b"", content_type="application/json", headers=()):
          if isinstance(body, (dict, list)):
              body = json.dumps(body).encode()
          elif isinstance(body, str):
              body = body.encode()
          self.send_response(status)
          self.send_header("Content-Type", content_type)
          self.send_header("Content-Length", str(len(body)))
          self.send_header("Cache-Control", "no-store")
          for name, value in headers:
              self.send_header(name, value)
          self.end_headers()
          self.wfile.write(body)

      def body(self):
          return self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()

      def redirect(self, url):
          self.answer(302, "", "text/plain", [("Location", url)])

      def hang(self):
          # A provider that takes the connection and never answers (the test's deadline check).
          if settings["hang"] and not self.path.startswith("/test/"):
              time.sleep(60)
              return True
          return False

      def do_GET(self):
          if self.hang():
              return
          url = urlparse(self.path)
          with lock:
              if url.path == "/.well-known/openid-configuration":
                  configuration = provider.provider_configuration.to_dict()
                  if settings["issuer_override"]:
                      configuration["issuer"] = settings["issuer_override"]
                  return self.answer(200, configuration)
              if url.path == "/jwks":
                  return self.answer(200, provider.jwks)
              if url.path == "/authorize":
                  # The sign-in form: the test "types" a user name and sends it with the request, as a person would.
                  try:
                      provider.parse_authentication_request(url.query)
                  except InvalidAuthenticationRequest as error:
                      return self.answer(400, {"error": "invalid_request", "error_description": str(error)})
                  form = (
                      '<form method="post" action="/login"><input name="request" type="hidden" value="%s">'
                      '<input name="user"><button>Sign in</button></form>' % url.query.replace('"', "&quot;"))
                  return self.answer(200, form, "text/html")
          self.answer(404, {"error": "not_found"})

      def do_POST(self):
          if self.hang():
              return
          url = urlparse(self.path)
          body = self.body()
          with lock:
              if url.path == "/login":
                  form = parse_qs(body)
                  user = form.get("user", [""])[0]
                  if user not in users:
                      return self.answer(401, "unknown user", "text/plain")
                  request = provider.parse_authentication_request(form["request"][0])
                  response = provider.authorize(request, user)
                  return self.redirect(response.request(request["redirect_uri"], False))
              if url.path == "/token":
                  try:
                      response = provider.handle_token_request(body, self.headers, extra_id_token_claims=id_token_claims)
                  except InvalidClientAuthentication as error:
                      return self.answer(401, {"error": "invalid_client", "error_description": str(error)})
                  except OAuthError as error:
                      return self.answer(400, {"error": error.oauth_error, "error_description": str(error)})
                  return self.answer(200, response.to_dict())
              # The test's controls, on the same loopback port.
              if url.path == "/test/client":
                  client = json.loads(body)
                  clients[client.pop("client_id")] = client
                  return self.answer(200, {})
              if url.path == "/test/user":
                  claims = json.loads(body)
                  users[claims["user"]] = {"sub": claims["sub"], **claims.get("claims", {})}
                  return self.answer(200, {})
              if url.path == "/test/rotate":
                  # A new signing key that replaces the published one (the old one is no longer accepted).
                  alg = json.loads(body or "{}").get("alg", "RS256")
                  provider.signing_key = new_key(alg)
                  provider.published = [provider.signing_key]
                  for client in clients.values():
                      client["id_token_signed_response_alg"] = alg
                  return self.answer(200, {"kid": provider.signing_key.kid})
              if url.path == "/test/settings":
                  changes = json.loads(body)
                  if "id_token_lifetime" in changes:
                      provider.id_token_lifetime = changes["id_token_lifetime"]
                  if "nonce_override" in changes:
                      provider.nonce_override = changes["nonce_override"]
                  if "unpublished_key" in changes:
                      # Signs with a key the JWKS does not list (the published keys stay as they are).
                      provider.signing_key = new_key("RS256") if changes["unpublished_key"] else provider.published[0]
                  if "hang" in changes:
                      settings["hang"] = changes["hang"]
                  if "issuer_override" in changes:
                      settings["issuer_override"] = changes["issuer_override"]
                  return self.answer(200, {})
          self.answer(404, {"error": "not_found"})


  server.RequestHandlerClass = Handler
  print(json.dumps({"port": server.server_address[1], "issuer": issuer}), flush=True)
  server.serve_forever()
  """#
