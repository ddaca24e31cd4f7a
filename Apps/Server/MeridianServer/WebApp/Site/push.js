// This browser's notifications (Web Push): the service worker `push-worker.js` that shows the alerts, this browser's
// push subscription made with the server's VAPID key and registered at /v1/push/subscriptions, and its removal.
// API: /v1/push/… (docs/api/openapi.yaml).
import { request } from './api.js';

const WORKER = '/app/push-worker.js';

/** Why this browser can't be subscribed: `unsupported` (no service workers or Push API) or `denied` (blocked). */
export class PushUnavailable extends Error {
  constructor(reason) {
    super(reason);
    this.reason = reason;
  }
}

/** Whether this browser can receive pushes at all (service workers, the Push API and notifications). */
export function pushSupported() {
  return window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

/** This browser's registration among the caller's `registrations` (`webpush` ones of GET /v1/webhooks), or null. */
export async function thisBrowsersRegistration(registrations) {
  const subscription = await currentSubscription();
  if (!subscription) return null;
  return registrations.find((registration) => registration.url === subscription.endpoint) || null;
}

/** Asks the person's permission, subscribes this browser with the server's key and registers it; the registration. */
export async function subscribeThisBrowser() {
  if (!pushSupported()) throw new PushUnavailable('unsupported');
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new PushUnavailable('denied');
  const worker = await activated(await navigator.serviceWorker.register(WORKER));
  const { publicKey } = await request('GET', '/v1/push/vapid-public-key');
  const subscription = await worker.pushManager.subscribe({
    userVisibleOnly: true, applicationServerKey: base64URLBytes(publicKey),
  });
  const { endpoint, keys } = subscription.toJSON();
  try {
    return await request('POST', '/v1/push/subscriptions', { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } });
  } catch (error) {
    await subscription.unsubscribe(); // the server refused it: the browser keeps no subscription nobody uses
    throw error;
  }
}

/** Removes `registration` (this browser's) from the server and ends the browser's subscription. */
export async function unsubscribeThisBrowser(registration) {
  await request('DELETE', `/v1/push/subscriptions/${encodeURIComponent(registration.id)}`);
  const subscription = await currentSubscription();
  if (subscription) await subscription.unsubscribe();
}

async function currentSubscription() {
  if (!pushSupported()) return null;
  const worker = await navigator.serviceWorker.getRegistration(WORKER);
  return worker ? worker.pushManager.getSubscription() : null;
}

/**
 * `registration` once its worker is active. (Not `navigator.serviceWorker.ready`: the worker's scope, `/app/`, does
 * not hold the page, so that promise would never settle.)
 */
function activated(registration) {
  if (registration.active) return Promise.resolve(registration);
  const worker = registration.installing || registration.waiting;
  return new Promise((resolve, reject) => {
    worker.addEventListener('statechange', () => {
      if (worker.state === 'activated') resolve(registration);
      else if (worker.state === 'redundant') reject(new Error('the notification worker did not start'));
    });
  });
}

function base64URLBytes(text) {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}
