// The page's service worker, for alerts only: each alert the server pushes (Web Push, the JSON
// `{title, body, tags, kind, id}` of POST /v1/push/subscriptions) is shown as a notification, one per event (`id` is
// its tag, so a push delivered twice shows once); clicking one opens the page, or brings its tab forward.

self.addEventListener('push', (event) => {
  let alert = {};
  if (event.data) {
    try { alert = event.data.json(); } catch { alert = { body: event.data.text() }; }
  }
  event.waitUntil(self.registration.showNotification(alert.title || 'Meridian', {
    body: alert.body || '',
    tag: alert.id || undefined,
    icon: '/app/icon.svg',
    data: { kind: alert.kind || null, id: alert.id || null },
  }));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((windows) => {
    const page = windows.find((candidate) => new URL(candidate.url).pathname === '/');
    return page ? page.focus() : self.clients.openWindow('/');
  }));
});
