// @ts-check
// The project's websocket as a page keeps it (board.js, activity.js, each loaded after this file
// by its templates): open, reconnecting after a close, pinged so that idle proxies keep it.
// The server checks membership when it opens (boards.board.live.consumers).
/* exported liveSocket */

/** Reconnect after 0.5 s, 1 s, 2 s, then every 5 s. */
const RECONNECT_DELAYS = [500, 1000, 2000, 5000];

/**
 * Connects `view`'s websocket (its data-ws-path) and keeps it connected; `view.dataset.live`
 * says whether it is open ("1") or not ("0").
 * @param {HTMLElement} view
 * @param {(text: string, ok: boolean) => void} setStatus the page's live status line
 * @param {(message: any) => void} onMessage each message, parsed
 */
function liveSocket(view, setStatus, onMessage) {
  /** @type {WebSocket | null} */
  let socket = null;
  let retry = 0;

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${window.location.host}${view.dataset.wsPath}`);
    socket.addEventListener("open", () => {
      retry = 0;
      setStatus("live", true);
      view.dataset.live = "1";
    });
    socket.addEventListener("message", (e) => onMessage(JSON.parse(e.data)));
    socket.addEventListener("close", () => {
      view.dataset.live = "0";
      setStatus("reconnecting…", false);
      setTimeout(connect, RECONNECT_DELAYS[Math.min(retry++, RECONNECT_DELAYS.length - 1)]);
    });
  }

  setInterval(() => socket && socket.readyState === 1 && socket.send('{"type":"ping"}'), 30000);
  connect();
}
