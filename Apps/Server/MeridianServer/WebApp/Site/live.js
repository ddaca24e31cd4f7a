// A `meridian.v1` client (docs/realtime-protocol.md) for the page: hello with the bearer token, subscriptions that
// resume from their last offset after a dropped connection (replay or `reload`), ping every heartbeat, a connection
// that hears nothing for heartbeat + timeout treated as dead, reconnects with jittered exponential backoff, and no
// reconnect after 4001 (the token no longer works).

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 30000;

export class LiveSocket {
  /**
   * @param {() => string} token the bearer token
   * @param {{onEvent, onRevoked, onReload, onState, onSubscribed}} handlers `onEvent(channel, payload)`,
   *   `onRevoked(channel)` (the server withdrew access), `onReload(channel)` (fetch the state over HTTP),
   *   `onState(connected)`, and optionally `onSubscribed(channel)` (the server confirmed a subscription).
   */
  constructor(token, handlers) {
    this.token = token;
    this.handlers = handlers;
    this.channels = new Map(); // channel → {offset, epoch} of the last event processed (null before the first)
    this.socket = null;
    this.attempt = 0;
    this.stopped = false;
    this.timers = [];
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    this.clearTimers();
    if (this.socket) this.socket.close(1000, 'signed out');
    this.socket = null;
    this.channels.clear();
  }

  /** Subscribes to `channel` (again after every reconnect, from the last offset seen). */
  subscribe(channel) {
    if (this.channels.has(channel)) return;
    this.channels.set(channel, null);
    this.send({ type: 'subscribe', channel });
  }

  unsubscribe(channel) {
    if (!this.channels.delete(channel)) return;
    this.send({ type: 'unsubscribe', channel });
  }

  connect() {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
    const socket = new WebSocket(url, 'meridian.v1');
    this.socket = socket;
    socket.onopen = () => {
      const resume = [];
      for (const [channel, position] of this.channels) {
        resume.push(position ? { channel, offset: position.offset, epoch: position.epoch } : { channel });
      }
      socket.send(JSON.stringify({
        type: 'hello', token: this.token(), client: { name: 'meridian-web', version: '1' }, resume,
      }));
    };
    socket.onmessage = (message) => this.receive(socket, message.data);
    socket.onclose = (close) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.clearTimers();
      this.handlers.onState(false);
      if (this.stopped || close.code === 4001) return;
      const limit = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.attempt);
      this.attempt += 1;
      this.timers.push(setTimeout(() => this.connect(), limit / 2 + Math.random() * limit / 2));
    };
  }

  receive(socket, data) {
    this.lastHeard = Date.now();
    let message;
    try { message = JSON.parse(data); } catch { return; }
    switch (message.type) {
      case 'welcome':
        this.attempt = 0;
        this.heartbeat(socket, message.heartbeatMs || 15000, message.heartbeatTimeoutMs || 10000);
        this.handlers.onState(true);
        break;
      case 'subscribed':
        if (this.channels.has(message.channel) && this.channels.get(message.channel) === null) {
          this.channels.set(message.channel, { offset: message.offset, epoch: message.epoch });
        }
        if (this.handlers.onSubscribed) this.handlers.onSubscribed(message.channel);
        break;
      case 'reload':
        if (!this.channels.has(message.channel)) break;
        this.channels.set(message.channel, { offset: message.offset, epoch: message.epoch });
        this.handlers.onReload(message.channel);
        break;
      case 'event': {
        if (!this.channels.has(message.channel)) break;
        const position = this.channels.get(message.channel);
        if (position && message.offset <= position.offset) break; // seen already (a resume race)
        this.channels.set(message.channel, { offset: message.offset, epoch: position ? position.epoch : '' });
        this.handlers.onEvent(message.channel, message.payload);
        break;
      }
      case 'unsubscribed':
        if (message.reason === 'revoked' && this.channels.delete(message.channel)) {
          this.handlers.onRevoked(message.channel);
        }
        break;
      case 'error':
        if (message.code === 'forbidden' && message.channel && this.channels.delete(message.channel)) {
          this.handlers.onRevoked(message.channel);
        }
        break;
      default:
        break; // pong and types of newer servers
    }
  }

  heartbeat(socket, intervalMs, timeoutMs) {
    this.clearTimers();
    this.lastHeard = Date.now();
    this.timers.push(setInterval(() => {
      if (Date.now() - this.lastHeard > intervalMs + timeoutMs) {
        socket.close(4005, 'heartbeat timeout');
        socket.onclose({ code: 4005 });
        return;
      }
      this.send({ type: 'ping' });
    }, intervalMs));
  }

  send(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  clearTimers() {
    for (const timer of this.timers) { clearTimeout(timer); clearInterval(timer); }
    this.timers = [];
  }
}
