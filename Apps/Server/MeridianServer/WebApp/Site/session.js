// The signed-in person (GET /v1/me: account, profile, sharing) and their groups (GET /v1/groups), read by the map
// and the sharing page; `me` is null while signed out.
import { t } from './i18n.js';

export const session = { me: null, groups: [] };

/** A group's name: a custom group's own, a standard group's text. */
export function groupName(group) {
  return group.kind === 'custom' ? group.name : t(`groups.${group.kind}`);
}
