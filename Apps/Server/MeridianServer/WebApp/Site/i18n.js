// Texts from the server's String Catalog (`/app/strings.json`): plain texts and plural texts whose form is chosen
// with the language's CLDR plural rules (Intl.PluralRules).

let language = 'en';
let languages = ['en'];
let strings = {};
let rules = new Intl.PluralRules('en');

/** Loads the texts of `requested`, or of the browser's Accept-Language when it is null. */
export async function load(requested) {
  const query = requested ? `?lang=${encodeURIComponent(requested)}` : '';
  const response = await fetch(`/app/strings.json${query}`, { cache: 'no-store', signal: AbortSignal.timeout(15000) });
  if (!response.ok) throw new Error(`strings: HTTP ${response.status}`);
  const body = await response.json();
  language = body.language;
  languages = body.languages;
  strings = body.strings;
  rules = new Intl.PluralRules(language);
  document.documentElement.lang = language;
}

export function currentLanguage() { return language; }
export function offeredLanguages() { return languages; }

/** The text of `key` with `%@` replaced by `argument`; the key itself when the catalog lacks it. */
export function t(key, argument) {
  const text = strings[key];
  const value = typeof text === 'string' ? text : key;
  return argument === undefined ? value : value.replace('%@', String(argument));
}

/** The plural text of `key` for `count`: `plural('history.fixes', 3)` → "3 точки" in Russian. */
export function plural(key, count) {
  const forms = strings[key];
  if (!forms || typeof forms !== 'object') return `${count} ${key}`;
  const form = forms[rules.select(count)] ?? forms.other ?? Object.values(forms)[0];
  return form.replace(/%(lld|ld|d|@)/, String(count));
}

/** Fills every `[data-i18n]` element under `root` with its text. */
export function apply(root = document) {
  for (const element of root.querySelectorAll('[data-i18n]')) element.textContent = t(element.dataset.i18n);
}

/** "5 minutes ago" for a time in UTC milliseconds. */
export function age(timestamp, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - timestamp) / 1000));
  if (seconds < 10) return t('age.now');
  if (seconds < 60) return plural('age.seconds', seconds);
  if (seconds < 3600) return plural('age.minutes', Math.floor(seconds / 60));
  if (seconds < 86400) return plural('age.hours', Math.floor(seconds / 3600));
  return plural('age.days', Math.floor(seconds / 86400));
}
