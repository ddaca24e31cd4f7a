// Cursor paging, written once for every list the API pages (a page gives `nextCursor`; `cursor=` asks for the next
// page): a Pager keeps one list's items loaded so far and its "More" button, shown while there is a next page.
import { request } from './api.js';

export class Pager {
  /**
   * @param {object} [options]
   * @param {string} [options.field] where a page holds its items (`items` unless told)
   * @param {HTMLElement} [options.button] the list's "More": shown while there is a next page, a click loads it
   * @param {() => void} [options.onMore] called when the button's page was added (to show it)
   * @param {(error: Error) => void} [options.onError] a page the button asked for failed
   */
  constructor({ field = 'items', button = null, onMore = () => {}, onError = () => {} } = {}) {
    this.field = field;
    this.button = button;
    this.path = null; // the first page's path
    this.items = [];
    this.nextCursor = null;
    this.loads = 0; // pages asked for; an older one's answer is dropped
    if (button) {
      button.addEventListener('click', () => this.more().then((added) => { if (added) onMore(); }, onError));
    }
  }

  /** Whether there is a page after those loaded. */
  get hasMore() { return this.nextCursor !== null; }

  /**
   * Loads `path`'s first page in place of the list (`null`: no list). Resolves to false when a newer load started
   * meanwhile (its answer is then dropped); rejects with the request's error.
   */
  open(path) {
    this.path = path;
    this.nextCursor = null;
    if (path === null) {
      this.loads += 1;
      this.settle([], null);
      return Promise.resolve(true);
    }
    return this.fetch(path, false);
  }

  /** Adds the next page; false when there is none or a newer load started meanwhile. */
  more() {
    if (this.path === null || this.nextCursor === null) return Promise.resolve(false);
    const separator = this.path.includes('?') ? '&' : '?';
    return this.fetch(`${this.path}${separator}cursor=${encodeURIComponent(this.nextCursor)}`, true);
  }

  /** Forgets the list (sign-out); a page still on its way is dropped. */
  reset() {
    this.loads += 1;
    this.path = null;
    this.settle([], null);
  }

  async fetch(path, appending) {
    const load = ++this.loads;
    const page = await request('GET', path);
    if (load !== this.loads) return false;
    const items = page[this.field] || [];
    this.settle(appending ? this.items.concat(items) : items, page.nextCursor || null);
    return true;
  }

  settle(items, nextCursor) {
    this.items = items;
    this.nextCursor = nextCursor;
    if (this.button) this.button.hidden = nextCursor === null;
  }
}
