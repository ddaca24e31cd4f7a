// The HTTP API of this origin. The bearer token lives in this module's memory only: never in a cookie (so no other
// site can make the browser send it) nor in storage (so a reload signs out).

let token = null;

/** A failed request: the server's stable error code and message, or `network` when it could not be reached. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function setToken(value) { token = value; }
export function currentToken() { return token; }

/**
 * `method path` with an optional JSON body and extra `headers`; resolves to the decoded JSON answer (null for
 * 202/204).
 */
export async function request(method, path, body, { timeoutMs = 15000, headers = {} } = {}) {
  const response = await send(method, path, body, timeoutMs, 'application/json', headers);
  if (response.status === 202 || response.status === 204) return null;
  return response.json();
}

/** `POST path` with `blob`'s bytes as the body (an image upload); resolves to the decoded JSON answer. */
export async function upload(path, blob, { timeoutMs = 60000 } = {}) {
  const response = await send('POST', path, blob, timeoutMs, 'application/octet-stream');
  return response.json();
}

/** `GET path` as a Blob (for exports). */
export async function download(path, { timeoutMs = 60000 } = {}) {
  const response = await send('GET', path, undefined, timeoutMs);
  return response.blob();
}

async function send(method, path, body, timeoutMs, contentType = 'application/json', extra = {}) {
  const headers = { ...extra, Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = contentType;
  const encoded = body === undefined || body instanceof Blob ? body : JSON.stringify(body);
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: encoded,
      credentials: 'omit', cache: 'no-store', signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new ApiError(0, 'network', String(error && error.message || error));
  }
  if (!response.ok) {
    let code = 'http_' + response.status;
    let message = response.statusText;
    try {
      const envelope = await response.json();
      code = envelope.error.code;
      message = envelope.error.message;
    } catch { /* not the error envelope */ }
    throw new ApiError(response.status, code, message);
  }
  return response;
}
