// Small DOM helpers shared by the pages: elements are built with text, never with HTML.

export const $ = (id) => document.getElementById(id);

/** `<tag>` with `properties` (dataset keys as `data`) and `children` (nodes or text). */
export function element(tag, properties = {}, ...children) {
  const node = document.createElement(tag);
  const { data, ...rest } = properties;
  Object.assign(node, rest);
  if (data) Object.assign(node.dataset, data);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

/** A `<button type="button">` that calls `onClick`. */
export function button(text, onClick, properties = {}) {
  const node = element('button', { type: 'button', ...properties }, text);
  node.addEventListener('click', onClick);
  return node;
}

/** A list row in the muted style saying `text` (an empty list's message). */
export function mutedRow(text) {
  return element('li', { className: 'muted' }, text);
}

/** A span holding `text` as text (for Leaflet, which puts a string tooltip in as HTML). */
export function textElement(text) {
  return element('span', {}, text);
}

/**
 * Keeps `strip`'s buttons those of `items` (`[key, text]`), the one of `active` highlighted: buttons are made again
 * only when the keys change, so a click is never lost to a re-render while events arrive.
 */
export function syncButtons(strip, attribute, items, active, onClick) {
  const keys = items.map(([key]) => key).join('\n');
  if (strip.dataset.keys !== keys) {
    strip.dataset.keys = keys;
    strip.replaceChildren(...items.map(([key]) => {
      const node = element('button', { type: 'button' });
      node.dataset[attribute] = key;
      node.addEventListener('click', () => onClick(key));
      return node;
    }));
  }
  items.forEach(([key, text], index) => {
    const node = strip.children[index];
    node.textContent = text;
    node.classList.toggle('active', key === active);
  });
}
