// The rewards page of the polls line: the points balance with its ledger, the partner shops' coupon offers, buying
// one with points (one Idempotency-Key per click, so a retry never spends twice), and the coupons bought.
// API: /v1/me/points, /v1/coupons, /v1/coupons/{id}/purchase, /v1/me/coupons (docs/api/openapi.yaml).
import { ApiError, request } from './api.js';
import { $, button, element, mutedRow } from './dom.js';
import { currentLanguage, plural, t } from './i18n.js';

const REFUSALS = {
  insufficient_points: 'rewards.notEnough', out_of_stock: 'rewards.soldOut', offer_expired: 'rewards.ended',
};

let report = () => {};
let state = null; // {points, offers, coupons}
let generation = 0;

/** `onError` shows a failed request other than a refused purchase. */
export function setUpRewards(onError) {
  report = onError;
}

/** Loads the balance, the offers and the coupons bought, and shows them. */
export async function showRewards() {
  const current = ++generation;
  try {
    const [points, offers, coupons] = await Promise.all([
      request('GET', '/v1/me/points'), request('GET', '/v1/coupons'), request('GET', '/v1/me/coupons'),
    ]);
    if (current !== generation) return;
    state = { points, offers: offers.items || [], coupons: coupons.items || [] };
    render();
  } catch (error) { report(error); }
}

/** Forgets everything (sign-out). */
export function resetRewards() {
  generation += 1;
  state = null;
  for (const id of ['offers', 'my-coupons', 'ledger']) $(id).replaceChildren();
  $('points-balance').textContent = '';
  $('rewards-error').hidden = true;
}

function render() {
  const { points, offers, coupons } = state;
  const balance = $('points-balance');
  balance.dataset.balance = String(points.balance);
  balance.textContent = plural('rewards.balance', points.balance);
  const date = new Intl.DateTimeFormat(currentLanguage(), { dateStyle: 'medium', timeStyle: 'short' });
  $('offers').replaceChildren(...(offers.length ? offers.map(({ offer, description, remaining }) => element('li', {
    className: 'offer', data: { offerId: offer.id },
  }, element('strong', {}, offer.title), ` · ${offer.shopName}`,
  description ? element('div', { className: 'muted' }, description) : null,
  element('div', {}, element('span', { className: 'price' }, plural('rewards.points', offer.price)), ' · ',
    element('span', { className: 'muted remaining' }, plural('rewards.left', remaining ?? 0)), ' ',
    button(t('rewards.buy'), () => buy(offer.id), { className: 'buy', disabled: !remaining }))))
    : [mutedRow(t('rewards.noOffers'))]));
  const titles = new Map(offers.map(({ offer }) => [offer.id, `${offer.title} · ${offer.shopName}`]));
  $('my-coupons').replaceChildren(...(coupons.length ? coupons.map((coupon) => element('li', {
    className: 'coupon', data: { couponId: coupon.id, offerId: coupon.offerId },
  }, element('strong', { className: 'code' }, coupon.code), ' ', titles.get(coupon.offerId) || '',
  element('div', { className: 'muted' }, date.format(new Date(coupon.purchasedAt)))))
    : [mutedRow(t('rewards.noCoupons'))]));
  $('ledger').replaceChildren(...(points.entries || []).map((entry) => element('li', {
    className: 'entry', data: { reason: entry.reason, amount: String(entry.amount) },
  }, element('span', { className: entry.amount < 0 ? 'spent' : 'earned' },
    `${entry.amount < 0 ? '−' : '+'}${plural('rewards.points', Math.abs(entry.amount))}`),
  ` ${t(`rewards.reason.${entry.reason}`)}`, element('div', { className: 'muted' },
    date.format(new Date(entry.createdAt))))));
}

/** Buys one coupon of `offerId`; a refusal (not enough points, sold out, ended) is said under the offers. */
async function buy(offerId) {
  const message = $('rewards-error');
  message.hidden = true;
  try {
    await request('POST', `/v1/coupons/${encodeURIComponent(offerId)}/purchase`, undefined, {
      headers: { 'Idempotency-Key': randomKey() },
    });
  } catch (error) {
    if (!(error instanceof ApiError && REFUSALS[error.code])) {
      report(error);
      return;
    }
    message.dataset.code = error.code;
    message.textContent = t(REFUSALS[error.code]);
    message.hidden = false;
  }
  await showRewards();
}

/** 128 random bits in hex (crypto.randomUUID needs a secure context; a page on a LAN address over HTTP is not). */
function randomKey() {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
