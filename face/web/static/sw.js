// The service worker keeps only the app shell (the page, its styles, scripts and icons) so the
// installed app opens when the network does not; it answers from the network first, so a new
// version is used as soon as the Face serves it. The API, the WebSocket and everything else go
// to the network untouched: nothing a conversation holds is ever stored here. Web Push (being
// told of events while no tab is open) needs a push service and is not done here.

const CACHE = "tobe-shell-v1";
const SHELL = ["./", "index.html", "style.css", "manifest.webmanifest", "favicon.svg", "icons/icon.svg"];

self.addEventListener("install", (installing) => {
  installing.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)));
  self.skipWaiting();
});

self.addEventListener("activate", (activating) => {
  activating.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name !== CACHE).map((name) => caches.delete(name))))
      .then(() => self.clients.claim()),
  );
});

function isShell(url) {
  if (url.origin !== self.location.origin) return false;
  const path = url.pathname.slice(new URL(self.registration.scope).pathname.length);
  return path === "" || /^(index\.html|style\.css|manifest\.webmanifest|favicon\.svg|(js|vendor|icons)\/[^?]+)$/.test(path);
}

self.addEventListener("fetch", (fetching) => {
  const request = fetching.request;
  if (request.method !== "GET" || !isShell(new URL(request.url))) return;
  fetching.respondWith(
    fetch(request)
      .then((response) => {
        if (response.ok) {
          const copy = response.clone();
          caches.open(CACHE).then((cache) => cache.put(request, copy));
        }
        return response;
      })
      .catch(() => caches.match(request).then((cached) => cached ?? Response.error())),
  );
});
