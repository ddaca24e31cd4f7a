// The sign-in form: an email and password, or a phone number and the code sent to it by SMS.
// API: /v1/auth/login, /v1/auth/otp/request, /v1/auth/otp/verify (docs/api/openapi.yaml).
import { ApiError, request } from './api.js';
import { $ } from './dom.js';
import { t } from './i18n.js';

let signedIn = async () => {};

/** Wires the forms; `onSignedIn(token)` opens the app (a failure is shown under the form). */
export function setUpSignIn(onSignedIn) {
  signedIn = onSignedIn;
  $('email-form').addEventListener('submit', (event) => { event.preventDefault(); signInWithEmail(); });
  $('phone-form').addEventListener('submit', (event) => { event.preventDefault(); requestCode(); });
  $('code-form').addEventListener('submit', (event) => { event.preventDefault(); signInWithCode(); });
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
