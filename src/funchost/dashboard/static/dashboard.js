// funchost dashboard: live updates and confirmations. Plain JavaScript, no build step.
// Every page works without this file; it only saves reloads. The server says *that* something
// changed (server-sent events); the page is fetched again and the regions marked data-live whose
// HTML differs are replaced, keeping the keyboard focus where it was.
(function () {
  "use strict";
  var body = document.body;
  var source = body.getAttribute("data-events");
  var status = document.getElementById("live-status");
  var state = document.getElementById("live-state");
  var busy = false;
  var again = false;

  function focusedId() {
    var active = document.activeElement;
    return active && active.id ? active.id : null;
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var url = new URL(window.location.href);
    url.searchParams.delete("notice");
    fetch(url.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (response.status === 401) { window.location.reload(); return null; }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var keep = focusedId();
        var changed = 0;
        fresh.querySelectorAll("[data-live]").forEach(function (node) {
          var current = document.getElementById(node.id);
          if (current && current.innerHTML !== node.innerHTML) {
            current.replaceWith(document.importNode(node, true));
            changed += 1;
          }
        });
        if (changed && keep && document.getElementById(keep) && document.activeElement === body) {
          document.getElementById(keep).focus();
        }
        if (changed && status) {
          status.textContent = "Updated at " + new Date().toLocaleTimeString();
        }
      })
      .catch(function () { /* the next event tries again */ })
      .finally(function () {
        busy = false;
        if (again) { again = false; window.setTimeout(refresh, 250); }
      });
  }

  if (source && window.EventSource) {
    var events = new EventSource(source);
    events.addEventListener("changed", refresh);
    events.onerror = function () { if (state) { state.textContent = "Live updates paused (reconnecting)."; } };
    events.onopen = function () { if (state) { state.textContent = "Live updates are on."; } };
  }

  // Destructive actions ask first; without script they run at once (the server checks them all).
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });

  // After an action the notice takes the focus, so screen readers read the outcome.
  var notice = document.querySelector("#notices .notice");
  if (notice) { notice.setAttribute("tabindex", "-1"); notice.focus(); }
})();
