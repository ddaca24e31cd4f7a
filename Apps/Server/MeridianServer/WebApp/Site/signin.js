// The sign-in form: the operator's OpenID provider (single sign-on), an email and password, or a phone number and the
// code sent to it by SMS — as `GET /v1/auth/methods` offers them.
// API: /v1/auth/methods, /v1/auth/login, /v1/auth/otp/request, /v1/auth/otp/verify, /v1/auth/oidc/start and
// /v1/auth/oidc/session (docs/api/openapi.yaml).
import { ApiError, request } from './api.js';
import { $ } from './dom.js';
import { t } from './i18n.js';

let signedIn = async () => {};
let provider = null;

/** Wires the forms; `onSignedIn(token)` opens the app (a failure is shown under the form). Shows the provider's
 * button and hides the password form as the server says; a page opened at `/#sso=<code>` (the end of a single
 * sign-on) trades the code for a session. */
export async function setUpSignIn(onSignedIn) {
  signedIn = onSignedIn;
  $('email-form').addEventListener('submit', (event) => { event.preventDefault(); signInWithEmail(); });
  $('phone-form').addEventListener('submit', (event) => { event.preventDefault(); requestCode(); });
  $('code-form').addEventListener('submit', (event) => { event.preventDefault(); signInWithCode(); });
  try {
    const methods = await request('GET', '/v1/auth/methods');
    provider = methods.singleSignOn || null;
    $('sso').hidden = !provider;
    if (provider) $('sso-start').href = provider.startPath;
    $('email-form').hidden = !methods.password;
    $('signin-or-phone').hidden = !methods.password;
    renderSignIn();
  } catch { /* the forms stay as they are */ }
}

/** The texts that depend on the provider (again after a change of language). */
export function renderSignIn() {
  if (provider) $('sso-start').textContent = t('signin.sso', provider.name);
}

// Why a single sign-on was refused (`/#sso_error=<code>`, the API's error codes) → its text.
const SSO_ERRORS = {
  registration_closed: 'signin.sso.registrationClosed',
  account_disabled: 'signin.sso.accountDisabled',
  sso_state_invalid: 'signin.sso.stateInvalid',
  sso_token_invalid: 'signin.sso.tokenInvalid',
  sso_provider_error: 'signin.sso.providerError',
  sso_provider_unavailable: 'signin.sso.providerUnavailable',
};

/** Finishes a single sign-on whose one-time code is in the page's address (`/#sso=<code>`), or says why the server
 * refused it (`/#sso_error=<code>`); either leaves the address (and the history) at once. Whether it signed in. */
export async function finishSingleSignOn() {
  const refused = /^#sso_error=([a-z_]+)$/.exec(window.location.hash);
  const match = /^#sso=([A-Za-z0-9_-]+)$/.exec(window.location.hash);
  if (!match && !refused) return false;
  history.replaceState(null, '', window.location.pathname + window.location.search);
  if (refused) {
    const message = $('signin-error');
    const code = refused[1];
    message.textContent = t(code in SSO_ERRORS ? SSO_ERRORS[code] : 'signin.sso.failed');
    message.hidden = false;
    message.scrollIntoView({ block: 'nearest' });
    return false;
  }
  try {
    const answer = await request('POST', '/v1/auth/oidc/session', { code: match[1] });
    await accepted(answer.token);
    return true;
  } catch (error) {
    signInFailed(error);
    return false;
  }
}

/** Shows the form again (sign-out), without the code field. */
export function showSignIn() {
  $('code-form').hidden = true;
  $('signin').hidden = false;
}

/** Hides the form (signed in). */
export function hideSignIn() {
  $('signin').hidden = true;
}

/** Says that starting the page failed. */
export function showStartFailure(error) {
  const message = $('signin-error');
  message.textContent = String(error);
  message.hidden = false;
}

function signInFailed(error) {
  const message = $('signin-error');
  message.textContent = t('signin.failed', error instanceof ApiError ? error.message : String(error));
  message.hidden = false;
}

/** The token was given: the secrets typed are cleared before the app opens. */
async function accepted(token) {
  $('signin-error').hidden = true;
  $('password').value = '';
  $('code').value = '';
  await signedIn(token);
}

async function signInWithEmail() {
  try {
    const answer = await request('POST', '/v1/auth/login', { email: $('email').value, password: $('password').value });
    await accepted(answer.token);
  } catch (error) { signInFailed(error); }
}

async function requestCode() {
  try {
    await request('POST', '/v1/auth/otp/request', { phone: $('phone').value });
    $('code-form').hidden = false;
    $('code').focus();
  } catch (error) { signInFailed(error); }
}

async function signInWithCode() {
  try {
    const answer = await request('POST', '/v1/auth/otp/verify', { phone: $('phone').value, code: $('code').value });
    await accepted(answer.token);
  } catch (error) { signInFailed(error); }
}
